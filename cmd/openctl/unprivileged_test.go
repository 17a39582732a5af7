package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSandboxUnprivileged: make run's apply of the K3s example needs no
// root. Run as root (as CI is), the test runs openctl as the user nobody;
// run by anyone else it runs openctl as that user.
func TestSandboxUnprivileged(t *testing.T) {
	if testing.Short() {
		t.Skip("applies a whole cluster in the sandbox")
	}
	// As root, the directory is under /tmp, which every user can reach
	// (t.TempDir's parents are root's alone).
	base := ""
	if os.Geteuid() == 0 {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "openctl-unprivileged-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	// The test binary is openctl (TestMain runs main when
	// OPENCTL_TEST_MAIN=1); a copy nobody can run.
	exe, err := os.Executable()
	require.NoError(t, err)
	bin := filepath.Join(dir, "openctl")
	copyFile(t, exe, bin)
	example, err := os.ReadFile("../../examples/k3s-proxmox.yaml")
	require.NoError(t, err)
	manifest := filepath.Join(dir, "k3s-proxmox.yaml")
	require.NoError(t, os.WriteFile(manifest, example, 0o644))
	home := filepath.Join(dir, "home")
	require.NoError(t, os.Mkdir(home, 0o700))
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chown(home, 65534, 65534))
	}

	cmd := exec.CommandContext(t.Context(), bin, "apply", "--sandbox", "-f", manifest)
	cmd.Env = []string{"OPENCTL_TEST_MAIN=1", "HOME=" + home, "TMPDIR=" + home, "PATH=/usr/bin:/bin", "GORACE=atexit_sleep_ms=0"}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	assert.Contains(t, stdout.String(), "Apply complete: 11 created, 0 updated, 0 unchanged, 0 failed")
	assert.Regexp(t, `dev +Ready +v1\.37\.2\+k3s1 +https://127\.[0-9]+\.1\.49:6443 +5/5`, stdout.String())
	left, err := filepath.Glob(filepath.Join(home, "openctl-sandbox-*"))
	require.NoError(t, err)
	assert.Empty(t, left, "the sandbox's directory is removed at the end")
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}
