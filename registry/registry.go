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

// Registry routes resources to providers by the API group of their
// apiVersion: "proxmox.openctl.io/v1" goes to the provider serving the
// group proxmox.openctl.io (by default the one named "proxmox").
//
// The zero value is an empty registry ready to use. A Registry is safe for
// concurrent use; it must not be copied after first use. It implements
// refs.Getter, so $ref values resolve through it whichever provider owns
// the target.
type Registry struct {
	mu        sync.RWMutex      // guards providers and groups
	providers map[string]*entry // by provider name
	groups    map[string]*entry // by API group
}

// entry is a registered provider with its groups and kinds, known at
// registration: a provider's kinds must not change afterwards. A provider
// registered through a Driver is opened on first use.
type entry struct {
	name    string
	groups  []string          // sorted
	kinds   map[string]Kind   // by Kind.Kind
	aliases map[string]string // Kind.Aliases → Kind.Kind
	names   []string          // kind names, sorted

	mu     sync.Mutex // guards p, err and opened
	p      Provider
	err    error
	opened bool
	open   func() (Provider, error) // nil for a provider registered open
}

// Register adds providers that are already open. An empty name, a name
// that is not a DNS-1123 label, a name or an API group already
// registered, a malformed group, or a provider with no kinds is an
// Invalid error; on error nothing is registered. A provider registered so
// serves <Name>.openctl.io; one that serves other groups is registered
// with [Registry.RegisterDriver], whose [DriverInfo] lists them.
func (r *Registry) Register(ps ...Provider) error {
	entries := make([]*entry, 0, len(ps))
	for _, p := range ps {
		if p == nil || isNilPointer(p) {
			return errcode.New(errcode.Invalid, "registry: nil provider")
		}
		e, err := newEntry(fmt.Sprintf("%T", p), p.Name(), nil, p.Kinds())
		if err != nil {
			return err
		}
		e.p, e.opened = p, true
		entries = append(entries, e)
	}
	return r.add(entries)
}

// RegisterDriver adds the provider d describes, to be opened by open the
// first time something routes to it: the registry knows its name, groups
// and kinds from d.Info() without opening it, so that a program can list
// kinds, resolve names and route manifests before it knows which
// providers a command needs. open's error (the provider is not
// configured, say) is returned by every call that needs the provider, and
// open is not called again. The provider open returns must serve the
// kinds d.Info() lists. The checks and errors are Register's.
func (r *Registry) RegisterDriver(d Driver, open func() (Provider, error)) error {
	if d == nil || isNilPointer(d) || open == nil {
		return errcode.New(errcode.Invalid, "registry: nil driver or open function")
	}
	info := d.Info()
	e, err := newEntry(fmt.Sprintf("%T", d), info.Name, info.Groups, info.Kinds)
	if err != nil {
		return err
	}
	e.open = open
	return r.add([]*entry{e})
}

// newEntry checks a provider's name, groups and kinds; what is a
// description of it for messages.
func newEntry(what, name string, groups []string, kinds []Kind) (*entry, error) {
	switch {
	case name == "":
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("registry: provider %s has an empty name", what))
	case manifest.ValidateName(name) != nil || strings.Contains(name, "."):
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("registry: provider name %q is not a DNS-1123 label", name))
	case len(kinds) == 0:
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("registry: provider %q serves no kinds", name))
	}
	if len(groups) == 0 {
		groups = []string{name + manifest.APIGroupSuffix}
	}
	e := &entry{name: name, groups: slices.Sorted(slices.Values(groups)), kinds: map[string]Kind{}, aliases: map[string]string{}}
	for i, g := range e.groups {
		if err := manifest.ValidateGroup(g); err != nil {
			return nil, errcode.Wrap(errcode.Invalid, fmt.Sprintf("registry: provider %q", name), err)
		}
		if i > 0 && e.groups[i-1] == g {
			return nil, errcode.New(errcode.Invalid, fmt.Sprintf("registry: provider %q lists group %q twice", name, g))
		}
	}
	for _, k := range kinds {
		if _, dup := e.kinds[k.Kind]; dup {
			return nil, errcode.New(errcode.Invalid, fmt.Sprintf("registry: provider %q lists kind %q twice", name, k.Kind))
		}
		if err := (manifest.ID{APIVersion: e.groups[0] + "/v1", Kind: k.Kind, Name: "x"}).Validate(); err != nil {
			return nil, errcode.Wrap(errcode.Invalid, fmt.Sprintf("registry: provider %q", name), err)
		}
		e.kinds[k.Kind] = k
		e.names = append(e.names, k.Kind)
	}
	for _, k := range kinds {
		for _, a := range k.Aliases {
			_, isKind := e.kinds[a]
			if other, dup := e.aliases[a]; dup || isKind {
				if !dup {
					other = a
				}
				return nil, errcode.New(errcode.Invalid, fmt.Sprintf("registry: provider %q: alias %q of kind %q is already the name of kind %q", name, a, k.Kind, other))
			}
			if err := (manifest.ID{APIVersion: e.groups[0] + "/v1", Kind: a, Name: "x"}).Validate(); err != nil {
				return nil, errcode.Wrap(errcode.Invalid, fmt.Sprintf("registry: provider %q: alias of kind %q", name, k.Kind), err)
			}
			e.aliases[a] = k.Kind
		}
	}
	slices.Sort(e.names)
	return e, nil
}

// add registers entries atomically, refusing names and groups already
// taken (by the registry or by another of the entries).
func (r *Registry) add(entries []*entry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	names, groups := map[string]bool{}, map[string]string{}
	for _, e := range entries {
		if r.providers[e.name] != nil || names[e.name] {
			return errcode.New(errcode.Invalid, fmt.Sprintf("registry: provider %q is already registered", e.name))
		}
		names[e.name] = true
		for _, g := range e.groups {
			owner := groups[g]
			if o := r.groups[g]; o != nil {
				owner = o.name
			}
			if owner != "" {
				return errcode.New(errcode.Invalid, fmt.Sprintf("registry: providers %q and %q both claim API group %q", owner, e.name, g))
			}
			groups[g] = e.name
		}
	}
	if r.providers == nil {
		r.providers, r.groups = map[string]*entry{}, map[string]*entry{}
	}
	for _, e := range entries {
		r.providers[e.name] = e
		for _, g := range e.groups {
			r.groups[g] = e
		}
	}
	return nil
}

// provider returns the entry's provider, opening it on first use.
func (e *entry) provider() (Provider, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.opened {
		e.opened = true
		p, err := e.open()
		switch {
		case err != nil:
			e.err = err
		case p == nil || isNilPointer(p):
			e.err = errcode.New(errcode.Internal, fmt.Sprintf("registry: provider %q opened as nil", e.name))
		default:
			var got []string
			for _, k := range p.Kinds() {
				got = append(got, k.Kind)
			}
			slices.Sort(got)
			if !slices.Equal(got, e.names) {
				e.err = errcode.New(errcode.Internal, fmt.Sprintf("registry: provider %q serves kinds %s, its driver said %s", e.name, strings.Join(got, ", "), strings.Join(e.names, ", ")))
			} else {
				e.p = p
			}
		}
	}
	return e.p, e.err
}

// Names returns the registered provider names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.providers))
}

// Groups returns the registered API groups ("proxmox.openctl.io"),
// sorted.
func (r *Registry) Groups() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.groups))
}

// Provider returns the provider registered under name, opening it if it
// was registered through a Driver. An unknown name is an Invalid error
// listing the registered providers.
func (r *Registry) Provider(name string) (Provider, error) {
	r.mu.RLock()
	e := r.providers[name]
	r.mu.RUnlock()
	if e == nil {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("registry: no provider named %q (registered: %s)", name, orNone(r.Names())))
	}
	return e.provider()
}

// Lookup returns the provider and kind that serve id's apiVersion and
// kind, opening the provider if it was registered through a Driver. A
// malformed apiVersion, an unregistered group, a kind the provider does
// not serve or a version it does not serve is an Invalid error that lists
// what is available; a provider that cannot be opened returns its
// driver's error.
func (r *Registry) Lookup(id manifest.ID) (Provider, Kind, error) {
	e, k, err := r.route(id)
	if err != nil {
		return nil, Kind{}, err
	}
	p, err := e.provider()
	if err != nil {
		return nil, Kind{}, err
	}
	return p, k, nil
}

// Canonical returns id with its kind the one the provider serving its
// group names it, when id's kind is one of that kind's [Kind].Aliases;
// any other id unchanged (Lookup then reports what is wrong with it).
func (r *Registry) Canonical(id manifest.ID) manifest.ID {
	group, _, err := manifest.SplitAPIVersion(id.APIVersion)
	if err != nil {
		return id
	}
	r.mu.RLock()
	e := r.groups[group]
	r.mu.RUnlock()
	if e == nil {
		return id
	}
	if k, ok := e.aliases[id.Kind]; ok {
		id.Kind = k
	}
	return id
}

// Route returns the name of the provider and the kind that serve id's
// apiVersion and kind, with Lookup's errors, without opening the
// provider.
func (r *Registry) Route(id manifest.ID) (string, Kind, error) {
	e, k, err := r.route(id)
	if err != nil {
		return "", Kind{}, err
	}
	return e.name, k, nil
}

func (r *Registry) route(id manifest.ID) (*entry, Kind, error) {
	group, version, err := manifest.SplitAPIVersion(id.APIVersion)
	if err != nil {
		return nil, Kind{}, fmt.Errorf("registry: %w", err)
	}
	r.mu.RLock()
	e := r.groups[group]
	r.mu.RUnlock()
	if e == nil {
		return nil, Kind{}, &UnknownGroupError{Group: group, Registered: r.Groups()}
	}
	k, ok := e.kinds[id.Kind]
	if canonical, alias := e.aliases[id.Kind]; alias {
		return nil, Kind{}, errcode.New(errcode.Invalid, fmt.Sprintf("registry: kind %q is another name of %q: route it as %s (Registry.Canonical)", id.Kind, canonical, canonical))
	}
	if !ok {
		return nil, Kind{}, errcode.New(errcode.Invalid, fmt.Sprintf("registry: provider %q does not serve kind %q (it serves: %s)", e.name, id.Kind, strings.Join(e.names, ", ")))
	}
	if len(k.Versions) > 0 && !slices.Contains(k.Versions, version) {
		return nil, Kind{}, errcode.New(errcode.Invalid, fmt.Sprintf("registry: %s %s: version %s not served (served: %s)", group, id.Kind, version, strings.Join(k.Versions, ", ")))
	}
	return e, k, nil
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// KindRef names a kind together with the provider that serves it.
type KindRef struct {
	Provider string // the provider's name
	Group    string // the API group the kind is served under (the provider's first)
	Kind
}

// Kinds returns every registered kind, sorted by provider then kind.
func (r *Registry) Kinds() []KindRef {
	var out []KindRef
	r.mu.RLock()
	for name, e := range r.providers {
		for _, k := range e.kinds {
			out = append(out, KindRef{Provider: name, Group: e.groups[0], Kind: k})
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
// or one of its aliases (case-insensitive), its plural or a short name,
// optionally qualified by provider as "vm.proxmox" (KIND.PROVIDER). A
// plural or short name wins over another kind's bare name. An unknown
// name is an Invalid error; a name two providers share is an Invalid
// error asking for the qualified form.
func (r *Registry) ResolveKind(name string) (KindRef, error) {
	want, provider, _ := strings.Cut(strings.ToLower(name), ".")
	if want == "" {
		return KindRef{}, errcode.New(errcode.Invalid, fmt.Sprintf("registry: unknown kind %q", name))
	}
	// A plural or a short name someone chose for a kind wins over the
	// bare name of another kind: "node" is Proxmox's short name for its
	// Node, and only the name of the K3s Node kind (node.k3s).
	var matches, byKind []KindRef
	for _, k := range r.Kinds() {
		if provider != "" && k.Provider != provider {
			continue
		}
		switch {
		case k.Plural == want || slices.Contains(k.ShortNames, want):
			matches = append(matches, k)
		case strings.ToLower(k.Kind.Kind) == want || slices.ContainsFunc(k.Aliases, func(a string) bool { return strings.ToLower(a) == want }):
			byKind = append(byKind, k)
		}
	}
	if len(matches) == 0 {
		matches = byKind
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

// Close closes every open provider that implements io.Closer (a provider
// registered through a Driver and never used was never opened) and
// returns their errors joined.
func (r *Registry) Close() error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(r.providers)) {
		e := r.providers[name]
		e.mu.Lock()
		p := e.p
		e.mu.Unlock()
		if c, ok := p.(interface{ Close() error }); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("registry: close %s: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

func isNilPointer(p any) bool {
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
