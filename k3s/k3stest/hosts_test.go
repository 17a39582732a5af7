package k3stest_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/openctl/openctl/k3s/k3stest"
)

// sshRun runs cmd on h as user over SSH (host key pinned) and returns
// stdout, stderr and the error.
func sshRun(ctx context.Context, t *testing.T, h *k3stest.Host, user, cmd string) (string, string, error) {
	t.Helper()
	c, err := h.Dial(ctx, h.ClientConfig(user))
	if err != nil {
		return "", "", err
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		return "", "", err
	}
	defer s.Close()
	var stdout, stderr bytes.Buffer
	s.Stdout, s.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	go func() { done <- s.Run(cmd) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		c.Close()
		<-done // the session has stopped writing to the buffers
		err = ctx.Err()
	}
	return stdout.String(), stderr.String(), err
}

// mustSSH is sshRun that fails the test on error.
func mustSSH(ctx context.Context, t *testing.T, h *k3stest.Host, user, cmd string) string {
	t.Helper()
	out, errOut, err := sshRun(ctx, t, h, user, cmd)
	require.NoError(t, err, "%s on %s: %s%s", cmd, h.Name(), out, errOut)
	return out
}

// eventually polls cond every 50ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v (last: %s)", what, d, last)
		}
		time.Sleep(50 * time.Millisecond) // poll interval
	}
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func addHosts(ctx context.Context, t *testing.T, n *k3stest.Network, flavour k3stest.Flavour, names ...string) []*k3stest.Host {
	t.Helper()
	hosts := make([]*k3stest.Host, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			hosts[i], errs[i] = n.AddHost(ctx, name, k3stest.HostOptions{Flavour: flavour})
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	return hosts
}

func TestThreeHostsConcurrently(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	n := k3stest.NewNetwork(t)
	hosts := addHosts(ctx, t, n, k3stest.Systemd, "h1", "h2", "h3")

	names, addrs := map[string]bool{}, map[string]bool{}
	for _, h := range hosts {
		out := mustSSH(ctx, t, h, k3stest.DefaultUser, "hostname; id -un; ip -4 -o addr show dev eth0 | awk '{print $4}'; sudo -n id -u")
		f := strings.Fields(out)
		require.Len(t, f, 4, out)
		assert.Equal(t, h.Name(), f[0])
		assert.Equal(t, k3stest.DefaultUser, f[1])
		assert.Equal(t, h.Addr().String()+"/24", f[2])
		assert.Equal(t, "0", f[3], "sudo -n works for the login user")
		names[f[0]], addrs[f[2]] = true, true
		assert.Equal(t, "0\n", mustSSH(ctx, t, h, "root", "id -u"), "root logs in by key")
	}
	assert.Len(t, names, 3)
	assert.Len(t, addrs, 3)

	// The second login user's sudo asks for its password.
	_, errOut, err := sshRun(ctx, t, hosts[0], k3stest.PasswordUser, "sudo -n true")
	require.Error(t, err)
	assert.Contains(t, errOut, "a password is required")
	_, _, err = sshRun(ctx, t, hosts[0], k3stest.PasswordUser, "echo wrong | sudo -S -p '' true")
	require.Error(t, err)
	assert.Equal(t, "0\n", mustSSH(ctx, t, hosts[0], k3stest.PasswordUser, "echo '"+n.Password()+"' | sudo -S -p '' id -u"))

	// The hosts reach each other on the bridge.
	mustSSH(ctx, t, hosts[0], "root", fmt.Sprintf("exec 3<>/dev/tcp/%s/22 && head -c 4 <&3", hosts[1].Addr()))

	// Each host has its own /etc.
	mustSSH(ctx, t, hosts[0], "root", "echo only-h1 > /etc/k3stest-marker")
	assert.Equal(t, "only-h1\n", mustSSH(ctx, t, hosts[0], k3stest.DefaultUser, "cat /etc/k3stest-marker"))
	for _, h := range hosts[1:] {
		_, _, err := sshRun(ctx, t, h, "root", "test -e /etc/k3stest-marker")
		var ee *ssh.ExitError
		require.ErrorAs(t, err, &ee, "/etc/k3stest-marker must not exist on %s", h.Name())
	}

	// Pinning: another host's key is refused.
	cfg := hosts[0].ClientConfig("root")
	cfg.HostKeyCallback = ssh.FixedHostKey(hosts[1].HostKey())
	_, err = hosts[0].Dial(ctx, cfg)
	require.ErrorContains(t, err, "host key mismatch")
	assert.Contains(t, hosts[0].KnownHostsLine(), hosts[0].Addr().String()+" ssh-ed25519 ")
}

func TestPowerCycleAndHostKey(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	n := k3stest.NewNetwork(t)
	h := addHosts(ctx, t, n, k3stest.Systemd, "pc")[0]

	// An enabled service and a file on disk survive the power cycle; /run does not.
	require.NoError(t, h.WriteFile(ctx, "/usr/local/bin/pinger", []byte("#!/bin/sh\necho pinger up\nexec sleep 100000\n"), 0o755))
	require.NoError(t, h.WriteFile(ctx, "/etc/systemd/system/pinger.service", []byte(
		"[Unit]\nDescription=pinger\n[Service]\nExecStart=/usr/local/bin/pinger\n[Install]\nWantedBy=multi-user.target\n"), 0o644))
	mustSSH(ctx, t, h, k3stest.DefaultUser, "sudo systemctl daemon-reload && sudo systemctl enable --now pinger && echo x | sudo tee /var/lib/disk-marker >/dev/null && sudo touch /run/run-marker")
	assert.Equal(t, "active\n", mustSSH(ctx, t, h, "root", "systemctl is-active pinger"))

	require.NoError(t, h.PowerOff(ctx))
	assert.False(t, h.Running())
	dctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	_, err := h.Dial(dctx, h.ClientConfig("root"))
	cancel()
	require.Error(t, err, "SSH to a powered-off host fails")

	require.NoError(t, h.PowerOn(ctx))
	out := mustSSH(ctx, t, h, "root", "cat /var/lib/disk-marker; test -e /run/run-marker && echo run-kept; systemctl is-active pinger; systemctl is-enabled pinger")
	assert.Equal(t, "x\nactive\nenabled\n", out)

	// A new host key: the client pinning the old one is refused.
	old := h.ClientConfig("root")
	newKey, err := h.ReplaceHostKey(ctx)
	require.NoError(t, err)
	_, err = h.Dial(ctx, old)
	require.ErrorContains(t, err, "host key mismatch")
	assert.Equal(t, string(newKey.Marshal()), string(h.HostKey().Marshal()))
	mustSSH(ctx, t, h, "root", "true")
}

// TestKilledRunCleanedUp SIGKILLs a test binary that has a host running,
// then checks that its host died with it and that the next NewNetwork
// removes its namespace, link and state.
func TestKilledRunCleanedUp(t *testing.T) {
	if os.Getenv("K3STEST_ORPHAN") == "1" {
		ctx := testContext(t, 60*time.Second)
		n := k3stest.NewNetwork(t)
		h, err := n.AddHost(ctx, "orphan", k3stest.HostOptions{})
		require.NoError(t, err)
		fmt.Printf("READY %s %s\n", h.Netns(), n.StateDir())
		<-ctx.Done() // killed long before
		return
	}
	ctx := testContext(t, 60*time.Second)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKilledRunCleanedUp$", "-test.count=1")
	cmd.Env = append(os.Environ(), "K3STEST_ORPHAN=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with this test binary
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var netns, dir string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "READY" {
			netns, dir = f[1], f[2]
			break
		}
	}
	if netns == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		k3stest.NewNetwork(t) // skips (or fails under CI) as the child did
		t.Fatal("the child test binary did not start a host")
	}
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()

	// Left behind: the namespace and the state; but no process of the host.
	require.FileExists(t, "/run/netns/"+netns)
	require.DirExists(t, dir)
	eventually(t, 10*time.Second, "the orphan's processes die with it", func() (bool, string) {
		out, err := exec.Command("ip", "netns", "pids", netns).Output()
		return err == nil && len(bytes.TrimSpace(out)) == 0, string(out)
	})

	k3stest.NewNetwork(t)
	assert.NoFileExists(t, "/run/netns/"+netns)
	if _, err := os.Stat(dir); err == nil {
		// The id may have been reused by the network just created, or by
		// one another test binary made meanwhile (packages run in
		// parallel): then the directory is new, and the orphan's host is
		// not in it.
		ents, _ := os.ReadDir(filepath.Join(dir, "hosts"))
		for _, e := range ents {
			assert.NotEqual(t, "orphan", e.Name(), "the stale network's hosts were removed")
		}
	}
}
