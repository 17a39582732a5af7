package providertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
)

// Options configures RunConformance.
type Options struct {
	// NewResource returns a valid manifest of the kind under test with the
	// given name. Required. The names used start with "conformance-".
	NewResource func(name string) *manifest.Resource
	// Groups are the API groups the provider serves when they are not
	// <Name>.openctl.io: its Driver's DriverInfo.Groups.
	Groups []string
	// Mutate returns a changed copy of r for the update test. Optional: the
	// update test is skipped (and says so) without it.
	Mutate func(r *manifest.Resource) *manifest.Resource
	// Parallel is the number of concurrent Applies in the concurrency test
	// (default 8).
	Parallel int
}

// RunConformance checks the Provider contract against p: Get of a missing
// resource is a typed NotFound; Apply returns the resource and Get
// reflects the applied spec; Apply is idempotent and does not modify its
// argument; Delete removes, and deleting a missing resource is not an
// error; List (if implemented) contains what was applied; concurrent
// Applies of distinct names are safe; Validate (if implemented) accepts
// the fixtures. Resources it creates are deleted at the end.
//
// It calls the provider as the engine would: for kinds that read their
// prior state (Kind.ReadsPrior) every Get and Delete carries what the
// last Apply returned (registry.Call.Prior); a composite kind's children
// (Planner) are applied before it, in order, their $refs to each other
// resolved through Get, and deleted after it in reverse order.
func RunConformance(t *testing.T, p registry.Provider, opts Options) {
	t.Helper()
	require.NotNil(t, opts.NewResource, "providertest: Options.NewResource is required")
	if opts.Parallel <= 0 {
		opts.Parallel = 8
	}
	ctx := t.Context()
	var mu sync.Mutex
	var created []manifest.ID
	newRes := func(name string) *manifest.Resource {
		r := opts.NewResource(name)
		mu.Lock()
		created = append(created, r.ID())
		mu.Unlock()
		return r
	}
	e := &engineLike{p: p, applied: map[manifest.ID]*manifest.Resource{}, children: map[manifest.ID][]manifest.ID{}}
	t.Cleanup(func() {
		// t.Context is already cancelled when cleanups run.
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		for _, id := range created {
			if err := e.Delete(cctx, id); err != nil {
				t.Errorf("cleanup: delete %s: %v", id.Short(), err)
			}
		}
	})
	runConformance(t, ctx, e, opts, newRes)
}

func runConformance(t *testing.T, ctx context.Context, p *engineLike, opts Options, newRes func(string) *manifest.Resource) {
	t.Helper()

	t.Run("Identity", func(t *testing.T) {
		require.NotEmpty(t, p.Name())
		require.NotEmpty(t, p.Kinds())
		r := opts.NewResource("conformance-id")
		g, _, err := manifest.SplitAPIVersion(r.APIVersion)
		require.NoError(t, err)
		groups := []string{p.Name() + manifest.APIGroupSuffix}
		if len(opts.Groups) > 0 {
			groups = opts.Groups
		}
		assert.Contains(t, groups, g, "fixture apiVersion group must be one the provider serves")
		assert.True(t, slices.ContainsFunc(p.Kinds(), func(k registry.Kind) bool { return k.Kind == r.Kind }), "provider must list kind %s", r.Kind)
	})

	t.Run("GetMissingIsNotFound", func(t *testing.T) {
		id := opts.NewResource("conformance-missing").ID()
		_, err := p.Get(ctx, id)
		require.Error(t, err)
		assert.True(t, errors.Is(err, errcode.NotFound), "Get of a missing resource must match errcode.NotFound, got %v", err)
	})

	t.Run("ValidateAcceptsFixture", func(t *testing.T) {
		v, ok := p.p.(registry.Validator)
		if !ok {
			t.Skip("provider does not implement registry.Validator")
		}
		require.NoError(t, v.Validate(ctx, opts.NewResource("conformance-valid")))
	})

	t.Run("ApplyGetIdempotent", func(t *testing.T) {
		r := newRes("conformance-apply")
		before := r.DeepCopy()
		out, err := p.Apply(ctx, r)
		require.NoError(t, err)
		assert.Equal(t, before, r, "Apply must not modify its argument")
		require.NotNil(t, out)
		assert.Equal(t, r.ID(), out.ID())

		live, err := p.Get(ctx, r.ID())
		require.NoError(t, err)
		assert.Equal(t, r.ID(), live.ID())
		assertSpecReflected(t, r.Spec, live.Spec)

		again, err := p.Apply(ctx, r)
		require.NoError(t, err, "a second Apply of the same manifest must succeed")
		assert.Equal(t, r.ID(), again.ID())
		live2, err := p.Get(ctx, r.ID())
		require.NoError(t, err)
		assertSpecReflected(t, r.Spec, live2.Spec)

		if l, ok := p.p.(registry.Lister); ok {
			items, err := l.List(ctx, r.Kind)
			require.NoError(t, err)
			n := 0
			for _, it := range items {
				if it.ID() == r.ID() {
					n++
				}
			}
			assert.Equal(t, 1, n, "List must contain the applied resource exactly once")
		}
	})

	t.Run("Update", func(t *testing.T) {
		if opts.Mutate == nil {
			t.Skip("no Options.Mutate: update not checked")
		}
		r := newRes("conformance-update")
		_, err := p.Apply(ctx, r)
		require.NoError(t, err)
		m := opts.Mutate(r.DeepCopy())
		_, err = p.Apply(ctx, m)
		require.NoError(t, err)
		live, err := p.Get(ctx, r.ID())
		require.NoError(t, err)
		assertSpecReflected(t, m.Spec, live.Spec)
	})

	t.Run("Delete", func(t *testing.T) {
		r := newRes("conformance-delete")
		_, err := p.Apply(ctx, r)
		require.NoError(t, err)
		require.NoError(t, p.Delete(ctx, r.ID()))
		_, err = p.Get(ctx, r.ID())
		assert.True(t, errors.Is(err, errcode.NotFound), "Get after Delete must be NotFound, got %v", err)
		assert.NoError(t, p.Delete(ctx, r.ID()), "deleting a deleted resource is not an error")
		assert.NoError(t, p.Delete(ctx, opts.NewResource("conformance-never").ID()), "deleting a missing resource is not an error")
		if l, ok := p.p.(registry.Lister); ok {
			items, err := l.List(ctx, r.Kind)
			require.NoError(t, err)
			for _, it := range items {
				assert.NotEqual(t, r.ID(), it.ID(), "List must not return a deleted resource")
			}
		}
	})

	t.Run("ConcurrentApply", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]error, opts.Parallel)
		ids := make([]manifest.ID, opts.Parallel)
		for i := range opts.Parallel {
			r := newRes(fmt.Sprintf("conformance-par-%d", i))
			ids[i] = r.ID()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = p.Apply(ctx, r)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "concurrent Apply %d", i)
		}
		for _, id := range ids {
			_, err := p.Get(ctx, id)
			assert.NoError(t, err)
		}
	})
}

// assertSpecReflected checks that every leaf of want is present with an
// equal value in got (providers may add defaults, but not drop or change
// what was asked for).
func assertSpecReflected(t *testing.T, want, got map[string]any) {
	t.Helper()
	for _, c := range manifest.Diff("spec", want, got) {
		if c.Added {
			continue // a default the provider filled in
		}
		t.Errorf("live spec does not reflect the applied one at %s: want %v, got %v", c.Path, c.Old, c.New)
	}
}

// engineLike calls a provider as the engine does, for the kit: prior
// state for kinds that read it, composite children applied first. It is
// safe for concurrent use.
type engineLike struct {
	p registry.Provider

	mu       sync.Mutex                         // guards applied and children
	applied  map[manifest.ID]*manifest.Resource // what the last Apply returned
	children map[manifest.ID][]manifest.ID      // a composite's children, in apply order
}

func (e *engineLike) Name() string           { return e.p.Name() }
func (e *engineLike) Kinds() []registry.Kind { return e.p.Kinds() }

func (e *engineLike) kind(kind string) registry.Kind {
	for _, k := range e.p.Kinds() {
		if k.Kind == kind {
			return k
		}
	}
	return registry.Kind{}
}

// withPrior adds the prior state of id when its kind reads it.
func (e *engineLike) withPrior(ctx context.Context, id manifest.ID) context.Context {
	if !e.kind(id.Kind).ReadsPrior {
		return ctx
	}
	e.mu.Lock()
	prior := e.applied[id]
	e.mu.Unlock()
	if prior == nil {
		return ctx
	}
	c := registry.CallOf(ctx)
	c.Prior = prior.DeepCopy()
	return registry.WithCall(ctx, c)
}

func (e *engineLike) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	return e.p.Get(e.withPrior(ctx, id), id)
}

func (e *engineLike) Apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	if pl, ok := e.p.(registry.Planner); ok && e.kind(r.Kind).Composite {
		children, err := pl.Plan(ctx, r)
		if err != nil {
			return nil, err
		}
		var ids []manifest.ID
		for _, c := range children {
			c = c.DeepCopy()
			c.SetOwner(r.ID())
			resolved, err := refs.Resolve(ctx, e, c)
			if err != nil {
				return nil, fmt.Errorf("providertest: resolving child %s: %w", c.ID().Short(), err)
			}
			if _, err := e.apply(ctx, resolved); err != nil {
				return nil, err
			}
			ids = append(ids, c.ID())
		}
		e.mu.Lock()
		e.children[r.ID()] = ids
		e.mu.Unlock()
	}
	return e.apply(ctx, r)
}

func (e *engineLike) apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	out, err := e.p.Apply(ctx, r)
	if err == nil && out != nil {
		rec := out.DeepCopy()
		rec.Spec = manifest.CopyMap(r.Spec)
		e.mu.Lock()
		e.applied[r.ID()] = rec
		e.mu.Unlock()
	}
	return out, err
}

// Delete deletes a composite's children first, in reverse order, as the
// engine does.
func (e *engineLike) Delete(ctx context.Context, id manifest.ID) error {
	e.mu.Lock()
	children := e.children[id]
	e.mu.Unlock()
	var err error
	for i := len(children) - 1; i >= 0 && err == nil; i-- {
		err = e.Delete(ctx, children[i])
	}
	if err == nil {
		err = e.p.Delete(e.withPrior(ctx, id), id)
	}
	if err == nil {
		e.mu.Lock()
		delete(e.applied, id)
		delete(e.children, id)
		e.mu.Unlock()
	}
	return err
}
