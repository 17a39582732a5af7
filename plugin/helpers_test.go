package plugin_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// notesPlugin builds examples/plugins/openctl-notes once per test binary
// and returns its path.
func notesPlugin(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "openctl-plugin-test-")
		if buildErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(buildDir, "openctl-notes"), "../examples/plugins/openctl-notes").CombinedOutput()
		if err != nil {
			buildErr = &buildError{err, string(out)}
		}
	})
	require.NoError(t, buildErr)
	return filepath.Join(buildDir, "openctl-notes")
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// capsJSON is the capabilities of the scripted test plugins.
const capsJSON = `{"providerName":"fake","protocolVersion":"1.0","resources":[{"kind":"Thing","plural":"things","actions":["get","list","apply","delete"]}]}`

// script writes a sh plugin openctl-<name> in dir that answers
// --capabilities with caps and runs body for requests.
func script(t testing.TB, dir, name, caps, body string) string {
	t.Helper()
	path := filepath.Join(dir, "openctl-"+name)
	text := "#!/bin/sh\nif [ \"${1:-}\" = --capabilities ]; then\n" + caps + "\nexit 0\nfi\n" + body + "\n"
	require.NoError(t, os.WriteFile(path, []byte(text), 0o755))
	return path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}
