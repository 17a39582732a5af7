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
	"github.com/openctl/openctl/state"
)

// binDir holds the built example plugins.
var binDir string

func TestMain(m *testing.M) {
	testscript.Main(buildFirst{m}, map[string]func(){
		"openctl": func() { cli.Main(cli.Options{}) },
	})
}

type buildFirst struct{ m *testing.M }

func (b buildFirst) Run() int {
	dir, err := os.MkdirTemp("", "openctl-example-plugins-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "openctl-notes"), "./openctl-notes").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		return 1
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
			for _, n := range []string{"openctl-notes", "openctl-memo"} {
				if err := os.Symlink(filepath.Join(binDir, n), filepath.Join(home, "plugins", n)); err != nil {
					return err
				}
			}
			return nil
		},
	})
}
