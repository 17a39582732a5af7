package registry_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/registry/providertest"
)

// The registry is the Getter through which cross-provider $refs resolve.
var _ refs.Getter = (*registry.Registry)(nil)

// stub is a minimal provider with full control over its kinds. It
// implements none of the optional interfaces.
type stub struct {
	name  string
	kinds []registry.Kind
}

var _ registry.Provider = (*stub)(nil)

func newStub(name string, kinds ...registry.Kind) *stub { return &stub{name: name, kinds: kinds} }

func (s *stub) Name() string                              { return s.name }
func (s *stub) Kinds() []registry.Kind                    { return s.kinds }
func (s *stub) Delete(context.Context, manifest.ID) error { return nil }
func (s *stub) Get(_ context.Context, id manifest.ID) (*manifest.Resource, error) {
	return nil, fmt.Errorf("stub: %s: %w", id.Short(), errcode.NotFound)
}
func (s *stub) Apply(_ context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	return r.DeepCopy(), nil
}

// closer is a Fake that also implements io.Closer.
type closer struct {
	*providertest.Fake
	err    error
	closed atomic.Int32
}

func (c *closer) Close() error {
	c.closed.Add(1)
	return c.err
}

func newCloser(name string, err error) *closer {
	return &closer{Fake: providertest.NewFake(name, "Thing"), err: err}
}

func id(group, kind, name string) manifest.ID {
	return manifest.ID{APIVersion: group + ".openctl.io/v1", Kind: kind, Name: name}
}

func res(i manifest.ID) *manifest.Resource {
	return &manifest.Resource{APIVersion: i.APIVersion, Kind: i.Kind, Metadata: manifest.Metadata{Name: i.Name}}
}

func TestZeroValue(t *testing.T) {
	var reg registry.Registry
	assert.Empty(t, reg.Names())
	assert.Empty(t, reg.Groups())
	assert.Empty(t, reg.Kinds())
	require.NoError(t, reg.Close())

	_, _, err := reg.Lookup(id("alpha", "Thing", "x"))
	require.Error(t, err)
	assert.ErrorIs(t, err, errcode.Invalid)
	assert.Contains(t, err.Error(), `"alpha.openctl.io"`)
	assert.Contains(t, err.Error(), "(registered: none)")

	_, err = reg.Get(t.Context(), id("alpha", "Thing", "x"))
	assert.ErrorIs(t, err, errcode.Invalid)

	_, err = reg.ResolveKind("thing")
	assert.ErrorIs(t, err, errcode.Invalid)
}

func TestRegisterErrors(t *testing.T) {
	tests := []struct {
		name    string
		before  []registry.Provider // registered first, must succeed
		ps      []registry.Provider
		wantErr string
	}{
		{
			name:    "nil provider",
			ps:      []registry.Provider{providertest.NewFake("alpha", "Thing"), nil},
			wantErr: "registry: nil provider",
		},
		{
			name:    "empty name",
			ps:      []registry.Provider{newStub("", registry.Kind{Kind: "Thing"})},
			wantErr: "has an empty name",
		},
		{
			name:    "not a DNS-1123 label",
			ps:      []registry.Provider{newStub("Bad_Name", registry.Kind{Kind: "Thing"})},
			wantErr: `provider name "Bad_Name" is not a DNS-1123 label`,
		},
		{
			name:    "name with a dot",
			ps:      []registry.Provider{newStub("a.b", registry.Kind{Kind: "Thing"})},
			wantErr: `provider name "a.b" is not a DNS-1123 label`,
		},
		{
			name:    "duplicate of a registered provider",
			before:  []registry.Provider{providertest.NewFake("alpha", "Thing")},
			ps:      []registry.Provider{providertest.NewFake("beta", "Thing"), providertest.NewFake("alpha", "Other")},
			wantErr: `provider "alpha" is already registered`,
		},
		{
			name:    "duplicate within one call",
			ps:      []registry.Provider{providertest.NewFake("alpha", "Thing"), providertest.NewFake("alpha", "Other")},
			wantErr: `provider "alpha" is already registered`,
		},
		{
			name:    "no kinds",
			ps:      []registry.Provider{newStub("alpha")},
			wantErr: `provider "alpha" serves no kinds`,
		},
		{
			name:    "lower-case kind",
			ps:      []registry.Provider{newStub("alpha", registry.Kind{Kind: "Thing"}, registry.Kind{Kind: "thing"})},
			wantErr: `kind "thing" is not a valid kind`,
		},
		{
			name:    "empty kind",
			ps:      []registry.Provider{newStub("alpha", registry.Kind{Kind: ""})},
			wantErr: "kind is empty",
		},
		{
			name:    "valid provider before an invalid one",
			ps:      []registry.Provider{providertest.NewFake("alpha", "Thing"), newStub("beta")},
			wantErr: `provider "beta" serves no kinds`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reg registry.Registry
			require.NoError(t, reg.Register(tt.before...))
			want := reg.Names()

			err := reg.Register(tt.ps...)
			require.Error(t, err)
			assert.ErrorIs(t, err, errcode.Invalid)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Regexp(t, `^registry: `, err.Error())
			assert.Equal(t, want, reg.Names(), "a failed Register must register nothing")
		})
	}
}

func TestRegister(t *testing.T) {
	var reg registry.Registry
	require.NoError(t, reg.Register()) // nothing to do
	assert.Empty(t, reg.Names())

	require.NoError(t, reg.Register(providertest.NewFake("zeta", "Thing"), providertest.NewFake("alpha", "Thing")))
	require.NoError(t, reg.Register(providertest.NewFake("mid-1", "Widget")))
	assert.Equal(t, []string{"alpha", "mid-1", "zeta"}, reg.Names())
	assert.Equal(t, []string{"alpha.openctl.io", "mid-1.openctl.io", "zeta.openctl.io"}, reg.Groups())

	p, err := reg.Provider("mid-1")
	require.NoError(t, err)
	assert.Equal(t, "mid-1", p.Name())

	_, err = reg.Provider("nope")
	assert.ErrorIs(t, err, errcode.Invalid)
	assert.EqualError(t, err, `registry: no provider named "nope" (registered: alpha, mid-1, zeta) (INVALID_REQUEST)`)
}

// twoProviders returns a registry with "alpha" serving Thing and "beta"
// serving Thing and Widget, and the two fakes.
func twoProviders(t *testing.T) (*registry.Registry, *providertest.Fake, *providertest.Fake) {
	t.Helper()
	a := providertest.NewFake("alpha", "Thing")
	b := providertest.NewFake("beta", "Widget", "Thing")
	reg := &registry.Registry{}
	require.NoError(t, reg.Register(a, b))
	return reg, a, b
}

func TestLookup(t *testing.T) {
	reg, a, b := twoProviders(t)
	require.NoError(t, reg.Register(newStub("gamma",
		registry.Kind{Kind: "Gadget", Versions: []string{"v1", "v1beta1"}},
		registry.Kind{Kind: "Gizmo"},
	)))

	tests := []struct {
		name     string
		id       manifest.ID
		wantProv registry.Provider
		wantKind string
		wantErr  string // substring; "" means success
	}{
		{name: "alpha thing", id: id("alpha", "Thing", "x"), wantProv: a, wantKind: "Thing"},
		{name: "beta thing", id: id("beta", "Thing", "x"), wantProv: b, wantKind: "Thing"},
		{name: "beta widget", id: id("beta", "Widget", "x"), wantProv: b, wantKind: "Widget"},
		{name: "served version", id: manifest.ID{APIVersion: "gamma.openctl.io/v1beta1", Kind: "Gadget"}, wantKind: "Gadget"},
		{name: "any version", id: manifest.ID{APIVersion: "gamma.openctl.io/v7alpha2", Kind: "Gizmo"}, wantKind: "Gizmo"},
		{
			name:    "version not served",
			id:      manifest.ID{APIVersion: "gamma.openctl.io/v2", Kind: "Gadget"},
			wantErr: "registry: gamma.openctl.io Gadget: version v2 not served (served: v1, v1beta1)",
		},
		{
			name:    "unknown kind",
			id:      id("beta", "Gadget", "x"),
			wantErr: `registry: provider "beta" does not serve kind "Gadget" (it serves: Thing, Widget)`,
		},
		{
			name:    "kind is case-sensitive",
			id:      id("alpha", "thing", "x"),
			wantErr: `does not serve kind "thing"`,
		},
		{
			name:    "unknown group",
			id:      id("aws", "Instance", "x"),
			wantErr: `registry: no provider serves apiVersion group "aws.openctl.io" (registered: alpha.openctl.io, beta.openctl.io, gamma.openctl.io)`,
		},
		{name: "empty apiVersion", id: manifest.ID{Kind: "Thing"}, wantErr: "registry: manifest: apiVersion is empty"},
		{name: "no version", id: manifest.ID{APIVersion: "alpha.openctl.io", Kind: "Thing"}, wantErr: "is not of the form"},
		{name: "unserved domain", id: manifest.ID{APIVersion: "alpha.example.com/v1", Kind: "Thing"}, wantErr: `no provider serves apiVersion group "alpha.example.com"`},
		{name: "bad version", id: manifest.ID{APIVersion: "alpha.openctl.io/1", Kind: "Thing"}, wantErr: "is not of the form"},
		{name: "upper-case group", id: manifest.ID{APIVersion: "Alpha.openctl.io/v1", Kind: "Thing"}, wantErr: "is not a DNS-1123 subdomain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, k, err := reg.Lookup(tt.id)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, errcode.Invalid)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Nil(t, p)
				assert.Zero(t, k)
				return
			}
			require.NoError(t, err)
			if tt.wantProv != nil {
				assert.Same(t, tt.wantProv, p)
			}
			assert.Equal(t, tt.id.Group(), p.Name()+manifest.APIGroupSuffix)
			assert.Equal(t, tt.wantKind, k.Kind)
		})
	}
}

func TestUnknownGroupError(t *testing.T) {
	var reg registry.Registry
	// Registered out of order: the error lists them sorted.
	require.NoError(t, reg.Register(providertest.NewFake("zeta", "Thing")))
	require.NoError(t, reg.Register(providertest.NewFake("alpha", "Thing"), providertest.NewFake("mid", "Thing")))

	_, _, err := reg.Lookup(id("aws", "Instance", "x"))
	wrapped := fmt.Errorf("engine: %w", err)

	var ug *registry.UnknownGroupError
	require.ErrorAs(t, wrapped, &ug)
	assert.Equal(t, "aws.openctl.io", ug.Group)
	assert.Equal(t, []string{"alpha.openctl.io", "mid.openctl.io", "zeta.openctl.io"}, ug.Registered)
	assert.ErrorIs(t, wrapped, errcode.Invalid)
	assert.NotErrorIs(t, wrapped, errcode.NotFound)
	assert.Equal(t,
		`registry: no provider serves apiVersion group "aws.openctl.io" (registered: alpha.openctl.io, mid.openctl.io, zeta.openctl.io)`,
		err.Error())

	empty := &registry.UnknownGroupError{Group: "aws.openctl.io"}
	assert.Equal(t, `registry: no provider serves apiVersion group "aws.openctl.io" (registered: none)`, empty.Error())
}

// TestUnknownGroupErrorCode documents a known bug: errors.Is(err,
// errcode.Invalid) holds for an *UnknownGroupError but errcode.Of (and so
// openctl.Code, and the code refs gives a failed Get) says Internal,
// because the type has an Is method but no Unwrap returning the code (as
// graph.CycleError does).
func TestUnknownGroupErrorCode(t *testing.T) {
	var reg registry.Registry
	_, _, err := reg.Lookup(id("aws", "Instance", "x"))
	assert.Equal(t, errcode.Invalid, errcode.Of(err))
	assert.Equal(t, errcode.Invalid, errcode.Of(fmt.Errorf("engine: %w", err)))
}

func TestGet(t *testing.T) {
	reg, a, b := twoProviders(t)
	ctx := t.Context()
	inA, inB := id("alpha", "Thing", "one"), id("beta", "Thing", "one")
	a.Put(res(inA))
	b.Put(res(inB))

	got, err := reg.Get(ctx, inA)
	require.NoError(t, err)
	assert.Equal(t, inA, got.ID())

	got, err = reg.Get(ctx, inB)
	require.NoError(t, err)
	assert.Equal(t, inB, got.ID())
	assert.Equal(t, 1, a.Calls().Get, "each Get goes to exactly one provider")
	assert.Equal(t, 1, b.Calls().Get)

	tests := []struct {
		name string
		id   manifest.ID
		code errcode.Code
	}{
		{name: "missing in alpha", id: id("alpha", "Thing", "two"), code: errcode.NotFound},
		{name: "missing in beta, present in alpha", id: id("beta", "Thing", "nope"), code: errcode.NotFound},
		{name: "unknown group", id: id("gamma", "Thing", "one"), code: errcode.Invalid},
		{name: "unknown kind", id: id("alpha", "Widget", "one"), code: errcode.Invalid},
		{name: "malformed apiVersion", id: manifest.ID{APIVersion: "alpha/v1", Kind: "Thing", Name: "one"}, code: errcode.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := reg.Get(ctx, tt.id)
			require.Error(t, err)
			assert.Nil(t, r)
			assert.ErrorIs(t, err, tt.code)
		})
	}
	assert.Equal(t, 2, a.Calls().Get, "routing errors must not reach a provider")
	assert.Equal(t, 2, b.Calls().Get)
}

func TestList(t *testing.T) {
	reg, a, b := twoProviders(t)
	require.NoError(t, reg.Register(newStub("nolist", registry.Kind{Kind: "Thing"})))
	ctx := t.Context()
	a.Put(res(id("alpha", "Thing", "b")))
	a.Put(res(id("alpha", "Thing", "a")))
	b.Put(res(id("beta", "Thing", "c")))

	got, err := reg.List(ctx, "alpha.openctl.io/v1", "Thing")
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "a", got[0].Metadata.Name)
	assert.Equal(t, "b", got[1].Metadata.Name)

	got, err = reg.List(ctx, "beta.openctl.io/v1", "Widget")
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.Equal(t, 1, b.Calls().List)

	tests := []struct {
		name, apiVersion, kind, wantErr string
	}{
		{name: "provider without Lister", apiVersion: "nolist.openctl.io/v1", kind: "Thing", wantErr: `registry: provider "nolist" cannot list Thing`},
		{name: "unknown group", apiVersion: "gamma.openctl.io/v1", kind: "Thing", wantErr: "no provider serves"},
		{name: "unknown kind", apiVersion: "alpha.openctl.io/v1", kind: "Widget", wantErr: "does not serve kind"},
		{name: "malformed apiVersion", apiVersion: "alpha", kind: "Thing", wantErr: "is not of the form"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := reg.List(ctx, tt.apiVersion, tt.kind)
			require.Error(t, err)
			assert.Nil(t, got)
			assert.ErrorIs(t, err, errcode.Invalid)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// kindRegistry returns a registry with two providers that share the kind
// Node.
func kindRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	var reg registry.Registry
	require.NoError(t, reg.Register(
		newStub("proxmox",
			registry.Kind{Kind: "VirtualMachine", Plural: "virtualmachines", ShortNames: []string{"vm", "vms"}},
			registry.Kind{Kind: "Node", Plural: "nodes", ReadOnly: true},
		),
		newStub("k3s",
			registry.Kind{Kind: "Node", Plural: "nodes", ShortNames: []string{"no"}, Aliases: []string{"K3sNode"}},
			registry.Kind{Kind: "Cluster", Plural: "clusters", Composite: true},
		),
	))
	return &reg
}

func TestResolveKind(t *testing.T) {
	reg := kindRegistry(t)
	tests := []struct {
		name         string
		in           string
		wantProvider string
		wantKind     string
		wantErr      string
	}{
		{name: "kind", in: "VirtualMachine", wantProvider: "proxmox", wantKind: "VirtualMachine"},
		{name: "kind lower-case", in: "virtualmachine", wantProvider: "proxmox", wantKind: "VirtualMachine"},
		{name: "kind upper-case", in: "VIRTUALMACHINE", wantProvider: "proxmox", wantKind: "VirtualMachine"},
		{name: "plural", in: "virtualmachines", wantProvider: "proxmox", wantKind: "VirtualMachine"},
		{name: "short name", in: "vm", wantProvider: "proxmox", wantKind: "VirtualMachine"},
		{name: "second short name", in: "vms", wantProvider: "proxmox", wantKind: "VirtualMachine"},
		{name: "short name any case", in: "VM", wantProvider: "proxmox", wantKind: "VirtualMachine"},
		{name: "other provider", in: "clusters", wantProvider: "k3s", wantKind: "Cluster"},
		{name: "unique short name of shared kind", in: "no", wantProvider: "k3s", wantKind: "Node"},
		{name: "qualified", in: "vm.proxmox", wantProvider: "proxmox", wantKind: "VirtualMachine"},
		{name: "qualified shared kind", in: "node.proxmox", wantProvider: "proxmox", wantKind: "Node"},
		{name: "qualified shared kind other provider", in: "Nodes.K3S", wantProvider: "k3s", wantKind: "Node"},
		{name: "alias", in: "k3snode", wantProvider: "k3s", wantKind: "Node"},
		{name: "alias as written", in: "K3sNode", wantProvider: "k3s", wantKind: "Node"},
		{name: "ambiguous kind", in: "node", wantErr: `registry: kind "node" is ambiguous; use one of node.k3s, node.proxmox`},
		{name: "ambiguous plural", in: "Nodes", wantErr: `registry: kind "Nodes" is ambiguous; use one of nodes.k3s, nodes.proxmox`},
		{name: "unknown", in: "bucket", wantErr: `registry: unknown kind "bucket"`},
		{name: "qualified by the wrong provider", in: "vm.k3s", wantErr: `registry: unknown kind "vm.k3s"`},
		{name: "qualified by an unknown provider", in: "vm.aws", wantErr: `registry: unknown kind "vm.aws"`},
		{name: "plural is not case-folded kind", in: "virtualmachiness", wantErr: "unknown kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := reg.ResolveKind(tt.in)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, errcode.Invalid)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Zero(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantProvider, got.Provider)
			assert.Equal(t, tt.wantKind, got.Kind.Kind)
		})
	}

	// The KindRef carries the whole Kind.
	got, err := reg.ResolveKind("cluster")
	require.NoError(t, err)
	assert.True(t, got.Composite)
	got, err = reg.ResolveKind("node.proxmox")
	require.NoError(t, err)
	assert.True(t, got.ReadOnly)
}

// TestResolveKindEmptyName documents a known bug: a kind declared without
// a Plural has Plural "", which equals the lower-cased name when the name
// (or its part before the dot) is empty, so "" and ".p" resolve to it.
func TestResolveKindEmptyName(t *testing.T) {
	var reg registry.Registry
	require.NoError(t, reg.Register(newStub("p", registry.Kind{Kind: "Thing"})))
	for _, in := range []string{"", ".p"} {
		_, err := reg.ResolveKind(in)
		assert.ErrorIs(t, err, errcode.Invalid, "ResolveKind(%q)", in)
	}
}

func TestKinds(t *testing.T) {
	reg := kindRegistry(t)
	var got []string
	for _, k := range reg.Kinds() {
		got = append(got, k.Provider+"/"+k.Kind.Kind)
	}
	assert.Equal(t, []string{"k3s/Cluster", "k3s/Node", "proxmox/Node", "proxmox/VirtualMachine"}, got)
	assert.Equal(t, []string{"k3s.openctl.io", "proxmox.openctl.io"}, reg.Groups())
	assert.Equal(t, []string{"k3s", "proxmox"}, reg.Names())

	// The returned slices are the caller's.
	names := reg.Names()
	names[0] = "changed"
	assert.Equal(t, []string{"k3s", "proxmox"}, reg.Names())
	groups := reg.Groups()
	groups[0] = "changed"
	assert.Equal(t, []string{"k3s.openctl.io", "proxmox.openctl.io"}, reg.Groups())
}

func TestClose(t *testing.T) {
	errA := errors.New("a: connection reset")
	errC := errcode.New(errcode.Transient, "c: timeout")
	a := newCloser("a", errA)
	b := newCloser("b", nil)
	c := newCloser("c", errC)
	plain := providertest.NewFake("d", "Thing") // no Close method: skipped

	var reg registry.Registry
	require.NoError(t, reg.Register(c, plain, a, b))

	err := reg.Close()
	require.Error(t, err)
	assert.ErrorIs(t, err, errA)
	assert.ErrorIs(t, err, errC)
	assert.ErrorIs(t, err, errcode.Transient)
	// Joined in provider-name order, each naming its provider.
	assert.Equal(t, "registry: close a: a: connection reset\nregistry: close c: c: timeout (TRANSIENT)", err.Error())
	for _, p := range []*closer{a, b, c} {
		assert.Equal(t, int32(1), p.closed.Load(), "provider %s closed once", p.Name())
	}

	t.Run("all succeed", func(t *testing.T) {
		var reg registry.Registry
		ok := newCloser("ok", nil)
		require.NoError(t, reg.Register(ok, providertest.NewFake("plain", "Thing")))
		require.NoError(t, reg.Close())
		assert.Equal(t, int32(1), ok.closed.Load())
	})
}

func TestConcurrentUse(t *testing.T) {
	var reg registry.Registry
	base := providertest.NewFake("base", "Thing")
	base.Put(res(id("base", "Thing", "x")))
	require.NoError(t, reg.Register(base))

	const writers, readers, rounds = 16, 8, 50
	ctx := t.Context()
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			name := fmt.Sprintf("p%d", i)
			assert.NoError(t, reg.Register(providertest.NewFake(name, "Thing")))
			// A second registration of the same name always loses.
			assert.ErrorIs(t, reg.Register(providertest.NewFake(name, "Thing")), errcode.Invalid)
		})
	}
	for range readers {
		wg.Go(func() {
			for j := range rounds {
				p, _, err := reg.Lookup(id("base", "Thing", "x"))
				if assert.NoError(t, err) {
					assert.Equal(t, "base", p.Name())
				}
				_, err = reg.Get(ctx, id("base", "Thing", "x"))
				assert.NoError(t, err)
				_, err = reg.Get(ctx, id(fmt.Sprintf("p%d", j%writers), "Thing", "x"))
				assert.Error(t, err) // NotFound or not registered yet: both errors
				assert.NotEmpty(t, reg.Names())
				assert.NotEmpty(t, reg.Groups())
				assert.NotEmpty(t, reg.Kinds())
				_, _ = reg.ResolveKind("thing")
				_, _ = reg.List(ctx, "base.openctl.io/v1", "Thing")
			}
		})
	}
	wg.Wait()

	assert.Len(t, reg.Names(), writers+1)
	_, err := reg.ResolveKind("thing")
	assert.ErrorIs(t, err, errcode.Invalid, "Thing is served by every provider")
	require.NoError(t, reg.Close())
}

// A short name or plural someone chose wins over another kind's bare
// name: Proxmox's Node is "node" to its users, the K3s Node is node.k3s.
func TestResolveKindNamesBeatKinds(t *testing.T) {
	var reg registry.Registry
	require.NoError(t, reg.Register(
		newStub("proxmox", registry.Kind{Kind: "Node", Plural: "nodes", ShortNames: []string{"node"}}),
		newStub("k3s", registry.Kind{Kind: "Node", Plural: "k3snodes"}),
	))
	got, err := reg.ResolveKind("node")
	require.NoError(t, err)
	assert.Equal(t, "proxmox", got.Provider)
	got, err = reg.ResolveKind("Node.k3s")
	require.NoError(t, err)
	assert.Equal(t, "k3s", got.Provider)
	got, err = reg.ResolveKind("k3snodes")
	require.NoError(t, err)
	assert.Equal(t, "k3s", got.Provider)
}

// An alias is another name of a kind: Canonical reads it as the kind,
// Lookup refuses it unread (the engine canonicalises first), and a
// provider may not give one name twice.
func TestKindAliases(t *testing.T) {
	reg := kindRegistry(t)
	alias := manifest.ID{APIVersion: "k3s.openctl.io/v1", Kind: "K3sNode", Name: "cp-0"}
	assert.Equal(t, manifest.ID{APIVersion: "k3s.openctl.io/v1", Kind: "Node", Name: "cp-0"}, reg.Canonical(alias))
	for _, id := range []manifest.ID{
		{APIVersion: "k3s.openctl.io/v1", Kind: "Node", Name: "cp-0"},
		{APIVersion: "proxmox.openctl.io/v1", Kind: "K3sNode", Name: "x"}, // another provider's group: not its alias
		{APIVersion: "nowhere.openctl.io/v1", Kind: "K3sNode", Name: "x"},
		{APIVersion: "not a version", Kind: "K3sNode", Name: "x"},
	} {
		assert.Equal(t, id, reg.Canonical(id))
	}
	_, _, err := reg.Lookup(alias)
	require.ErrorIs(t, err, errcode.Invalid)
	assert.ErrorContains(t, err, `registry: kind "K3sNode" is another name of "Node": route it as Node`)

	for name, kinds := range map[string][]registry.Kind{
		"alias of a kind's name": {{Kind: "Node", Aliases: []string{"Cluster"}}, {Kind: "Cluster"}},
		"alias given twice":      {{Kind: "Node", Aliases: []string{"Old"}}, {Kind: "Cluster", Aliases: []string{"Old"}}},
		"alias not a kind name":  {{Kind: "Node", Aliases: []string{"old-node"}}},
	} {
		var r registry.Registry
		err := r.Register(newStub("p", kinds...))
		assert.ErrorIs(t, err, errcode.Invalid, name)
	}
}
