package output

import (
	"bytes"
	_ "embed" // the JSON Schema of the plan report
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
)

// The apiVersion and kind of a [PlanReport].
const (
	PlanReportAPIVersion = "openctl.io/v1"
	PlanReportKind       = "PlanReport"
)

// PlanReportSchemaID is the $id of the JSON Schema of a [PlanReport]
// (output/schema/plan-report-v1.json in the repository).
const PlanReportSchemaID = "https://openctl.io/schemas/plan-report-v1.json"

//go:embed schema/plan-report-v1.json
var planReportSchema []byte

// PlanReportSchema returns the JSON Schema (draft 2020-12) that every
// document [WritePlanJSON] writes validates against. The caller may
// modify the returned slice.
func PlanReportSchema() []byte { return slices.Clone(planReportSchema) }

// PlanReport is the machine-readable form of a plan, as "openctl plan -o
// json" prints it: version openctl.io/v1 of the schema documented in the
// package documentation and in [PlanReportSchema]. Decoding a document
// into it with encoding/json gives back what [NewPlanReport] built.
type PlanReport struct {
	APIVersion string `json:"apiVersion"` // PlanReportAPIVersion
	Kind       string `json:"kind"`       // PlanReportKind
	// HasChanges is whether applying would change anything: any resource
	// whose action is not "no-op".
	HasChanges bool        `json:"hasChanges"`
	Summary    PlanSummary `json:"summary"`
	// Waves are the execution waves, first to last: the resources of one
	// wave run in parallel once the previous waves are done.
	Waves [][]manifest.ID `json:"waves"`
	// Resources are the planned resources in execution order.
	Resources []PlanResource `json:"resources"`
}

// PlanSummary counts the resources of a plan by action.
type PlanSummary struct {
	Create  int `json:"create"`
	Update  int `json:"update"`
	Replace int `json:"replace"`
	Delete  int `json:"delete"`
	NoOp    int `json:"noop"` // action "no-op"
}

// PlanResource is the plan for one resource.
type PlanResource struct {
	ID manifest.ID `json:"id"`
	// Action is "create", "update", "replace", "delete" or "no-op".
	Action  openctl.Action `json:"action"`
	Reasons []string       `json:"reasons"`
	// Wave is the 1-based number of the wave the resource runs in; 0
	// (left out of the JSON) when the plan has no wave holding it.
	Wave int `json:"wave,omitempty"`
	// Owner is the composite that planned the resource, if any.
	Owner *manifest.ID `json:"owner,omitempty"`
	// DependsOn lists the resources whose values this one takes ($ref).
	DependsOn []manifest.ID `json:"dependsOn"`
	// Source is where the resource's manifest was read, when known.
	Source *PlanSource `json:"source,omitempty"`
	Fields []PlanField `json:"fields"`
}

// PlanSource is the manifest file and line of a resource.
type PlanSource struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
}

// The operations of a [PlanField].
const (
	FieldAdd    = "add"
	FieldRemove = "remove"
	FieldChange = "change"
)

// PlanField is one changed field. Old is left out for an added field and
// New for a removed one; both are JSON values (null included), with every
// secret replaced by the string "[redacted]".
type PlanField struct {
	Path string          `json:"path"`
	Op   string          `json:"op"` // FieldAdd, FieldRemove or FieldChange
	Old  json.RawMessage `json:"old,omitempty"`
	New  json.RawMessage `json:"new,omitempty"`
}

// NewPlanReport returns the report of p. Secrets are redacted as in
// [WritePlan]: every secret.Secret value, however deeply nested in a
// field's value, the values of fields whose path names a secret
// ("password", "passphrase", "secret", "token") and the values of map
// keys named so read "[redacted]".
//
// A nil plan, a change with an action the schema does not know and a
// value JSON cannot hold (NaN, a channel) are [errcode.Invalid] errors.
func NewPlanReport(p *openctl.Plan) (*PlanReport, error) {
	if p == nil {
		return nil, errcode.New(errcode.Invalid, "output: plan is nil")
	}
	r := &PlanReport{
		APIVersion: PlanReportAPIVersion,
		Kind:       PlanReportKind,
		HasChanges: p.HasChanges(),
		Waves:      make([][]manifest.ID, len(p.Waves)),
		Resources:  make([]PlanResource, 0, len(p.Changes)),
	}
	wave := waveNumbers(p)
	for i, w := range p.Waves {
		r.Waves[i] = append([]manifest.ID{}, w...)
	}
	for _, c := range p.Changes {
		switch c.Action {
		case openctl.ActionCreate:
			r.Summary.Create++
		case openctl.ActionUpdate:
			r.Summary.Update++
		case openctl.ActionReplace:
			r.Summary.Replace++
		case openctl.ActionDelete:
			r.Summary.Delete++
		case openctl.ActionNoOp:
			r.Summary.NoOp++
		default:
			return nil, errcode.New(errcode.Invalid, fmt.Sprintf("output: %s: action %q is not in schema %s", c.ID.Short(), c.Action, PlanReportAPIVersion))
		}
		res := PlanResource{
			ID:        c.ID,
			Action:    c.Action,
			Reasons:   append([]string{}, c.Reasons...),
			Wave:      wave[c.ID],
			DependsOn: append([]manifest.ID{}, c.DependsOn...),
			Fields:    make([]PlanField, 0, len(c.Fields)),
		}
		if c.Owner != nil {
			o := *c.Owner
			res.Owner = &o
		}
		if c.Source.File != "" {
			res.Source = &PlanSource{File: c.Source.File, Line: c.Source.Line}
		}
		for _, f := range c.Fields {
			pf := PlanField{Path: f.Path, Op: FieldChange}
			var err error
			switch {
			case f.Added:
				pf.Op = FieldAdd
				pf.New, err = jsonValue(f.Path, f.New)
			case f.Removed:
				pf.Op = FieldRemove
				pf.Old, err = jsonValue(f.Path, f.Old)
			default:
				if pf.Old, err = jsonValue(f.Path, f.Old); err == nil {
					pf.New, err = jsonValue(f.Path, f.New)
				}
			}
			if err != nil {
				return nil, errcode.Wrap(errcode.Invalid, "", fmt.Errorf("output: %s: field %s: %w", c.ID.Short(), f.Path, err))
			}
			res.Fields = append(res.Fields, pf)
		}
		r.Resources = append(r.Resources, res)
	}
	return r, nil
}

// jsonValue encodes the value of the field at path, secrets redacted.
func jsonValue(path string, v any) (json.RawMessage, error) {
	if sensitive(path) {
		v = secret.Redacted
	} else {
		v = redactSensitive(redactValue(v))
	}
	return marshal(v, "")
}

// marshal encodes v as JSON without HTML escaping ("<" stays "<"),
// indented with indent when it is not empty, with no trailing newline.
func marshal(v any, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// WritePlanJSON writes the [PlanReport] of p as one JSON document
// indented by two spaces, followed by a newline, with one call to w.Write.
// Keys come in a fixed order (that of the PlanReport fields; map keys of
// field values sorted), so the same plan always gives the same bytes.
// Errors are those of [NewPlanReport]; nothing is written then.
func WritePlanJSON(w io.Writer, p *openctl.Plan) error {
	r, err := NewPlanReport(p)
	if err != nil {
		return err
	}
	b, err := marshal(r, "  ")
	if err != nil {
		return errcode.Wrap(errcode.Invalid, "", fmt.Errorf("output: plan report: %w", err))
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("output: print plan: %w", err)
	}
	return nil
}
