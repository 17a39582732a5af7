package registry

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

// Registry routes resources to providers by the group of their apiVersion:
// "proxmox.openctl.io/v1" goes to the provider named "proxmox".
//
// The zero value is an empty registry ready to use. A Registry is safe for
// concurrent use; it must not be copied after first use. It implements
// refs.Getter, so $ref values resolve through it whichever provider owns
// the target.
type Registry struct {
	mu        sync.RWMutex      // guards providers
	providers map[string]*entry // by Name()
}

// entry is a registered provider with its kinds, read once at Register:
// a provider's kinds must not change after registration.
type entry struct {
	p     Provider
	kinds map[string]Kind // by Kind.Kind
	names []string        // kind names, sorted
}

// Register adds providers. An empty name, a name that is not a DNS-1123
// label, a name already registered, or a provider with no kinds is an
// Invalid error; on error nothing is registered.
func (r *Registry) Register(ps ...Provider) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, p := range ps {
		if p == nil || isNilPointer(p) {
			return errcode.New(errcode.Invalid, "registry: nil provider")
		}
		name := p.Name()
		switch {
		case name == "":
			return errcode.New(errcode.Invalid, fmt.Sprintf("registry: provider %T has an empty name", p))
		case manifest.ValidateName(name) != nil || strings.Contains(name, "."):
			return errcode.New(errcode.Invalid, fmt.Sprintf("registry: provider name %q is not a DNS-1123 label", name))
		case r.providers[name] != nil || seen[name]:
			return errcode.New(errcode.Invalid, fmt.Sprintf("registry: provider %q is already registered", name))
		case len(p.Kinds()) == 0:
			return errcode.New(errcode.Invalid, fmt.Sprintf("registry: provider %q serves no kinds", name))
		}
		kinds := map[string]bool{}
		for _, k := range p.Kinds() {
			if kinds[k.Kind] {
				return errcode.New(errcode.Invalid, fmt.Sprintf("registry: provider %q lists kind %q twice", name, k.Kind))
			}
			kinds[k.Kind] = true
			if err := (manifest.ID{APIVersion: name + manifest.APIGroupSuffix + "/v1", Kind: k.Kind, Name: "x"}).Validate(); err != nil {
				return errcode.Wrap(errcode.Invalid, fmt.Sprintf("registry: provider %q", name), err)
			}
		}
		seen[name] = true
	}
	if r.providers == nil {
		r.providers = make(map[string]*entry)
	}
	for _, p := range ps {
		e := &entry{p: p, kinds: map[string]Kind{}}
		for _, k := range p.Kinds() {
			e.kinds[k.Kind] = k
			e.names = append(e.names, k.Kind)
		}
		slices.Sort(e.names)
		r.providers[p.Name()] = e
	}
	return nil
}

// Names returns the registered provider names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.providers))
	for n := range r.providers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Groups returns the registered apiVersion groups ("proxmox.openctl.io"),
// sorted.
func (r *Registry) Groups() []string {
	names := r.Names()
	for i, n := range names {
		names[i] = n + manifest.APIGroupSuffix
	}
	return names
}

// Provider returns the provider registered under name. An unknown name is
// an Invalid error listing the registered groups.
func (r *Registry) Provider(name string) (Provider, error) {
	e, err := r.entry(name)
	if err != nil {
		return nil, err
	}
	return e.p, nil
}

func (r *Registry) entry(name string) (*entry, error) {
	r.mu.RLock()
	e := r.providers[name]
	r.mu.RUnlock()
	if e == nil {
		return nil, &UnknownGroupError{Group: name + manifest.APIGroupSuffix, Registered: r.Groups()}
	}
	return e, nil
}

// Lookup returns the provider and kind that serve id's apiVersion and kind.
// A malformed apiVersion, an unregistered group, a kind the provider does
// not serve or a version it does not serve is an Invalid error that lists
// what is available.
func (r *Registry) Lookup(id manifest.ID) (Provider, Kind, error) {
	group, version, err := manifest.SplitAPIVersion(id.APIVersion)
	if err != nil {
		return nil, Kind{}, fmt.Errorf("registry: %w", err)
	}
	e, err := r.entry(group)
	if err != nil {
		return nil, Kind{}, err
	}
	k, ok := e.kinds[id.Kind]
	if !ok {
		return nil, Kind{}, errcode.New(errcode.Invalid, fmt.Sprintf("registry: provider %q does not serve kind %q (it serves: %s)", group, id.Kind, strings.Join(e.names, ", ")))
	}
	if len(k.Versions) > 0 && !slices.Contains(k.Versions, version) {
		return nil, Kind{}, errcode.New(errcode.Invalid, fmt.Sprintf("registry: %s %s: version %s not served (served: %s)", group, id.Kind, version, strings.Join(k.Versions, ", ")))
	}
	return e.p, k, nil
}

// KindRef names a kind together with the provider that serves it.
type KindRef struct {
	Provider string
	Kind
}

// Kinds returns every registered kind, sorted by provider then kind.
func (r *Registry) Kinds() []KindRef {
	var out []KindRef
	r.mu.RLock()
	for name, e := range r.providers {
		for _, k := range e.kinds {
			out = append(out, KindRef{Provider: name, Kind: k})
		}
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b KindRef) int {
		if c := strings.Compare(a.Provider, b.Provider); c != 0 {
			return c
		}
		return strings.Compare(a.Kind.Kind, b.Kind.Kind)
	})
	return out
}

// ResolveKind finds a kind by the names a CLI accepts: the kind itself
// (case-insensitive), its plural or a short name, optionally qualified by
// provider as "vm.proxmox". An unknown name is an Invalid error; a name
// two providers share is an Invalid error asking for the qualified form.
func (r *Registry) ResolveKind(name string) (KindRef, error) {
	want, provider, _ := strings.Cut(strings.ToLower(name), ".")
	if want == "" {
		return KindRef{}, errcode.New(errcode.Invalid, fmt.Sprintf("registry: unknown kind %q", name))
	}
	var matches []KindRef
	for _, k := range r.Kinds() {
		if provider != "" && k.Provider != provider {
			continue
		}
		if strings.ToLower(k.Kind.Kind) == want || k.Plural == want || slices.Contains(k.ShortNames, want) {
			matches = append(matches, k)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return KindRef{}, errcode.New(errcode.Invalid, fmt.Sprintf("registry: unknown kind %q", name))
	}
	var qual []string
	for _, m := range matches {
		qual = append(qual, want+"."+m.Provider)
	}
	return KindRef{}, errcode.New(errcode.Invalid, fmt.Sprintf("registry: kind %q is ambiguous; use one of %s", name, strings.Join(qual, ", ")))
}

// Get reads a live resource through the provider serving id. It implements
// refs.Getter.
func (r *Registry) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	p, _, err := r.Lookup(id)
	if err != nil {
		return nil, err
	}
	return p.Get(ctx, id)
}

// List lists the resources of one kind through the provider serving it. A
// provider that does not implement [Lister] is an Invalid error.
func (r *Registry) List(ctx context.Context, apiVersion, kind string) ([]*manifest.Resource, error) {
	p, _, err := r.Lookup(manifest.ID{APIVersion: apiVersion, Kind: kind})
	if err != nil {
		return nil, err
	}
	l, ok := p.(Lister)
	if !ok {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("registry: provider %q cannot list %s", p.Name(), kind))
	}
	return l.List(ctx, kind)
}

// Close closes every registered provider that implements io.Closer and
// returns their errors joined.
func (r *Registry) Close() error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(r.providers)) {
		if c, ok := r.providers[name].p.(interface{ Close() error }); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("registry: close %s: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

func isNilPointer(p Provider) bool {
	v := reflect.ValueOf(p)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// UnknownGroupError reports an apiVersion group no provider serves. It
// matches errcode.Invalid.
type UnknownGroupError struct {
	Group      string   // e.g. "aws.openctl.io"
	Registered []string // the registered groups, sorted
}

// Error names the group and lists the registered ones.
func (e *UnknownGroupError) Error() string {
	reg := "none"
	if len(e.Registered) > 0 {
		reg = strings.Join(e.Registered, ", ")
	}
	return fmt.Sprintf("registry: no provider serves apiVersion group %q (registered: %s)", e.Group, reg)
}

// Is reports true for errcode.Invalid.
func (e *UnknownGroupError) Is(target error) bool { return target == errcode.Invalid }

// Unwrap returns errcode.Invalid, so errcode.Of classifies the error.
func (e *UnknownGroupError) Unwrap() error { return errcode.Invalid }
