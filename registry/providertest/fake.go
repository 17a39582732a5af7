package providertest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
)

// Fake is an in-memory provider for tests of code built on the engine: it
// stores what it is given, computes a status with StatusFunc, counts calls
// and can be made to fail or stall. It passes RunConformance. It is safe
// for concurrent use; set the hook fields before first use.
type Fake struct {
	// StatusFunc computes a resource's status when it is applied. The
	// default sets "observedHash" to manifest.Hash of the spec.
	StatusFunc func(r *manifest.Resource) map[string]any
	// ApplyHook runs at the start of every Apply (after the call is
	// counted); a non-nil error fails the Apply. Use it to inject latency
	// (honour ctx), transient failures or panics.
	ApplyHook func(ctx context.Context, r *manifest.Resource) error
	// DeleteHook runs at the start of every Delete, like ApplyHook.
	DeleteHook func(ctx context.Context, id manifest.ID) error

	name  string
	kinds []registry.Kind

	mu      sync.Mutex                         // guards objects, calls, log
	objects map[manifest.ID]*manifest.Resource // live resources
	calls   Calls
	log     []string // "apply kind/name", "delete kind/name" in call order
}

// Calls counts a Fake's provider calls.
type Calls struct{ Get, Apply, Delete, List int }

// Writes is the number of calls that may change something.
func (c Calls) Writes() int { return c.Apply + c.Delete }

// NewFake returns a Fake serving the given kinds under name (apiVersion
// group <name>.openctl.io).
func NewFake(name string, kinds ...string) *Fake {
	f := &Fake{name: name, objects: map[manifest.ID]*manifest.Resource{}}
	for _, k := range kinds {
		f.kinds = append(f.kinds, registry.Kind{Kind: k, Plural: lowerPlural(k)})
	}
	return f
}

func lowerPlural(k string) string {
	b := []byte(k)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b) + "s"
}

var (
	_ registry.Provider = (*Fake)(nil)
	_ registry.Lister   = (*Fake)(nil)
)

// Name implements registry.Provider.
func (f *Fake) Name() string { return f.name }

// Kinds implements registry.Provider.
func (f *Fake) Kinds() []registry.Kind { return slices.Clone(f.kinds) }

// Get implements registry.Provider.
func (f *Fake) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls.Get++
	r, ok := f.objects[id]
	if !ok {
		return nil, fmt.Errorf("fake: %s: %w", id.Short(), errcode.NotFound)
	}
	return r.DeepCopy(), nil
}

// Apply implements registry.Provider.
func (f *Fake) Apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	f.mu.Lock()
	f.calls.Apply++
	f.log = append(f.log, "apply "+r.ID().Short())
	f.mu.Unlock()
	if f.ApplyHook != nil {
		if err := f.ApplyHook(ctx, r); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	live := r.DeepCopy()
	live.Source = manifest.Source{}
	if f.StatusFunc != nil {
		live.Status = f.StatusFunc(live)
	} else {
		live.Status = map[string]any{"observedHash": manifest.Hash(live.Spec)}
	}
	f.mu.Lock()
	f.objects[r.ID()] = live
	f.mu.Unlock()
	return live.DeepCopy(), nil
}

// Delete implements registry.Provider.
func (f *Fake) Delete(ctx context.Context, id manifest.ID) error {
	f.mu.Lock()
	f.calls.Delete++
	f.log = append(f.log, "delete "+id.Short())
	f.mu.Unlock()
	if f.DeleteHook != nil {
		if err := f.DeleteHook(ctx, id); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.objects, id)
	return nil
}

// List implements registry.Lister.
func (f *Fake) List(ctx context.Context, kind string) ([]*manifest.Resource, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls.List++
	var out []*manifest.Resource
	for id, r := range f.objects {
		if id.Kind == kind {
			out = append(out, r.DeepCopy())
		}
	}
	slices.SortFunc(out, func(a, b *manifest.Resource) int { return a.ID().Compare(b.ID()) })
	return out, nil
}

// Calls returns the call counts so far.
func (f *Fake) Calls() Calls {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// Log returns the writes so far in call order, as "apply Kind/name" and
// "delete Kind/name".
func (f *Fake) Log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

// Put stores a live resource directly, bypassing Apply and the counters,
// to set up tests (an existing resource the engine did not create).
func (f *Fake) Put(r *manifest.Resource) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[r.ID()] = r.DeepCopy()
}

// Remove deletes a live resource directly, bypassing Delete and the
// counters, to simulate drift.
func (f *Fake) Remove(id manifest.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.objects, id)
}
