package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/cli"
	"github.com/openctl/openctl/internal/testenv"
)

// envK3sExample carries the K3s example to the unprivileged run of
// TestSandboxUnprivileged, which may not reach the checkout.
const envK3sExample = "OPENCTL_TEST_K3S_EXAMPLE"

// TestSandboxUnprivileged: make run's apply of the K3s example needs no
// root (run as root, as CI is, it runs as the user nobody).
func TestSandboxUnprivileged(t *testing.T) {
	if testing.Short() {
		t.Skip("applies a whole cluster in the sandbox")
	}
	if os.Getenv(testenv.EnvUnprivileged) == "" {
		b, err := os.ReadFile("../../examples/k3s-proxmox.yaml")
		require.NoError(t, err)
		t.Setenv(envK3sExample, string(b))
	}
	testenv.RunUnprivileged(t, func(t *testing.T) {
		require.NotZero(t, os.Geteuid(), "not root")
		dir := t.TempDir()
		manifest := filepath.Join(dir, "k3s-proxmox.yaml")
		require.NoError(t, os.WriteFile(manifest, []byte(os.Getenv(envK3sExample)), 0o600))
		t.Setenv("HOME", filepath.Join(dir, "home"))
		t.Setenv("TMPDIR", dir)
		var stdout, stderr bytes.Buffer
		code := cli.Run(t.Context(), options(), []string{"apply", "--sandbox", "-f", manifest}, strings.NewReader(""), &stdout, &stderr)
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		assert.Contains(t, stdout.String(), "Apply complete: 11 created, 0 updated, 0 unchanged, 0 failed")
		assert.Regexp(t, `dev +Ready +v1\.37\.2\+k3s1 +https://127\.[0-9]+\.1\.49:6443 +5/5`, stdout.String())
		// The sandbox ends with the command: no kubeconfig to try, and
		// the way to keep it is named.
		assert.NotContains(t, stdout.String(), "Try: ")
		assert.Contains(t, stderr.String(), "the sandbox has ended with this command, and its files with it; to keep it serving and use kubectl against it, run again with --hold (make run ARGS=--hold)")
		left, err := filepath.Glob(filepath.Join(dir, "openctl-sandbox-*"))
		require.NoError(t, err)
		assert.Empty(t, left, "the sandbox's directory is removed at the end")
	})
}
