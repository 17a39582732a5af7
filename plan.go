package openctl

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/graph"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

// Action is what applying a manifest would do to its resource.
type Action string

// The plan actions.
const (
	ActionCreate  Action = "create"
	ActionUpdate  Action = "update"
	ActionReplace Action = "replace"
	ActionNoOp    Action = "no-op"
	// ActionDelete: a composite's child that its Plan no longer produces.
	ActionDelete Action = "delete"
)

// Change is the plan for one resource.
type Change struct {
	ID     manifest.ID
	Action Action
	// Fields are the changed spec fields, when known: as written in the
	// manifest against the spec recorded in state (or the provider's own
	// diff when it implements registry.Differ). A create has what its
	// provider chose that the manifest left open (registry.Placer: a VM's
	// node). A no-op has none. The
	// values of the kind's secret fields (registry.Kind.SecretFields) are
	// secret.Secret values, which print as "[redacted]": a Plan never
	// holds a secret in clear.
	Fields []manifest.FieldChange
	// Reasons explain the action ("does not exist", "values from
	// VirtualMachine/db are known only after apply", "VirtualMachine/db
	// does not report status.sshHostKey yet: …" for a field its kind
	// declares that apply would wait for, a provider's reason for a
	// replace).
	Reasons []string
	// DependsOn lists the resources this one's $refs point at, sorted.
	DependsOn []manifest.ID
	// Owner is the composite that planned this resource, if any.
	Owner  *manifest.ID
	Source manifest.Source
}

// Plan is what an Apply of the same manifests would do: a Change per
// resource in execution order, and the execution waves (resources in one
// wave can run in parallel once the previous waves are done).
type Plan struct {
	Changes []Change
	Waves   [][]manifest.ID
	// Contexts names, by provider, the provider context the plan was
	// made against, when the caller knows it (the CLI sets it from its
	// configuration). SavePlan records it; ApplyPlanOptions.Contexts
	// checks it.
	Contexts map[string]string
	g        *graph.Graph[string]
	byKey    map[string]*Change
	// made is what Engine.Plan saw, for SavePlan; nil for a plan that
	// Engine.Plan did not make (a Drift, a loaded SavedPlan's).
	made *planInputs
}

// planInputs is what a plan was computed from: its resources and what it
// read of each.
type planInputs struct {
	storeID string // the state store's identity; "" when it has none
	nodes   map[string]*node
	seen    map[string]observed // by graph key
}

// observed is what a plan read of one resource: its state record's
// version, and whether it existed live.
type observed struct {
	recorded   bool
	generation int64
	lineage    string
	live       bool
}

// describe renders o for messages.
func (o observed) describe() (rec, live string) {
	rec = "no state record"
	if o.recorded {
		rec = fmt.Sprintf("state record generation %d, lineage %s", o.generation, o.lineage)
	}
	live = "absent live"
	if o.live {
		live = "present live"
	}
	return rec, live
}

// HasChanges reports whether applying would change anything.
func (p *Plan) HasChanges() bool {
	for _, c := range p.Changes {
		if c.Action != ActionNoOp {
			return true
		}
	}
	return false
}

// Change returns the change planned for id.
func (p *Plan) Change(id manifest.ID) (Change, bool) {
	c, ok := p.byKey[id.String()]
	if !ok {
		return Change{}, false
	}
	return *c, true
}

// DOT renders the dependency graph in Graphviz format, each resource
// labelled with its kind, name and planned action, an edge from each
// dependency to its dependent.
func (p *Plan) DOT() string {
	return p.g.DOT("openctl", func(k string) string {
		c := p.byKey[k]
		return fmt.Sprintf("%s\n(%s)", c.ID.Short(), c.Action)
	})
}

// Plan reports what Apply would do with the same resources, without
// changing anything: it reads live resources and state, never writes.
// Invalid input, a state store that cannot open secrets and a $ref to a
// resource that does not exist fail exactly as they would in Apply.
// Nothing in a Plan holds a secret in clear (see Change.Fields).
//
// A resource that depends on a resource that will change is planned as an
// update when it exists (its $ref values are known only after apply),
// unless its provider's Diff says otherwise.
func (e *Engine) Plan(ctx context.Context, resources ...*manifest.Resource) (*Plan, error) {
	ctx, err := e.identify(ctx)
	if err != nil {
		return nil, err
	}
	s, err := e.build(ctx, resources)
	if err != nil {
		return nil, err
	}
	if err := e.checkSealing(ctx, s); err != nil {
		return nil, err
	}
	if err := e.addPrunes(ctx, s); err != nil {
		return nil, err
	}
	if err := e.checkRefs(ctx, s); err != nil {
		return nil, err
	}
	if err := e.place(ctx, s); err != nil {
		return nil, err
	}
	if refusals := e.providerChecks(ctx, s); len(refusals) > 0 {
		var errs []error
		for _, k := range slices.Sorted(maps.Keys(refusals)) {
			errs = append(errs, refusals[k])
		}
		return nil, errors.Join(errs...)
	}
	return e.planSet(ctx, s)
}

// planSet plans every node of s, in execution order, recording what it
// read of each (planInputs).
func (e *Engine) planSet(ctx context.Context, s *set) (*Plan, error) {
	order, err := s.g.Sort()
	if err != nil {
		return nil, err
	}
	plan := &Plan{g: s.g, byKey: map[string]*Change{}}
	plan.made = &planInputs{storeID: registry.CallOf(ctx).Owner, nodes: s.nodes, seen: make(map[string]observed, len(order))}
	plan.Changes = make([]Change, 0, len(order))
	for _, k := range order {
		n := s.nodes[k]
		c, seen, err := e.planOne(ctx, n, plan)
		if err != nil {
			return nil, wrapf(err, "plan %s%s", n.id.Short(), at(n.res))
		}
		plan.made.seen[k] = seen
		if c.Action == ActionNoOp {
			c.Fields = nil
		}
		c.Fields = redactFields(n.kind.SecretFields, c.Fields)
		plan.Changes = append(plan.Changes, c)
		plan.byKey[k] = &plan.Changes[len(plan.Changes)-1]
	}
	waves, err := s.g.Waves()
	if err != nil {
		return nil, err
	}
	for _, w := range waves {
		ids := make([]manifest.ID, len(w))
		for i, k := range w {
			ids[i] = s.nodes[k].id
		}
		plan.Waves = append(plan.Waves, ids)
	}
	return plan, nil
}

// observe reads n's state record and live resource (nil when there is
// none) and what a plan records of them.
func (e *Engine) observe(ctx context.Context, n *node) (*state.Record, *manifest.Resource, observed, error) {
	var o observed
	rec, err := e.store.Get(ctx, n.id)
	if err != nil && !errcode.Is(err, errcode.NotFound) {
		return nil, nil, o, err
	}
	if err != nil {
		rec = nil
	} else {
		o.recorded, o.generation, o.lineage = true, rec.Generation, rec.Lineage
	}
	live, err := e.get(ctx, n, "")
	if err != nil && !errcode.Is(err, errcode.NotFound) {
		return nil, nil, o, err
	}
	if err != nil {
		live = nil
	}
	o.live = live != nil
	return rec, live, o, nil
}

func (e *Engine) planOne(ctx context.Context, n *node, plan *Plan) (Change, observed, error) {
	c := Change{ID: n.id, DependsOn: n.deps, Owner: n.owner, Source: n.res.Source}
	rec, live, seen, err := e.observe(ctx, n)
	if err != nil {
		return c, seen, err
	}
	c, err = e.planChange(ctx, n, plan, c, rec, live)
	return c, seen, err
}

// planChange plans n given its record and live resource (nil: none).
func (e *Engine) planChange(ctx context.Context, n *node, plan *Plan, c Change, rec *state.Record, live *manifest.Resource) (Change, error) {
	if n.del {
		c.Action = ActionDelete
		c.Reasons = append(c.Reasons, "no longer planned by "+n.owner.Short())
		return c, nil
	}
	var err error
	if live == nil {
		c.Action = ActionCreate
		c.Fields = n.placed // what the provider chose for it
		if rec != nil {
			c.Reasons = append(c.Reasons, "recorded in state but gone: will be created again")
		} else {
			c.Reasons = append(c.Reasons, "does not exist")
		}
		return c, nil
	}
	if rec != nil {
		// The recorded spec leaves secret fields out: compare with them
		// put back, and with "[redacted]" taken as "keep".
		desired := n.res
		if d, err := restoreSecrets(n, n.res, rec); err == nil {
			desired = d
		}
		c.Fields = manifest.Diff("spec", recordedSpec(rec), desired.Spec)
	}

	var pending []string
	for _, d := range n.deps {
		if dc := plan.byKey[d.String()]; dc != nil && dc.Action != ActionNoOp {
			pending = append(pending, d.Short())
		}
	}
	if len(pending) > 0 {
		c.Action = ActionUpdate
		c.Reasons = append(c.Reasons, "values from "+strings.Join(pending, ", ")+" are known only after apply")
		return c, nil
	}

	var resolved *manifest.Resource
	if err := e.safe("resolve", n.id, func() (err error) { resolved, err = refs.Resolve(ctx, getter{e}, n.res); return err }); err != nil {
		var rerr *refs.Error
		if errors.Is(err, refs.ErrFieldNotFound) && errors.As(err, &rerr) && e.declares(rerr.Target, rerr.Field) {
			// A field its target's kind declares but does not report
			// yet (a VM's host key before its guest agent answers):
			// apply waits for it, so the plan shows it pending.
			c.Action = ActionUpdate
			c.Reasons = append(c.Reasons, fmt.Sprintf("%s does not report %s yet: its value is known only after apply, which waits for it", rerr.Target.Short(), rerr.Field))
			return c, nil
		}
		return c, err
	}
	if resolved, err = restoreSecrets(n, resolved, rec); err != nil {
		return c, err
	}
	if d, ok := n.prov.(registry.Differ); ok {
		var diff registry.Diff
		if _, err := e.retry(ctx, n.id, "", func(ctx context.Context) error {
			return e.safe("diff", n.id, func() (err error) { diff, err = d.Diff(ctx, resolved, live); return err })
		}); err != nil {
			return c, err
		}
		c.Action = diffAction(diff.Action)
		c.Reasons = append(c.Reasons, diff.Reasons...)
		if len(diff.Fields) > 0 {
			c.Fields = diff.Fields
		}
		if c.Action == ActionNoOp && !recordedAs(rec, resolved) {
			// The provider sees nothing to change but state does not
			// know the resource in this form: Apply will call the
			// provider to converge and record it.
			c.Action = ActionUpdate
			c.Reasons = append(c.Reasons, "not recorded in state in this form")
		}
		return c, nil
	}
	switch {
	case recordedAs(rec, resolved):
		c.Action = ActionNoOp
	case rec == nil:
		c.Action = ActionUpdate
		c.Fields = manifest.Diff("spec", live.Spec, resolved.Spec)
		c.Reasons = append(c.Reasons, "exists but is not recorded in state: apply will hand it to the provider")
	default:
		c.Action = ActionUpdate
		if len(c.Fields) == 0 {
			c.Reasons = append(c.Reasons, "resolved $ref values changed")
		}
	}
	return c, nil
}

// recordedAs reports whether rec records resolved's spec as applied.
func recordedAs(rec *state.Record, resolved *manifest.Resource) bool {
	return rec != nil && rec.SpecHash == manifest.Hash(resolved.Spec)
}

func diffAction(a registry.DiffAction) Action {
	switch a {
	case registry.DiffNone:
		return ActionNoOp
	case registry.DiffReplace:
		return ActionReplace
	}
	return ActionUpdate
}

// recordedSpec returns the spec rec records as written, with the secret
// spec fields it keeps sealed (rec.Secrets) put back.
func recordedSpec(rec *state.Record) map[string]any {
	spec, copied := rec.Spec, false
	for p, v := range rec.Secrets {
		path, ok := strings.CutPrefix(p, "spec.")
		if !ok || path == "" {
			continue
		}
		if !copied {
			spec, copied = manifest.CopyMap(rec.Spec), true
			if spec == nil {
				spec = map[string]any{}
			}
		}
		_ = manifest.SetField(spec, path, v.Reveal()) // a path the engine split off: it can be set again
	}
	return spec
}

// redactFields returns changes with the values of the secret spec fields
// paths (a changed field that is one, or a changed block holding one)
// replaced by secret.Secret values. A $ref marker is not a secret value
// and stays.
func redactFields(paths []string, changes []manifest.FieldChange) []manifest.FieldChange {
	if len(paths) == 0 || len(changes) == 0 {
		return changes
	}
	out := make([]manifest.FieldChange, len(changes))
	for i, c := range changes {
		for _, p := range paths {
			switch {
			case within(c.Path, p):
				c.Old, c.New = redactValue(c.Old), redactValue(c.New)
			case within(p, c.Path):
				rest := strings.Split(p[len(c.Path)+1:], ".")
				c.Old, c.New = redactAt(c.Old, rest), redactAt(c.New, rest)
			}
		}
		out[i] = c
	}
	return out
}

// within reports whether path is base or lies under it.
func within(path, base string) bool {
	rest, ok := strings.CutPrefix(path, base)
	return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
}

// redactValue returns v as a secret.Secret, unless it is nil, a $ref
// marker or already one.
func redactValue(v any) any {
	switch x := v.(type) {
	case nil, secret.Secret:
		return v
	case string:
		return secret.New(x)
	}
	if refs.IsMarker(v) {
		return v
	}
	return secret.New(fmt.Sprint(v))
}

// redactAt returns a copy of v with the value at keys (map keys) redacted,
// or v itself when it holds nothing there.
func redactAt(v any, keys []string) any {
	m, ok := v.(map[string]any)
	if !ok || len(keys) == 0 {
		return v
	}
	inner, ok := m[keys[0]]
	if !ok {
		return v
	}
	c := make(map[string]any, len(m))
	for k, x := range m {
		c[k] = x
	}
	if len(keys) == 1 {
		c[keys[0]] = redactValue(inner)
	} else {
		c[keys[0]] = redactAt(inner, keys[1:])
	}
	return c
}
