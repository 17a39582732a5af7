// Package plugins_test checks the example exec plugins through an
// embedding program (plugin.Load and openctl.New) and through the CLI
// (testscript, plugins installed in $OPENCTL_HOME/plugins).
package plugins_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/cli"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/plugin"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

// binDir holds the built example plugins.
var binDir string

func TestMain(m *testing.M) {
	testscript.Main(buildFirst{m}, map[string]func(){
		"openctl": func() { cli.Main(cli.Options{Drivers: []registry.Driver{proxmox.Driver{}}}) },
	})
}

type buildFirst struct{ m *testing.M }

func (b buildFirst) Run() int {
	dir, err := os.MkdirTemp("", "openctl-example-plugins-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	for _, name := range []string{"openctl-notes", "openctl-vmset"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), "./"+name).CombinedOutput(); err != nil {
			os.Stderr.Write(out)
			return 1
		}
	}
	memo, err := os.ReadFile("openctl-memo/openctl-memo")
	if err != nil || os.WriteFile(filepath.Join(dir, "openctl-memo"), memo, 0o755) != nil {
		return 1
	}
	binDir = dir
	return b.m.Run()
}

func TestEmbedding(t *testing.T) {
	for _, tt := range []struct{ name, kind, group string }{
		{"notes", "Note", "notes.openctl.io/v1"},
		{"memo", "Memo", "memo.openctl.io/v1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			p, err := plugin.Load(ctx, filepath.Join(binDir, "openctl-"+tt.name), plugin.Options{})
			require.NoError(t, err)
			prov := plugin.New(p, plugin.NewConfig(map[string]any{"dir": t.TempDir()}), plugin.Options{})
			e, err := openctl.New(openctl.WithProviders(prov), openctl.WithStore(state.NewMemory()))
			require.NoError(t, err)

			r := &manifest.Resource{APIVersion: tt.group, Kind: tt.kind, Metadata: manifest.Metadata{Name: "first"}, Spec: map[string]any{"text": "hello"}}
			_, err = e.Apply(ctx, r)
			require.NoError(t, err)
			live, err := prov.Get(ctx, r.ID())
			require.NoError(t, err)
			assert.Equal(t, "hello", live.Spec["text"])
			all, err := prov.List(ctx, tt.kind)
			require.NoError(t, err)
			assert.Len(t, all, 1)

			_, err = e.Delete(ctx, r.ID())
			require.NoError(t, err)
			_, err = prov.Get(ctx, r.ID())
			assert.ErrorIs(t, err, errcode.NotFound)
		})
	}
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, "home")
			env.Setenv("OPENCTL_HOME", home)
			env.Setenv("OPENCTL_STATE_PASSPHRASE", "correct horse battery staple")
			env.Setenv("NO_COLOR", "1")
			if err := os.MkdirAll(filepath.Join(home, "plugins"), 0o755); err != nil {
				return err
			}
			// A simulated Proxmox VE per script, configured through the
			// environment, for the VM sets.
			srv, err := proxmoxtest.New(proxmoxtest.SandboxLayout(3, proxmoxtest.DefaultSharedStorage)...)
			if err != nil {
				return err
			}
			if err := srv.Start("127.0.0.1:0"); err != nil {
				return err
			}
			env.Defer(srv.Close)
			id, secret := srv.Token()
			env.Setenv(proxmox.EnvURL, srv.URL())
			env.Setenv(proxmox.EnvTokenID, id)
			env.Setenv(proxmox.EnvTokenSecret, secret)
			env.Setenv(proxmox.EnvFingerprint, srv.Fingerprint())
			for _, n := range []string{"openctl-notes", "openctl-memo", "openctl-vmset"} {
				if err := os.Symlink(filepath.Join(binDir, n), filepath.Join(home, "plugins", n)); err != nil {
					return err
				}
			}
			return nil
		},
	})
}

// TestEmbeddingDispatch runs the composite example through an embedding
// program: its VMs are dispatched to the compiled-in Proxmox VE provider
// (on the simulator), recorded as the set's children, and deleted with
// it.
func TestEmbeddingDispatch(t *testing.T) {
	ctx := t.Context()
	box, err := proxmox.Driver{}.Sandbox(ctx, registry.SandboxOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = box.Close() })
	vms, err := proxmox.Driver{}.Open(ctx, box.Config, registry.OpenOptions{})
	require.NoError(t, err)

	reg := &registry.Registry{}
	p, err := plugin.Load(ctx, filepath.Join(binDir, "openctl-vmset"), plugin.Options{})
	require.NoError(t, err)
	sets := plugin.New(p, plugin.NewConfig(map[string]any{"dir": t.TempDir()}), plugin.Options{Dispatcher: plugin.RegistryDispatcher{Registry: reg}})
	require.NoError(t, reg.Register(vms, sets))
	st := state.NewMemory()
	e, err := openctl.New(openctl.WithRegistry(reg), openctl.WithStore(st))
	require.NoError(t, err)

	set := &manifest.Resource{APIVersion: "vmset.openctl.io/v1", Kind: "VMSet", Metadata: manifest.Metadata{Name: "db"}, Spec: map[string]any{
		"count": int64(2),
		"vm":    map[string]any{"nodes": []any{"pve1", "pve2", "pve3"}, "template": map[string]any{"name": "ubuntu-24.04-cloud"}},
	}}
	_, err = e.Apply(ctx, set)
	require.NoError(t, err)
	rec, err := st.Get(ctx, set.ID())
	require.NoError(t, err)
	require.Len(t, rec.Children, 2)
	assert.Equal(t, "Ready", rec.Status["phase"])
	for _, id := range rec.Children {
		live, err := vms.Get(ctx, id)
		require.NoError(t, err, "the child exists on the simulator")
		assert.Equal(t, "running", live.Status["state"])
		child, err := st.Get(ctx, id)
		require.NoError(t, err, "and is recorded")
		require.NotNil(t, child.Owner)
		assert.Equal(t, set.ID(), *child.Owner)
	}

	rep, err := e.Delete(ctx, set.ID())
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Count(openctl.OutcomeDeleted))
	for _, id := range rec.Children {
		_, err := vms.Get(ctx, id)
		assert.ErrorIs(t, err, errcode.NotFound, "deleted with its set")
	}
	left, err := st.List(ctx, state.Filter{})
	require.NoError(t, err)
	assert.Empty(t, left)
}
