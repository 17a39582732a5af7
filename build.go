package openctl

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/graph"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
)

// node is one resource of an operation: a top-level manifest or a child a
// composite planned.
type node struct {
	id       manifest.ID
	key      string             // id.String(), the graph key
	res      *manifest.Resource // desired, $refs unresolved; owned by the engine
	prov     registry.Provider
	kind     registry.Kind
	owner    *manifest.ID
	parent   *manifest.Resource     // the owner as this operation applies it (registry.Call.Parent); nil when it is not in the operation
	children []manifest.ID          // sorted
	deps     []manifest.ID          // every $ref target, sorted
	refs     []refs.Ref             // every $ref marker (not set for deletes)
	refused  error                  // set when the node must fail without running
	del      bool                   // delete the resource instead of applying it
	recorded bool                   // for a delete: the state has a record of it
	cascade  bool                   // for a delete: its owner is deleted in the same operation
	placed   []manifest.FieldChange // what its provider's Place chose (registry.Placer)
}

// op names what the operation does to n: "apply" or "delete".
func (n *node) op() string {
	if n.del {
		return "delete"
	}
	return "apply"
}

// set is the resources of one operation and their dependency graph.
type set struct {
	nodes map[string]*node
	g     *graph.Graph[string]
	// owned maps each owner to the records that name it as their owner,
	// loaded from the store by the first delete that needs it.
	owned map[manifest.ID][]manifest.ID
}

func newSet() *set { return &set{nodes: map[string]*node{}, g: graph.New[string]()} }

func (s *set) node(id manifest.ID) *node { return s.nodes[id.String()] }

// build validates resources, expands composites into their children and
// builds the dependency graph. Every problem found is reported (joined);
// nothing is changed anywhere.
func (e *Engine) build(ctx context.Context, resources []*manifest.Resource) (*set, error) {
	s := newSet()
	var errs []error
	for i, r := range resources {
		if r == nil {
			errs = append(errs, errcode.New(errcode.Invalid, fmt.Sprintf("openctl: resource %d is nil", i)))
			continue
		}
		if err := e.add(ctx, s, r.DeepCopy(), nil, 0); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	keys := slices.Sorted(maps.Keys(s.nodes))
	for _, k := range keys {
		n := s.nodes[k]
		if v, ok := n.prov.(registry.Validator); ok {
			if err := e.safe("validate", n.id, func() error { return v.Validate(ctx, n.res) }); err != nil {
				errs = append(errs, wrapf(err, "%s%s", n.id.Short(), at(n.res)))
			}
		}
		rs, err := refs.Collect(n.res)
		if err != nil {
			errs = append(errs, wrapf(err, "%s%s", n.id.Short(), at(n.res)))
			continue
		}
		n.refs = rs
		n.deps = targets(rs)
		routed := true
		for _, d := range n.deps {
			if s.node(d) != nil {
				continue
			}
			// A dependency outside the call must at least route to a
			// provider, or the apply would fail half-way.
			if _, _, err := e.reg.Lookup(d); err != nil {
				routed = false
				errs = append(errs, wrapf(err, "%s%s: $ref to %s", n.id.Short(), at(n.res), d.Short()))
			}
		}
		if routed {
			errs = append(errs, checkRefFields(n, e.kindOf(s))...)
		}
		s.g.AddNode(k)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, k := range keys {
		n := s.nodes[k]
		for _, d := range n.deps {
			if s.node(d) != nil {
				s.g.AddEdge(d.String(), k) // the dependency first
			}
		}
		for _, c := range n.children {
			s.g.AddEdge(c.String(), k) // children before their owner
		}
	}
	if err := s.g.Validate(); err != nil {
		return nil, fmt.Errorf("openctl: the resources depend on each other in a cycle: %w", err)
	}
	return s, nil
}

// add validates r, routes it to its provider and adds it (and, for a
// composite, its planned children) to s.
func (e *Engine) add(ctx context.Context, s *set, r *manifest.Resource, owner *node, depth int) error {
	if err := manifest.Validate(r); err != nil {
		return wrapf(err, "%s%s", r.ID().Short(), at(r))
	}
	// A kind or a $ref written under another name of its kind (an alias)
	// is read, and recorded, as the kind.
	r.Kind = e.reg.Canonical(r.ID()).Kind
	refs.Retarget(r, e.reg.Canonical)
	id := r.ID()
	p, kind, err := e.reg.Lookup(id)
	if err != nil {
		return wrapf(err, "%s%s", id.Short(), at(r))
	}
	if kind.ReadOnly {
		return errcode.New(errcode.Invalid, fmt.Sprintf("openctl: %s%s: kind %s is read-only", id.Short(), at(r), id.Kind))
	}
	if prev := s.node(id); prev != nil {
		first := at(prev.res)
		if prev.owner != nil {
			first = fmt.Sprintf(" (planned by %s)", prev.owner.Short())
		}
		return errcode.New(errcode.Invalid, fmt.Sprintf("openctl: duplicate resource %s%s: already defined%s", id.Short(), at(r), first))
	}
	n := &node{id: id, key: id.String(), res: r, prov: p, kind: kind}
	if owner != nil {
		n.owner, n.parent = &owner.id, owner.res
	}
	s.nodes[n.key] = n
	if !kind.Composite {
		return nil
	}
	pl, ok := p.(registry.Planner)
	if !ok {
		return errcode.New(errcode.Internal, fmt.Sprintf("openctl: provider %q says %s is composite but does not implement registry.Planner", p.Name(), id.Kind))
	}
	if depth >= e.maxDepth {
		return errcode.New(errcode.Invalid, fmt.Sprintf("openctl: %s: composites nested deeper than %d", id.Short(), e.maxDepth))
	}
	var children []*manifest.Resource
	if err := e.safe("plan", id, func() (err error) { children, err = pl.Plan(ctx, r.DeepCopy()); return err }); err != nil {
		return wrapf(err, "plan %s%s", id.Short(), at(r))
	}
	var errs []error
	for _, c := range children {
		if c == nil {
			errs = append(errs, errcode.New(errcode.Internal, fmt.Sprintf("openctl: plan %s returned a nil child", id.Short())))
			continue
		}
		c = c.DeepCopy()
		c.SetOwner(id)
		if c.Source.File == "" {
			c.Source = r.Source
		}
		n.children = append(n.children, c.ID())
		if err := e.add(ctx, s, c, n, depth+1); err != nil {
			errs = append(errs, err)
		}
	}
	slices.SortFunc(n.children, manifest.ID.Compare)
	return errors.Join(errs...)
}

// targets returns the distinct targets of rs, sorted.
func targets(rs []refs.Ref) []manifest.ID {
	ids := make([]manifest.ID, 0, len(rs))
	for _, r := range rs {
		ids = append(ids, r.Target)
	}
	slices.SortFunc(ids, manifest.ID.Compare)
	return slices.Compact(ids)
}

// kindOf returns a function giving the kind of a $ref target: the kind
// of its node in s, or the one its provider serves.
func (e *Engine) kindOf(s *set) func(manifest.ID) (registry.Kind, bool) {
	return func(id manifest.ID) (registry.Kind, bool) {
		if n := s.node(id); n != nil {
			return n.kind, true
		}
		_, k, err := e.reg.Lookup(id)
		return k, err == nil
	}
}

// at renders " (file:line)" for a resource decoded from a file, or "".
func at(r *manifest.Resource) string {
	if s := r.Source.String(); s != "" {
		return " (" + s + ")"
	}
	return ""
}

// addPrunes adds, for every composite in s that state says had children
// its Plan no longer produces (a cluster scaled down), delete nodes for
// those children — with their own children, in reverse dependency order —
// that run before the composite itself is applied. A resource in s that
// still refers to a pruned one is an Invalid error.
func (e *Engine) addPrunes(ctx context.Context, s *set) error {
	applied := slices.Sorted(maps.Keys(s.nodes))
	pruned := false
	for _, k := range applied {
		n := s.nodes[k]
		if !n.kind.Composite {
			continue
		}
		rec, err := e.store.Get(ctx, n.id)
		if errcode.Is(err, errcode.NotFound) {
			continue
		}
		if err != nil {
			return err
		}
		for _, c := range rec.Children {
			if s.node(c) != nil {
				continue // still planned, or applied on its own now
			}
			owned, err := e.stillOwned(ctx, c, n.id)
			if err != nil {
				return err
			}
			if !owned {
				continue // adopted by someone else, or already gone
			}
			before := len(s.nodes)
			if err := e.addForDelete(ctx, s, c, &n.id, 0, nil, false); err != nil {
				return err
			}
			if cn := s.node(c); cn != nil && cn.del {
				cn.parent = n.res
			}
			pruned = pruned || len(s.nodes) > before
		}
	}
	if !pruned {
		return nil
	}
	var del []string
	for k, n := range s.nodes {
		if n.del {
			del = append(del, k)
		}
	}
	slices.Sort(del)
	addDeleteEdges(s, del)
	var errs []error
	for _, k := range applied {
		n := s.nodes[k]
		for _, d := range n.deps {
			if dn := s.node(d); dn != nil && dn.del {
				errs = append(errs, errcode.New(errcode.Invalid, fmt.Sprintf("openctl: %s%s refers to %s, which %s no longer plans", n.id.Short(), at(n.res), d.Short(), dn.owner.Short())))
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := s.g.Validate(); err != nil {
		return fmt.Errorf("openctl: cannot order the deletes: %w", err)
	}
	return nil
}

// stillOwned reports whether child still belongs to owner: its state
// record names owner, or, without a record, the live resource's owner
// labels do. A child applied on its own since (no owner in its record) or
// already gone is not owned.
func (e *Engine) stillOwned(ctx context.Context, child, owner manifest.ID) (bool, error) {
	rec, err := e.store.Get(ctx, child)
	if err == nil {
		return rec.Owner != nil && *rec.Owner == owner, nil
	}
	if !errcode.Is(err, errcode.NotFound) {
		return false, err
	}
	live, err := getter{e}.Get(ctx, child)
	if errcode.Is(err, errcode.NotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	o, ok := live.Owner()
	return ok && o == owner, nil
}

// addDeleteEdges adds the delete nodes keys to s's graph with delete
// ordering: a resource before the resources its $refs point at, children
// before their owner.
func addDeleteEdges(s *set, keys []string) {
	for _, k := range keys {
		n := s.nodes[k]
		s.g.AddNode(k)
		for _, d := range n.deps {
			if dn := s.node(d); dn != nil && dn.del {
				s.g.AddEdge(k, d.String()) // delete the dependent first
			}
		}
		for _, c := range n.children {
			s.g.AddEdge(c.String(), k) // children before their owner
		}
		if n.owner != nil && s.node(*n.owner) != nil && !s.node(*n.owner).del {
			s.g.AddEdge(k, n.owner.String()) // gone before the owner is applied again
		}
	}
}
