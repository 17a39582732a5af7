package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/cli"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
)

func TestRunExitCodes(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("OPENCTL_HOME", dir)
	t.Setenv("OPENCTL_CONFIG", filepath.Join(dir, "config.yaml"))
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata: {name: x}\nspec: 3\n"), 0o600))
	for _, tc := range []struct {
		args   []string
		want   int
		stderr string
	}{
		{[]string{"version"}, 0, ""},
		{[]string{"--help"}, 0, ""},
		{[]string{}, 0, ""},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"apply", "--bogus"}, 2, "unknown flag: --bogus"},
		{[]string{"apply"}, 2, "no manifests"},
		{[]string{"apply", "-f", bad}, 2, "bad.yaml:4"},
		{[]string{"apply", "-f", filepath.Join(dir, "missing.yaml")}, 2, "missing.yaml"},
		{[]string{"plan", "--detailed-exitcode", "-f", bad}, 1, "bad.yaml:4"},
		{[]string{"get"}, 2, "requires at least 1 arg"},
		{[]string{"get", "vms"}, 2, "no Proxmox VE endpoint is configured"},
		{[]string{"state", "show", "vm/x"}, 1, "no record for VirtualMachine/x"},
		{[]string{"describe", "vm"}, 2, "accepts 2 arg"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := cli.Run(t.Context(), options(), tc.args, strings.NewReader(""), &out, &errOut)
			assert.Equal(t, tc.want, code, "stderr: %s", errOut.String())
			assert.Contains(t, errOut.String(), tc.stderr)
			if tc.want != 0 {
				assert.True(t, strings.HasPrefix(errOut.String(), "openctl: "), errOut.String())
			}
		})
	}
}

// TestInterruptedApply interrupts a real openctl process in the middle of
// an apply, as Ctrl-C (SIGINT) or a CI runner's SIGTERM does: it exits
// with 128+signal after releasing the state lock, and a re-run converges
// to exactly the VMs of the manifest.
func TestInterruptedApply(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			testInterruptedApply(t, sig)
		})
	}
}

// threeVMs starts a three-node simulator and writes a manifest of three
// VMs, one per node; env runs this test binary as openctl against it with
// its own OPENCTL_HOME under dir.
func threeVMs(t *testing.T) (srv *proxmoxtest.Server, dir, manifests string, env []string) {
	t.Helper()
	srv = proxmoxtest.NewTestServer(t, append(proxmoxtest.SandboxLayout(3, proxmoxtest.DefaultSharedStorage), proxmoxtest.WithSpeed(2))...)
	dir = t.TempDir()
	manifests = filepath.Join(dir, "vms.yaml")
	var b strings.Builder
	for i, node := range []string{"pve1", "pve2", "pve3"} {
		fmt.Fprintf(&b, "---\napiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata: {name: vm-%d}\nspec: {node: %s, template: {name: ubuntu-24.04-cloud}}\n", i, node)
	}
	require.NoError(t, os.WriteFile(manifests, []byte(b.String()), 0o600))
	id, secret := srv.Token()
	env = append(os.Environ(), "OPENCTL_TEST_MAIN=1",
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"),
		"OPENCTL_HOME="+filepath.Join(dir, "home"), "OPENCTL_CONFIG="+filepath.Join(dir, "none.yaml"),
		"OPENCTL_STATE_PASSPHRASE=pass", "OPENCTL_PROXMOX_URL="+srv.URL(), "OPENCTL_PROXMOX_TOKEN_ID="+id,
		"OPENCTL_PROXMOX_TOKEN_SECRET="+secret, "OPENCTL_PROXMOX_FINGERPRINT="+srv.Fingerprint())
	return srv, dir, manifests, env
}

func testInterruptedApply(t *testing.T, sig syscall.Signal) {
	srv, _, manifests, env := threeVMs(t)
	openctl := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
		cmd.Env = env
		return cmd
	}

	cmd := openctl("apply", "-f", manifests)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	const clone = "POST /nodes/{node}/qemu/{vmid}/clone"
	waitFor(t, func() bool { return srv.RequestCount(clone) >= 1 })
	require.NoError(t, cmd.Process.Signal(sig))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	assert.Equal(t, 128+int(sig), ee.ExitCode(), "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	assert.Contains(t, stderr.String(), "cancelling the work in flight")
	assert.Contains(t, stdout.String(), "re-run the same command to converge")

	// Re-run at once, while the clones the interrupted run started are
	// still running in Proxmox: the provider waits for them and adopts the
	// VMs instead of cloning again.
	out, err := openctl("apply", "-f", manifests).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "0 failed")
	names, err := simulatorVMs(srv)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"vm-0", "vm-1", "vm-2"}, names, "no duplicate VM")
}

// TestApplyOutputClosed: "openctl apply ... | head -1" — the reader of
// standard output goes away in the middle of an apply. The apply is not
// killed by SIGPIPE with the state lock held and clones half done: it goes
// on to its end, releasing the lock, and nothing is left to do.
func TestApplyOutputClosed(t *testing.T) {
	t.Parallel()
	srv, dir, manifests, env := threeVMs(t)

	cmd := exec.CommandContext(t.Context(), os.Args[0], "apply", "-f", manifests)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var ee *exec.ExitError
	first, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, first, "started")
	require.NoError(t, stdout.Close()) // as head -1 does
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
	assert.NoFileExists(t, filepath.Join(dir, "home", "state", "locks", "default.lock"), "the state lock was released")

	rerun := exec.CommandContext(t.Context(), os.Args[0], "apply", "-f", manifests)
	rerun.Env = env
	out, err := rerun.CombinedOutput()
	require.NoError(t, err, "%s", out) // the lock was released
	assert.Contains(t, string(out), "0 created, 0 updated, 3 unchanged, 0 failed")
	names, err := simulatorVMs(srv)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"vm-0", "vm-1", "vm-2"}, names, "no duplicate VM")

	// A reader that goes away from "get": exit 141, as a SIGPIPE death
	// would give, and no message about it.
	get := exec.CommandContext(t.Context(), os.Args[0], "get", "vms", "-o", "yaml")
	get.Env = env
	var getErr bytes.Buffer
	get.Stderr = &getErr
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, r.Close())
	get.Stdout = w
	err = get.Run()
	w.Close()
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 141, ee.ExitCode(), "stderr: %s", getErr.String())
	assert.Empty(t, getErr.String())
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	if !poll(cond) {
		t.Fatal("condition not met after 30s")
	}
}

// TestTwoStoresApplyAtOnce: two openctl processes with different state
// stores (two CI runners configured differently) apply the same manifest
// against one Proxmox at the same time. Every VM exists exactly once and
// belongs to one of them; a VM the other created is ALREADY_EXISTS for
// it, never adopted; each runner's plan afterwards is a no-op for its own
// VMs and its apply changes nothing of the other's.
func TestTwoStoresApplyAtOnce(t *testing.T) {
	srv, dir, manifests, env := threeVMs(t)
	run := func(home string) *exec.Cmd {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "apply", "-f", manifests, "--progress", "plain")
		cmd.Env = append(slices.Clone(env), "OPENCTL_HOME="+filepath.Join(dir, home))
		return cmd
	}
	a, b := run("runner-a"), run("runner-b")
	var aErr, bErr bytes.Buffer // the failures are listed with the summary on stdout
	a.Stdout, a.Stderr, b.Stdout, b.Stderr = &aErr, &aErr, &bErr, &bErr
	require.NoError(t, a.Start())
	require.NoError(t, b.Start())
	errA, errB := a.Wait(), b.Wait()
	out := "runner-a: " + aErr.String() + "\nrunner-b: " + bErr.String()

	names := map[string]int{}
	owners := map[string]string{}
	for _, v := range srv.VMs() {
		if v.Template {
			continue
		}
		names[v.Name]++
		owners[v.Name] = v.Config["description"]
	}
	assert.Equal(t, map[string]int{"vm-0": 1, "vm-1": 1, "vm-2": 1}, names, out)
	if errA == nil && errB == nil {
		t.Fatalf("both runners reported success for the same VMs:\n%s", out)
	}
	for _, e := range []struct {
		err    error
		stderr string
	}{{errA, aErr.String()}, {errB, bErr.String()}} {
		if e.err != nil {
			assert.Contains(t, e.stderr, "ALREADY_EXISTS", out)
			assert.NotContains(t, e.stderr, "state lock", out)
		}
	}
	// Run again: each runner converges on what is its own and refuses the rest.
	for _, home := range []string{"runner-a", "runner-b"} {
		cmd := run(home)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		err := cmd.Run()
		if err != nil {
			assert.Contains(t, stderr.String(), "ALREADY_EXISTS", "%s: %s", home, stderr.String())
			assert.Contains(t, stderr.String(), " 0 created", home)
		}
	}
	names = map[string]int{}
	for _, v := range srv.VMs() {
		if !v.Template {
			names[v.Name]++
		}
	}
	assert.Equal(t, map[string]int{"vm-0": 1, "vm-1": 1, "vm-2": 1}, names, "still one VM per name")
}
