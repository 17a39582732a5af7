package registry_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/registry/providertest"
)

// registerGrouped registers f, serving groups of its own, the way such
// a provider is registered: through a Driver whose Info lists them.
func registerGrouped(reg *registry.Registry, f *providertest.Fake, groups ...string) error {
	d := testDriver{name: f.Name(), groups: groups}
	for _, k := range f.Kinds() {
		d.kinds = append(d.kinds, k.Kind)
	}
	return reg.RegisterDriver(d, func() (registry.Provider, error) { return f, nil })
}

// testDriver describes a fake provider without opening it.
type testDriver struct {
	name   string
	groups []string
	kinds  []string
}

func (d testDriver) Info() registry.DriverInfo {
	info := registry.DriverInfo{Name: d.name, Groups: d.groups}
	for _, k := range d.kinds {
		info.Kinds = append(info.Kinds, registry.Kind{Kind: k})
	}
	return info
}

func (d testDriver) DecodeConfig(*config.Section) (registry.DriverConfig, error) { return nil, nil }
func (d testDriver) Open(context.Context, registry.DriverConfig, registry.OpenOptions) (registry.Provider, error) {
	return nil, errors.New("not used")
}

func TestThirdPartyGroupRouting(t *testing.T) {
	var reg registry.Registry
	files := providertest.NewFake("files", "File")
	require.NoError(t, registerGrouped(&reg, files, "files.example.com", "archive.example.com"))
	require.NoError(t, reg.Register(providertest.NewFake("vms", "Machine")))
	assert.Equal(t, []string{"archive.example.com", "files.example.com", "vms.openctl.io"}, reg.Groups())

	for _, apiVersion := range []string{"files.example.com/v1", "archive.example.com/v2"} {
		p, k, err := reg.Lookup(manifest.ID{APIVersion: apiVersion, Kind: "File", Name: "motd"})
		require.NoError(t, err, apiVersion)
		assert.Equal(t, "files", p.Name())
		assert.Equal(t, "File", k.Kind)
	}
	// The built-in suffix is not implied for a provider with groups of its own.
	_, _, err := reg.Lookup(manifest.ID{APIVersion: "files.openctl.io/v1", Kind: "File", Name: "motd"})
	var ug *registry.UnknownGroupError
	require.ErrorAs(t, err, &ug)

	// $ref targets resolve through Get whichever group serves them.
	files.Put(&manifest.Resource{APIVersion: "files.example.com/v1", Kind: "File", Metadata: manifest.Metadata{Name: "motd"}, Status: map[string]any{"size": int64(3)}})
	got, err := reg.Get(t.Context(), manifest.ID{APIVersion: "files.example.com/v1", Kind: "File", Name: "motd"})
	require.NoError(t, err)
	assert.Equal(t, int64(3), got.Status["size"])

	kinds := reg.Kinds()
	require.Len(t, kinds, 2)
	assert.Equal(t, "files", kinds[0].Provider)
	assert.Equal(t, "archive.example.com", kinds[0].Group)
	assert.Equal(t, "File", kinds[0].Kind.Kind)
}

func TestGroupsAreClaimedOnce(t *testing.T) {
	var reg registry.Registry
	require.NoError(t, registerGrouped(&reg, providertest.NewFake("files", "File"), "files.example.com"))

	err := registerGrouped(&reg, providertest.NewFake("other", "File"), "files.example.com")
	assert.ErrorIs(t, err, errcode.Invalid)
	assert.ErrorContains(t, err, `providers "files" and "other" both claim API group "files.example.com"`)

	// Within one Register call too, and nothing of that call is
	// registered.
	require.NoError(t, registerGrouped(&reg, providertest.NewFake("b", "X"), "b.example.com"))
	err = reg.Register(providertest.NewFake("a", "X"), providertest.NewFake("a", "Y"))
	assert.ErrorIs(t, err, errcode.Invalid)
	assert.Equal(t, []string{"b", "files"}, reg.Names())

	for _, bad := range [][]string{{"files"}, {"Files.example.com"}, {"x.example.com", "x.example.com"}, {"-x.example.com"}} {
		err := registerGrouped(&reg, providertest.NewFake("bad", "File"), bad...)
		assert.ErrorIs(t, err, errcode.Invalid, "%q", bad)
	}
	err = reg.RegisterDriver(testDriver{name: "drv", groups: []string{"files.example.com"}, kinds: []string{"File"}}, func() (registry.Provider, error) { return nil, nil })
	assert.ErrorContains(t, err, "both claim API group")
}

func TestRegisterDriverOpensOnFirstUseOnce(t *testing.T) {
	var reg registry.Registry
	var opened atomic.Int32
	fake := providertest.NewFake("files", "File")
	d := testDriver{name: "files", groups: []string{"files.example.com"}, kinds: []string{"File"}}
	require.NoError(t, reg.RegisterDriver(d, func() (registry.Provider, error) {
		opened.Add(1)
		return fake, nil
	}))
	unconfigured := testDriver{name: "vms", kinds: []string{"Machine"}}
	require.NoError(t, reg.RegisterDriver(unconfigured, func() (registry.Provider, error) {
		return nil, errcode.New(errcode.Invalid, "vms: not configured: add providers.vms")
	}))

	// Names, groups, kinds and routing need no provider.
	assert.Equal(t, []string{"files", "vms"}, reg.Names())
	kr, err := reg.ResolveKind("machine")
	require.NoError(t, err)
	assert.Equal(t, "vms.openctl.io", kr.Group)
	name, _, err := reg.Route(manifest.ID{APIVersion: "vms.openctl.io/v1", Kind: "Machine", Name: "m"})
	require.NoError(t, err)
	assert.Equal(t, "vms", name)
	assert.Zero(t, opened.Load())

	// The first lookups open it, once, even concurrently.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			p, _, err := reg.Lookup(manifest.ID{APIVersion: "files.example.com/v1", Kind: "File", Name: "x"})
			assert.NoError(t, err)
			assert.Same(t, fake, p)
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), opened.Load())

	// A provider that cannot be opened fails only what routes to it, with
	// its driver's message.
	_, _, err = reg.Lookup(manifest.ID{APIVersion: "vms.openctl.io/v1", Kind: "Machine", Name: "m"})
	assert.ErrorIs(t, err, errcode.Invalid)
	assert.ErrorContains(t, err, "add providers.vms")
	require.NoError(t, reg.Close())
}

func TestRegisterDriverChecksTheOpenedKinds(t *testing.T) {
	var reg registry.Registry
	d := testDriver{name: "files", kinds: []string{"File", "Dir"}}
	require.NoError(t, reg.RegisterDriver(d, func() (registry.Provider, error) {
		return providertest.NewFake("files", "File"), nil
	}))
	_, _, err := reg.Lookup(manifest.ID{APIVersion: "files.openctl.io/v1", Kind: "File", Name: "x"})
	assert.ErrorIs(t, err, errcode.Internal)
	assert.ErrorContains(t, err, `registry: provider "files" serves kinds File, its driver said Dir, File`)

	assert.ErrorIs(t, reg.RegisterDriver(nil, nil), errcode.Invalid)
	assert.ErrorIs(t, reg.RegisterDriver(testDriver{name: "x"}, func() (registry.Provider, error) { return nil, nil }), errcode.Invalid, "no kinds")
}
