package openctl

// The saved plan's file format: what SavePlan writes and LoadPlan reads
// back, checked field by field, and its digest. The public API is in
// savedplan.go.

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/graph"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/seal"
)

// planFile is a saved plan as written: JSON, every field below. See
// SavePlan.
type planFile struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Created    string         `json:"created"` // RFC 3339, UTC
	Program    string         `json:"program"` // the program that made it: module@version (revision)
	StoreID    string         `json:"storeID"`
	Providers  []PlanProvider `json:"providers"`
	Resources  []planResource `json:"resources"`
	Digest     string         `json:"digest"`
}

// planResource is one resource of a saved plan.
type planResource struct {
	// Manifest is the resource as planned: a composite's children
	// included, $ref markers unresolved, no status, the kind's secret
	// spec fields removed (they are in Sealed).
	Manifest *manifest.Resource     `json:"manifest"`
	Sealed   *seal.Sealed           `json:"sealed,omitempty"`
	Action   Action                 `json:"action"`
	Reasons  []string               `json:"reasons,omitempty"`
	Fields   []manifest.FieldChange `json:"fields,omitempty"`
	// DependsOn are the $ref targets; After the resources that run
	// before this one (the plan's graph).
	DependsOn []manifest.ID `json:"dependsOn,omitempty"`
	After     []manifest.ID `json:"after,omitempty"`
	Owner     *manifest.ID  `json:"owner,omitempty"`
	Children  []manifest.ID `json:"children,omitempty"`
	Source    *planSource   `json:"source,omitempty"`
	// Record and Live are what the plan read: the state record's version
	// ("present" with generation and lineage, or "absent") and whether
	// the resource existed.
	Record planRecord `json:"record"`
	Live   string     `json:"live"`
}

type planSource struct {
	File  string `json:"file"`
	Line  int    `json:"line,omitempty"`
	Index int    `json:"index,omitempty"`
}

type planRecord struct {
	State      string `json:"state"`
	Generation int64  `json:"generation,omitempty"`
	Lineage    string `json:"lineage,omitempty"`
}

const (
	present = "present"
	absent  = "absent"
)

func presence(b bool) string {
	if b {
		return present
	}
	return absent
}

// planDigest returns f's digest: see SavePlan.
func planDigest(ring *seal.Keyring, f *planFile) (string, error) {
	c := *f
	c.Digest = ""
	msg, err := json.Marshal(&c)
	if err != nil {
		return "", errcode.Wrap(errcode.Internal, "openctl: plan digest", err)
	}
	return digestPrefix + hex.EncodeToString(ring.Sum(planDigestLabel, msg)), nil
}

// planErr is LoadPlan's error for a field.
func planErr(field, format string, args ...any) error {
	return errcode.New(errcode.Invalid, "openctl: load plan: "+field+": "+fmt.Sprintf(format, args...))
}

// decodePlan decodes and checks a saved plan's JSON.
func decodePlan(data []byte) (*planFile, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var f planFile
	if err := dec.Decode(&f); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, planErr(te.Field, "cannot hold a JSON %s", te.Value)
		}
		return nil, errcode.Wrap(errcode.Invalid, "openctl: load plan: not a saved plan (JSON)", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errcode.New(errcode.Invalid, "openctl: load plan: data after the saved plan")
	}
	if f.APIVersion != SavedPlanAPIVersion {
		return nil, planErr("apiVersion", "%q: want %s", f.APIVersion, SavedPlanAPIVersion)
	}
	if f.Kind != SavedPlanKind {
		return nil, planErr("kind", "%q: want %s", f.Kind, SavedPlanKind)
	}
	if t, err := time.Parse(time.RFC3339Nano, f.Created); err != nil || t.IsZero() {
		return nil, planErr("created", "%q: want an RFC 3339 time", f.Created)
	}
	if f.StoreID != "" && !state.ValidStoreID(f.StoreID) {
		return nil, planErr("storeID", "%q is not a store identity", f.StoreID)
	}
	if f.Digest != "" {
		h, ok := strings.CutPrefix(f.Digest, digestPrefix)
		if b, err := hex.DecodeString(h); !ok || err != nil || len(b) != 32 {
			return nil, planErr("digest", "want %s and 64 hex digits", digestPrefix)
		}
	}
	for i, p := range f.Providers {
		if p.Name == "" {
			return nil, planErr(fmt.Sprintf("providers[%d].name", i), "missing")
		}
	}
	seen := map[manifest.ID]bool{}
	for i, r := range f.Resources {
		at := fmt.Sprintf("resources[%d]", i)
		if r.Manifest == nil {
			return nil, planErr(at+".manifest", "missing")
		}
		spec, err := manifest.NormalizeMap(r.Manifest.Spec)
		if err != nil {
			return nil, planErr(at+".manifest.spec", "%v", err)
		}
		r.Manifest.Spec = spec
		if err := manifest.Validate(r.Manifest); err != nil {
			return nil, planErr(at+".manifest", "%v", err)
		}
		if len(r.Manifest.Status) > 0 {
			return nil, planErr(at+".manifest.status", "a saved plan holds no status")
		}
		id := r.Manifest.ID()
		if seen[id] {
			return nil, planErr(at+".manifest", "%s appears twice", id.Short())
		}
		seen[id] = true
		switch r.Action {
		case ActionCreate, ActionUpdate, ActionReplace, ActionNoOp, ActionDelete:
		default:
			return nil, planErr(at+".action", "%q: want create, update, replace, no-op or delete", r.Action)
		}
		switch {
		case r.Record.State == absent && r.Record.Generation == 0 && r.Record.Lineage == "":
		case r.Record.State == present && r.Record.Generation > 0 && r.Record.Lineage != "":
		default:
			return nil, planErr(at+".record", "want state absent, or state present with a positive generation and a lineage")
		}
		if r.Live != present && r.Live != absent {
			return nil, planErr(at+".live", "%q: want present or absent", r.Live)
		}
		if r.Sealed != nil && (r.Sealed.Ciphertext == "" || r.Sealed.MAC == "") {
			return nil, planErr(at+".sealed", "want ciphertext and mac")
		}
		if r.Source != nil && (r.Source.File == "" || r.Source.Line < 0 || r.Source.Index < 0) {
			return nil, planErr(at+".source", "want a file and a line")
		}
		for j, f := range r.Fields {
			if f.Path == "" {
				return nil, planErr(fmt.Sprintf("%s.fields[%d].path", at, j), "missing")
			}
		}
	}
	for i, r := range f.Resources {
		at := fmt.Sprintf("resources[%d]", i)
		check := func(field string, ids []manifest.ID, inPlan bool) error {
			for j, d := range ids {
				if err := d.Validate(); err != nil {
					return planErr(fmt.Sprintf("%s.%s[%d]", at, field, j), "%v", err)
				}
				if inPlan && !seen[d] {
					return planErr(fmt.Sprintf("%s.%s[%d]", at, field, j), "%s is not a resource of the plan", d.Short())
				}
			}
			return nil
		}
		if err := check("dependsOn", r.DependsOn, false); err != nil {
			return nil, err
		}
		if err := check("after", r.After, true); err != nil {
			return nil, err
		}
		if err := check("children", r.Children, false); err != nil {
			return nil, err
		}
		if r.Owner != nil {
			if err := check("owner", []manifest.ID{*r.Owner}, false); err != nil {
				return nil, err
			}
		}
	}
	return &f, nil
}

// plan rebuilds the Plan f holds.
func (f *planFile) plan() (*Plan, error) {
	p := &Plan{g: graph.New[string](), byKey: map[string]*Change{}}
	byKey := map[string]manifest.ID{}
	for _, r := range f.Resources {
		id := r.Manifest.ID()
		byKey[id.String()] = id
		p.g.AddNode(id.String())
	}
	for _, r := range f.Resources {
		for _, d := range r.After {
			p.g.AddEdge(d.String(), r.Manifest.ID().String())
		}
	}
	if err := p.g.Validate(); err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "openctl: load plan: resources[].after", err)
	}
	p.Changes = make([]Change, len(f.Resources))
	for i, r := range f.Resources {
		c := Change{ID: r.Manifest.ID(), Action: r.Action, Reasons: slices.Clone(r.Reasons), Fields: slices.Clone(r.Fields),
			DependsOn: slices.Clone(r.DependsOn), Owner: r.Owner}
		if r.Source != nil {
			c.Source = manifest.Source{File: r.Source.File, Line: r.Source.Line, Index: r.Source.Index}
		}
		p.Changes[i] = c
		p.byKey[c.ID.String()] = &p.Changes[i]
	}
	waves, err := p.g.Waves()
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "openctl: load plan", err)
	}
	for _, w := range waves {
		ids := make([]manifest.ID, len(w))
		for i, k := range w {
			ids[i] = byKey[k]
		}
		p.Waves = append(p.Waves, ids)
	}
	for _, pp := range f.Providers {
		if pp.Context != "" {
			if p.Contexts == nil {
				p.Contexts = map[string]string{}
			}
			p.Contexts[pp.Name] = pp.Context
		}
	}
	return p, nil
}
