package manifest_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

func vmYAML(name string) string {
	return "apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata:\n  name: " + name + "\n"
}

// writeTree creates files (path → content) under a new temporary directory
// and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

func names(rs []*manifest.Resource) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Metadata.Name
	}
	return out
}

func TestLoadDirectory(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"b.yaml":            vmYAML("b"),
		"a.yml":             vmYAML("a1") + "---\n" + vmYAML("a2"),
		"c.json":            `{"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "metadata": {"name": "c"}}`,
		"d.YAML":            vmYAML("d"),
		"notes.txt":         "not a manifest",
		".hidden.yaml":      vmYAML("hidden"),
		".git/config.yaml":  vmYAML("git"),
		"sub/e.yaml":        vmYAML("e"),
		"sub/deeper/f.yaml": vmYAML("f"),
		"sub/.h/g.yaml":     vmYAML("g"),
		"z.yaml":            "# nothing here\n",
	})
	tests := []struct {
		name      string
		recursive bool
		want      []string
	}{
		{"flat", false, []string{"a1", "a2", "b", "c", "d"}},
		{"recursive", true, []string{"a1", "a2", "b", "c", "d", "f", "e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := manifest.Load(t.Context(), []string{dir}, manifest.LoadOptions{Recursive: tt.recursive})
			require.NoError(t, err)
			assert.Equal(t, tt.want, names(rs))
		})
	}

	rs, err := manifest.Load(t.Context(), []string{dir}, manifest.LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, at(filepath.Join(dir, "a.yml"), 6, 1), at(rs[1].Source.File, rs[1].Source.Line, rs[1].Source.Index))
}

func TestLoadFilesAndStdin(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"one.yaml":     vmYAML("one"),
		"manifest.txt": vmYAML("txt"), // named explicitly, so loaded
		".dot.yaml":    vmYAML("dot"), // likewise
	})
	stdin := strings.NewReader(vmYAML("in"))
	rs, err := manifest.Load(t.Context(), []string{
		filepath.Join(dir, "one.yaml"), "-", filepath.Join(dir, "manifest.txt"), filepath.Join(dir, ".dot.yaml"),
	}, manifest.LoadOptions{Stdin: stdin})
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "in", "txt", "dot"}, names(rs))
	assert.Equal(t, at("<stdin>", 1, 0), at(rs[1].Source.File, rs[1].Source.Line, rs[1].Source.Index))

	rs, err = manifest.Load(t.Context(), nil, manifest.LoadOptions{})
	require.NoError(t, err)
	assert.Empty(t, rs)
}

func TestLoadErrors(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a.yaml": vmYAML("web-01") + "specc: 1\n",
		"b.yaml": "apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata:\n  name: Bad\n",
		"c.yaml": vmYAML("ok"),
	})
	missing := filepath.Join(dir, "missing.yaml")
	rs, err := manifest.Load(t.Context(), []string{dir, missing}, manifest.LoadOptions{})
	assert.Nil(t, rs)
	require.Error(t, err)
	assert.ErrorIs(t, err, errcode.Invalid)
	assert.ErrorIs(t, err, fs.ErrNotExist)

	es := manifest.Errors(err)
	require.Len(t, es, 3)
	assert.Equal(t, filepath.Join(dir, "a.yaml"), es[0].File)
	assert.Equal(t, 5, es[0].Line)
	assert.Equal(t, "specc", es[0].Field)
	assert.Equal(t, filepath.Join(dir, "b.yaml"), es[1].File)
	assert.Equal(t, 4, es[1].Line)
	assert.Equal(t, "metadata.name", es[1].Field)
	assert.Equal(t, missing, es[2].File)
	assert.Equal(t, missing+": cannot read: no such file or directory", es[2].Error())
}

func TestLoadDuplicatesAcrossFiles(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a.yaml": "# first\n\n" + vmYAML("web-01"),
		"b.yaml": vmYAML("other") + "---\n" + vmYAML("web-01"),
	})
	_, err := manifest.Load(t.Context(), []string{dir}, manifest.LoadOptions{})
	require.Error(t, err)
	es := manifest.Errors(err)
	require.Len(t, es, 1)
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	assert.Equal(t, b, es[0].File)
	assert.Equal(t, 6, es[0].Line)
	assert.Equal(t, b+":6: duplicate resource VirtualMachine/web-01 (first defined at "+a+":3)", es[0].Error())
}

func TestCheckDuplicates(t *testing.T) {
	mk := func(av, kind, name, file string, line int) *manifest.Resource {
		return &manifest.Resource{APIVersion: av, Kind: kind, Metadata: manifest.Metadata{Name: name}, Source: manifest.Source{File: file, Line: line}}
	}
	tests := []struct {
		name string
		rs   []*manifest.Resource
		want []string
	}{
		{"none", nil, nil},
		{"distinct", []*manifest.Resource{
			mk("proxmox.openctl.io/v1", "VirtualMachine", "a", "x.yaml", 1),
			mk("proxmox.openctl.io/v1", "VirtualMachine", "b", "x.yaml", 5),
			mk("proxmox.openctl.io/v2", "VirtualMachine", "a", "x.yaml", 9), // another apiVersion: another ID
			mk("proxmox.openctl.io/v1", "Disk", "a", "x.yaml", 13),
			nil,
		}, nil},
		{"three copies", []*manifest.Resource{
			mk("proxmox.openctl.io/v1", "VirtualMachine", "a", "x.yaml", 1),
			mk("proxmox.openctl.io/v1", "VirtualMachine", "a", "y.yaml", 5),
			mk("proxmox.openctl.io/v1", "VirtualMachine", "a", "y.yaml", 9),
		}, []string{
			"y.yaml:5: duplicate resource VirtualMachine/a (first defined at x.yaml:1)",
			"y.yaml:9: duplicate resource VirtualMachine/a (first defined at x.yaml:1)",
		}},
		{"built in code", []*manifest.Resource{
			mk("proxmox.openctl.io/v1", "VirtualMachine", "a", "", 0),
			mk("proxmox.openctl.io/v1", "VirtualMachine", "a", "", 0),
		}, []string{"manifest: duplicate resource VirtualMachine/a (first defined at item 0 of the list)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := manifest.CheckDuplicates(tt.rs)
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, errcode.Invalid)
			var got []string
			for _, e := range manifest.Errors(err) {
				got = append(got, e.Error())
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestLoadSameFileTwice: a file reached through two paths ("-f dir -f
// dir/sub -R", or named twice) is read once, not reported as duplicates.
func TestLoadSameFileTwice(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.yaml": vmYAML("a"), "sub/b.yaml": vmYAML("b")})
	rs, err := manifest.Load(t.Context(), []string{dir, filepath.Join(dir, "sub"), filepath.Join(dir, "a.yaml")}, manifest.LoadOptions{Recursive: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, names(rs))
}
