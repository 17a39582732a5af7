package openctl

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/seal"
)

// The saved plan file's apiVersion and kind.
const (
	SavedPlanAPIVersion = "openctl.io/v1"
	SavedPlanKind       = "SavedPlan"
)

// DefaultPlanMaxAge is how old a saved plan ApplyPlan accepts when
// ApplyPlanOptions.MaxAge is 0.
const DefaultPlanMaxAge = 24 * time.Hour

// MaxSavedPlanSize is the largest saved plan LoadPlan reads (64 MiB).
const MaxSavedPlanSize = 64 << 20

// planDigestLabel names the key a saved plan's digest is computed with
// (see seal.Keyring.Sum). Part of the file format.
const planDigestLabel = "openctl plan digest v1"

// digestPrefix starts a saved plan's digest.
const digestPrefix = "hmac-sha256:"

// The refusals of ApplyPlan, matched with errors.Is through a
// *PlanRefusedError.
var (
	// ErrPlanModified: the plan's digest does not verify — the file was
	// edited, or it was made with another state store's key.
	ErrPlanModified = errors.New("the saved plan was modified or made with another state key")
	// ErrPlanExpired: the plan is older than ApplyPlanOptions.MaxAge.
	ErrPlanExpired = errors.New("the saved plan is too old")
	// ErrPlanOtherStore: the plan was made against another state store
	// (state.Identified), other provider contexts, or by another build of
	// the program (its compiled-in providers are what a plan's actions
	// depend on, as Terraform's plans depend on its provider versions).
	ErrPlanOtherStore = errors.New("the saved plan was made against another state store, context or program")
	// ErrPlanStale: the state or the live resources changed since the
	// plan was made, so applying now would not do what it says.
	ErrPlanStale = errors.New("the state or the resources changed since the plan was made")
)

// PlanRefusedError reports why ApplyPlan refused a saved plan. Nothing was
// changed. Reason is one of ErrPlanModified, ErrPlanExpired,
// ErrPlanOtherStore and ErrPlanStale, which errors.Is matches; ID is the
// first resource that differs, when the refusal is about one. Its code
// (errcode.Of) is Invalid for a modified plan, Conflict otherwise.
type PlanRefusedError struct {
	Reason error
	ID     manifest.ID
	Detail string
}

// Error says that nothing was changed, names the resource and the first
// difference.
func (e *PlanRefusedError) Error() string {
	var b strings.Builder
	b.WriteString("openctl: saved plan refused, nothing was changed: ")
	b.WriteString(e.Reason.Error())
	if e.ID != (manifest.ID{}) {
		b.WriteString(": " + e.ID.Short())
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	return b.String()
}

// Unwrap returns the reason and the error code.
func (e *PlanRefusedError) Unwrap() []error {
	code := errcode.Conflict
	if e.Reason == ErrPlanModified {
		code = errcode.Invalid
	}
	return []error{e.Reason, code}
}

// PlanProvider is a provider a saved plan's resources route to.
type PlanProvider struct {
	Name string `json:"name"`
	// Context is the provider context the plan was made against, when
	// the caller said (Plan.Contexts); "" otherwise.
	Context string `json:"context,omitempty"`
}

// SavedPlan is a plan read back from a file (LoadPlan), to be shown
// (Plan) or applied exactly (Engine.ApplyPlan). It is immutable once
// loaded and safe for concurrent use.
type SavedPlan struct {
	file    planFile
	plan    *Plan
	created time.Time // file.Created parsed
}

// Plan returns the plan the file holds — changes in execution order,
// waves — for printing (output.PrintPlan). Secret values read
// "[redacted]"; DOT works. The caller must not modify it.
func (sp *SavedPlan) Plan() *Plan { return sp.plan }

// Created returns when the plan was made (UTC).
func (sp *SavedPlan) Created() time.Time { return sp.created }

// StoreID returns the identity of the state store the plan was made
// against ("" for a store without one).
func (sp *SavedPlan) StoreID() string { return sp.file.StoreID }

// Providers returns the providers (and contexts) the plan uses.
func (sp *SavedPlan) Providers() []PlanProvider { return slices.Clone(sp.file.Providers) }

// SavePlan writes p, which this engine's Plan returned, as a saved plan:
// a JSON document with apiVersion openctl.io/v1 and kind SavedPlan
// holding, per resource in execution order, the manifest as planned
// (composite children included, $refs unresolved), the planned action,
// reasons and changed fields (secrets "[redacted]"), its $ref targets and
// the resources it runs after, and what the plan read: the state record's
// generation and lineage (or "absent") and whether it existed live; then
// the state store's identity, the providers and contexts (Plan.Contexts),
// the creation time, and a digest.
//
// Secret spec fields (registry.Kind.SecretFields) are never written in
// clear: they are sealed with the state store's own data key (state.Sealer,
// see package seal), bound to the resource. The digest is
// "hmac-sha256:" and the hex HMAC-SHA256 of the document's canonical JSON
// (digest empty) under a key derived from that data key (seal.Keyring.Sum,
// label "openctl plan digest v1"). Only a holder of the state passphrase can
// compute it: an edit to any field — an action, a spec value, a recorded
// generation — is detected by ApplyPlan even if the editor recomputes any
// plain checksum, and a plan made against another store does not verify.
// It does not hide the plan's content (everything but the secrets is
// readable) and does not stop someone who has the passphrase.
//
// Saving therefore needs the store's key: a store that is not a
// state.Sealer, or one whose passphrase is missing (a state.Memory without
// OPENCTL_STATE_PASSPHRASE or MemoryPassphrase), is refused with an error
// saying so, as is a plan from another engine or store. The plan is
// written with one call to w.Write.
func (e *Engine) SavePlan(ctx context.Context, p *Plan, w io.Writer) error {
	if p == nil || p.made == nil {
		return errcode.New(errcode.Invalid, "openctl: save plan: only a plan that Engine.Plan made can be saved")
	}
	idCtx, err := e.identify(ctx)
	if err != nil {
		return err
	}
	if id := registry.CallOf(idCtx).Owner; id != p.made.storeID {
		return errcode.New(errcode.Invalid, fmt.Sprintf("openctl: save plan: the plan was made against state store %q, this engine's is %q", p.made.storeID, id))
	}
	ring, err := e.keyring(ctx, "save plan")
	if err != nil {
		return err
	}
	f := planFile{APIVersion: SavedPlanAPIVersion, Kind: SavedPlanKind, Created: time.Now().UTC().Format(time.RFC3339Nano), Program: program(), StoreID: p.made.storeID}
	provs := map[string]bool{}
	for _, c := range p.Changes {
		k := c.ID.String()
		n := p.made.nodes[k]
		if n == nil {
			return errcode.New(errcode.Internal, "openctl: save plan: "+c.ID.Short()+" has no resource (an openctl bug)")
		}
		provs[n.prov.Name()] = true
		res := n.res.DeepCopy()
		res.Status = nil
		res.Source = manifest.Source{}
		spec, secrets := splitSecrets(n.kind.SecretFields, "spec.", res.Spec)
		res.Spec = spec
		sealed, err := ring.Seal(n.id, secrets)
		if err != nil {
			return fmt.Errorf("openctl: save plan: sealing the secrets of %s: %w", n.id.Short(), err)
		}
		seen := p.made.seen[k]
		pr := planResource{
			Manifest: res, Sealed: sealed,
			Action: c.Action, Reasons: c.Reasons, Fields: c.Fields,
			DependsOn: c.DependsOn, Owner: c.Owner, Children: n.children,
			Record: planRecord{State: presence(seen.recorded), Generation: seen.generation, Lineage: seen.lineage},
			Live:   presence(seen.live),
		}
		for _, d := range p.g.Deps(k) {
			pr.After = append(pr.After, p.made.nodes[d].id)
		}
		if c.Source.File != "" {
			pr.Source = &planSource{File: c.Source.File, Line: c.Source.Line, Index: c.Source.Index}
		}
		f.Resources = append(f.Resources, pr)
	}
	for _, name := range slices.Sorted(maps.Keys(provs)) {
		f.Providers = append(f.Providers, PlanProvider{Name: name, Context: p.Contexts[name]})
	}
	// Digest what a reader will decode, so that both sides hash the same
	// values (numbers as written, secrets as "[redacted]").
	raw, err := json.Marshal(f)
	if err != nil {
		return errcode.Wrap(errcode.Internal, "openctl: save plan: encoding", err)
	}
	decoded, err := decodePlan(raw)
	if err != nil {
		return errcode.Wrap(errcode.Internal, "openctl: save plan: the plan does not read back (an openctl bug)", err)
	}
	if decoded.Digest, err = planDigest(ring, decoded); err != nil {
		return err
	}
	out, err := json.MarshalIndent(decoded, "", "  ")
	if err != nil {
		return errcode.Wrap(errcode.Internal, "openctl: save plan: encoding", err)
	}
	if _, err := w.Write(append(out, '\n')); err != nil {
		return fmt.Errorf("openctl: save plan: %w", err)
	}
	return nil
}

// keyring returns the state store's unlocked data key, for op.
func (e *Engine) keyring(ctx context.Context, op string) (*seal.Keyring, error) {
	s, ok := e.store.(state.Sealer)
	if !ok {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("openctl: %s: the state store (%T) has no key to seal secrets and sign saved plans with (it is not a state.Sealer)", op, e.store))
	}
	ring, err := s.Keyring(ctx)
	if err != nil {
		return nil, fmt.Errorf("openctl: %s: a saved plan is sealed and signed with the state store's key: %w", op, &StateError{Op: "unlock", Err: err})
	}
	return ring, nil
}

// LoadPlan reads a saved plan (see SavePlan) from r, strictly: the JSON
// must have exactly the saved plan's fields, apiVersion openctl.io/v1 and
// kind SavedPlan, valid manifests and IDs, known actions, and a graph
// without cycles; an error names the field (errcode.Invalid). LoadPlan
// reads no state and contacts no provider, and it does not verify the
// digest — ApplyPlan does, with the state store's key — so a loaded plan
// may be shown without the passphrase but must not be trusted before
// ApplyPlan accepted it.
func (e *Engine) LoadPlan(ctx context.Context, r io.Reader) (*SavedPlan, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxSavedPlanSize+1))
	if err != nil {
		return nil, fmt.Errorf("openctl: load plan: %w", err)
	}
	if len(data) > MaxSavedPlanSize {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("openctl: load plan: larger than %d MiB", MaxSavedPlanSize>>20))
	}
	f, err := decodePlan(data)
	if err != nil {
		return nil, err
	}
	p, err := f.plan()
	if err != nil {
		return nil, err
	}
	created, _ := time.Parse(time.RFC3339Nano, f.Created) // checked by decodePlan
	return &SavedPlan{file: *f, plan: p, created: created.UTC()}, nil
}

// ApplyPlanOptions tune ApplyPlan.
type ApplyPlanOptions struct {
	// MaxAge is how old the plan may be: 0 means DefaultPlanMaxAge (24h),
	// a negative value no limit.
	MaxAge time.Duration
	// Contexts, when not nil, are the provider contexts this engine's
	// providers use, by provider name: a plan that recorded another
	// context for a provider (Plan.Contexts) is refused
	// (ErrPlanOtherStore).
	Contexts map[string]string
	// Now returns the current time; nil means time.Now. For tests.
	Now func() time.Time
}

// ApplyPlan applies exactly what a saved plan says, reading no manifest:
// the resources planned as create, update, replace or delete, in the
// plan's dependency order ($refs resolved from live values as Apply
// does); resources planned as no-op are not touched and get no Result.
//
// After taking the state lock, and before any change, it refuses — with a
// *PlanRefusedError naming the first difference — a plan
//
//   - made against another state store (state.Identified) or, with
//     opts.Contexts, other provider contexts: ErrPlanOtherStore;
//   - whose digest does not verify with this store's key (the file was
//     edited): ErrPlanModified;
//   - older than opts.MaxAge: ErrPlanExpired;
//   - whose world moved (ErrPlanStale): a resource's state record has
//     another generation or lineage than the plan read, or is there
//     where the plan read none or gone where it read one; a resource
//     exists live where the plan found none or is gone where it found
//     one; or planning again now — the same code as Plan, the provider's
//     Diff included — gives a resource another action or other changed
//     fields than the plan says.
//
// It then checks the preconditions Apply checks (secrets can be sealed,
// $ref targets outside the plan exist, providers answer) and runs the
// changes as Apply does. The Report and error are Apply's.
func (e *Engine) ApplyPlan(ctx context.Context, sp *SavedPlan, opts ApplyPlanOptions) (*Report, error) {
	if sp == nil || sp.plan == nil {
		return nil, errcode.New(errcode.Invalid, "openctl: apply plan: no saved plan (use LoadPlan)")
	}
	unlock, err := e.lock(ctx, "apply")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if ctx, err = e.identify(ctx); err != nil {
		return nil, err
	}
	ring, err := e.verifyPlan(ctx, sp, opts)
	if err != nil {
		return nil, err
	}
	s, err := e.buildSaved(ctx, sp, ring)
	if err != nil {
		return nil, err
	}
	if err := e.checkSealing(ctx, s); err != nil {
		return nil, err
	}
	if err := e.checkRefs(ctx, s); err != nil {
		return nil, err
	}
	fresh, err := e.planSet(ctx, s)
	if err != nil {
		return nil, err
	}
	if err := compareSaved(sp, fresh); err != nil {
		return nil, err
	}
	rs := changedSet(s, fresh)
	if err := e.pingProviders(ctx, rs); err != nil {
		return nil, err
	}
	return e.run(ctx, rs)
}

// verifyPlan checks sp's store identity, contexts, digest and age, and
// returns the store's key.
func (e *Engine) verifyPlan(ctx context.Context, sp *SavedPlan, opts ApplyPlanOptions) (*seal.Keyring, error) {
	f := &sp.file
	if cur := program(); f.Program != cur {
		return nil, &PlanRefusedError{Reason: ErrPlanOtherStore, Detail: fmt.Sprintf("it was made by %s, this is %s: its providers may plan differently; plan again with this program", f.Program, cur)}
	}
	if id := registry.CallOf(ctx).Owner; id != f.StoreID {
		return nil, &PlanRefusedError{Reason: ErrPlanOtherStore, Detail: fmt.Sprintf("it was made against state store %q, this is %q", f.StoreID, id)}
	}
	if opts.Contexts != nil {
		for _, p := range f.Providers {
			if p.Context != "" && opts.Contexts[p.Name] != p.Context {
				return nil, &PlanRefusedError{Reason: ErrPlanOtherStore, Detail: fmt.Sprintf("provider %s: it was made against context %q, this is %q", p.Name, p.Context, opts.Contexts[p.Name])}
			}
		}
	}
	ring, err := e.keyring(ctx, "apply plan")
	if err != nil {
		return nil, err
	}
	want, err := planDigest(ring, f)
	if err != nil {
		return nil, err
	}
	if f.Digest == "" || !hmac.Equal([]byte(want), []byte(f.Digest)) {
		return nil, &PlanRefusedError{Reason: ErrPlanModified, Detail: "its digest does not verify with this state store's key (the file was edited after it was saved, or saved with another store)"}
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	maxAge := opts.MaxAge
	if maxAge == 0 {
		maxAge = DefaultPlanMaxAge
	}
	age := now().Sub(sp.created)
	if maxAge > 0 && age > maxAge {
		return nil, &PlanRefusedError{Reason: ErrPlanExpired, Detail: fmt.Sprintf("it was made %s ago (at %s), the limit is %s: plan again", age.Round(time.Second), sp.created.Format(time.RFC3339), maxAge)}
	}
	if age < -time.Minute {
		return nil, &PlanRefusedError{Reason: ErrPlanExpired, Detail: fmt.Sprintf("it was made in the future (%s): check the clocks", sp.created.Format(time.RFC3339))}
	}
	return ring, nil
}

// buildSaved makes the set of a verified saved plan: its resources (secret
// spec fields opened) routed to their providers, its graph as saved.
func (e *Engine) buildSaved(ctx context.Context, sp *SavedPlan, ring *seal.Keyring) (*set, error) {
	s := newSet()
	var errs []error
	for _, r := range sp.file.Resources {
		res := r.Manifest.DeepCopy()
		id := res.ID()
		if r.Source != nil {
			res.Source = manifest.Source{File: r.Source.File, Line: r.Source.Line, Index: r.Source.Index}
		}
		p, kind, err := e.reg.Lookup(id)
		if err != nil {
			errs = append(errs, wrapf(err, "apply plan: %s", id.Short()))
			continue
		}
		if kind.ReadOnly {
			errs = append(errs, errcode.New(errcode.Invalid, fmt.Sprintf("openctl: apply plan: %s: kind %s is read-only", id.Short(), id.Kind)))
			continue
		}
		secrets, err := ring.Open(id, r.Sealed)
		if err != nil {
			errs = append(errs, wrapf(err, "apply plan: %s", id.Short()))
			continue
		}
		for _, path := range slices.Sorted(maps.Keys(secrets)) {
			rest, ok := strings.CutPrefix(path, "spec.")
			if !ok || !slices.Contains(kind.SecretFields, path) {
				errs = append(errs, errcode.New(errcode.Invalid, fmt.Sprintf("openctl: apply plan: %s: sealed value for %s, which is not a secret spec field of kind %s", id.Short(), path, id.Kind)))
				continue
			}
			if res.Spec == nil {
				res.Spec = map[string]any{}
			}
			if err := manifest.SetField(res.Spec, rest, secrets[path].Reveal()); err != nil {
				errs = append(errs, wrapf(err, "apply plan: %s: %s", id.Short(), path))
			}
		}
		n := &node{id: id, key: id.String(), res: res, prov: p, kind: kind, owner: r.Owner,
			children: slices.Clone(r.Children), del: r.Action == ActionDelete}
		if n.del {
			if deps, err := refs.Dependencies(res); err == nil {
				n.deps = deps
			}
		} else {
			if v, ok := p.(registry.Validator); ok {
				if err := e.safe("validate", id, func() error { return v.Validate(ctx, res) }); err != nil {
					errs = append(errs, wrapf(err, "apply plan: %s", id.Short()))
					continue
				}
			}
			rs, err := refs.Collect(res)
			if err != nil {
				errs = append(errs, wrapf(err, "apply plan: %s", id.Short()))
				continue
			}
			n.refs, n.deps = rs, targets(rs)
		}
		s.nodes[n.key] = n
		s.g.AddNode(n.key)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, r := range sp.file.Resources {
		for _, d := range r.After {
			s.g.AddEdge(d.String(), r.Manifest.ID().String())
		}
	}
	if err := s.g.Validate(); err != nil {
		return nil, fmt.Errorf("openctl: apply plan: %w", err)
	}
	return s, nil
}

// compareSaved refuses sp when planning again (fresh) read or decided
// anything else, naming the first difference in execution order.
func compareSaved(sp *SavedPlan, fresh *Plan) error {
	for _, r := range sp.file.Resources {
		id := r.Manifest.ID()
		k := id.String()
		now := fresh.made.seen[k]
		then := observed{recorded: r.Record.State == present, generation: r.Record.Generation, lineage: r.Record.Lineage, live: r.Live == present}
		recThen, liveThen := then.describe()
		recNow, liveNow := now.describe()
		switch {
		case now.recorded != then.recorded || now.generation != then.generation || now.lineage != then.lineage:
			return &PlanRefusedError{Reason: ErrPlanStale, ID: id, Detail: fmt.Sprintf("the plan read %s, the state now has %s: plan again", recThen, recNow)}
		case now.live != then.live:
			return &PlanRefusedError{Reason: ErrPlanStale, ID: id, Detail: fmt.Sprintf("the plan found it %s, it is now %s: plan again", liveThen, liveNow)}
		}
		c := fresh.byKey[k]
		if c.Action != r.Action {
			why := ""
			if len(c.Reasons) > 0 {
				why = " (" + strings.Join(c.Reasons, "; ") + ")"
			}
			return &PlanRefusedError{Reason: ErrPlanStale, ID: id, Detail: fmt.Sprintf("the plan says %s, planning now says %s%s: plan again", r.Action, c.Action, why)}
		}
		if a, b := canonical(r.Fields), canonical(c.Fields); a != b {
			return &PlanRefusedError{Reason: ErrPlanStale, ID: id, Detail: fmt.Sprintf("the changed fields differ: the plan says %s, planning now says %s: plan again", a, b)}
		}
	}
	return nil
}

// canonical renders field changes as canonical JSON (numbers as JSON
// writes them, secrets as "[redacted]"), "[]" for none.
func canonical(fs []manifest.FieldChange) string {
	if len(fs) == 0 {
		return "[]"
	}
	raw, err := json.Marshal(fs)
	if err != nil {
		return fmt.Sprintf("(unencodable: %v)", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// changedSet returns the set of s's nodes that p plans to change, ordered
// as in s: a changed node runs after every changed node it came after in
// s, directly or through unchanged ones.
func changedSet(s *set, p *Plan) *set {
	out := newSet()
	changed := func(k string) bool { c := p.byKey[k]; return c != nil && c.Action != ActionNoOp }
	keys := slices.Sorted(maps.Keys(s.nodes))
	for _, k := range keys {
		if changed(k) {
			out.nodes[k] = s.nodes[k]
			out.g.AddNode(k)
		}
	}
	for _, k := range keys {
		if !changed(k) {
			continue
		}
		visited := map[string]bool{}
		stack := s.g.Deps(k)
		for len(stack) > 0 {
			d := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if visited[d] {
				continue
			}
			visited[d] = true
			if changed(d) {
				out.g.AddEdge(d, k)
				continue
			}
			stack = append(stack, s.g.Deps(d)...)
		}
	}
	return out
}

// program names the running program for a saved plan: its main module's
// path and version, with the VCS revision when the build recorded one
// ("github.com/openctl/openctl@v1.2.0 (abc123)"). Its compiled-in
// providers are part of it.
func program() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	s := bi.Main.Path + "@" + bi.Main.Version
	var rev, modified string
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.modified":
			if kv.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if rev != "" {
		s += " (" + rev + modified + ")"
	}
	return s
}
