package openctl_test

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/internal/apicheck"
)

var updateAPI = flag.Bool("update-api", false, "rewrite the API golden files under api/ (make api)")

// publicPackages are the directories of the module's importable
// packages: all but internal/, cmd/, examples/, testdata and nested
// modules.
func publicPackages(t *testing.T) []string {
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		switch base := d.Name(); {
		case path == ".":
		case base == "internal" || base == "cmd" || base == "examples" || base == "testdata" || base == "api" || strings.HasPrefix(base, "."):
			return filepath.SkipDir
		default:
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module
			}
		}
		if hasGo(t, path) {
			dirs = append(dirs, path)
		}
		return nil
	})
	require.NoError(t, err)
	return dirs
}

func hasGo(t *testing.T, dir string) bool {
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range es {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			return true
		}
	}
	return false
}

// goldenFile is api/<path with / as _>.txt; the root package's is
// api/openctl.txt.
func goldenFile(dir string) string {
	if dir == "." {
		return filepath.Join("api", "openctl.txt")
	}
	return filepath.Join("api", strings.ReplaceAll(filepath.ToSlash(dir), "/", "_")+".txt")
}

// TestAPI fails when a public package's exported API differs from its
// golden file under api/: an exported change must update the file (make
// api) and say so in CHANGELOG.md. A golden file whose package is gone
// fails too.
func TestAPI(t *testing.T) {
	want := map[string]bool{}
	for _, dir := range publicPackages(t) {
		path := "github.com/openctl/openctl"
		if dir != "." {
			path += "/" + filepath.ToSlash(dir)
		}
		lines, err := apicheck.Package(dir, path)
		require.NoError(t, err, dir)
		got := strings.Join(lines, "\n") + "\n"
		file := goldenFile(dir)
		want[file] = true
		if *updateAPI {
			require.NoError(t, os.MkdirAll("api", 0o755))
			require.NoError(t, os.WriteFile(file, []byte(got), 0o644))
			continue
		}
		old, err := os.ReadFile(file)
		if !assert.NoError(t, err, "%s has no golden file: run make api, and note the new package in CHANGELOG.md", path) {
			continue
		}
		assert.Equal(t, string(old), got, "the exported API of %s changed: run make api and say what changed in CHANGELOG.md (old → new)", path)
	}
	files, err := filepath.Glob(filepath.Join("api", "*.txt"))
	require.NoError(t, err)
	for _, f := range files {
		if !want[f] {
			if *updateAPI {
				require.NoError(t, os.Remove(f))
				continue
			}
			t.Errorf("%s: no public package has this API any more: run make api, and note the removal in CHANGELOG.md", f)
		}
	}
}
