package k3s_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/openctl/openctl/agent/agenttest"
	"github.com/openctl/openctl/cli"
	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/k3s/k3stest"
	"github.com/openctl/openctl/registry"
)

// TestCLIExistingHosts drives a cluster on two test hosts through the
// CLI, as a user would with existing machines: validate, plan, apply,
// get, a no-op plan, delete — with the provider configured in the file.
func TestCLIExistingHosts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := binaryDir(t)
	n := k3stest.NewNetwork(t)
	var hosts []*k3stest.Host
	for _, name := range []string{"cli-s", "cli-a"} {
		h, err := n.AddHost(ctx, name, k3stest.HostOptions{})
		require.NoError(t, err)
		hosts = append(hosts, h)
	}
	home := t.TempDir()
	key := func(h *k3stest.Host) string { return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(h.HostKey()))) }
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.yaml"), fmt.Appendf(nil, `providers:
  k3s:
    binaryDir: %s
    offline: true
    readyTimeout: 2m
    agent: {binaryDir: %s}
`, dir, agentBinaryDir(t)), 0o600))
	manifest := filepath.Join(home, "cluster.yaml")
	require.NoError(t, os.WriteFile(manifest, fmt.Appendf(nil, `apiVersion: k3s.openctl.io/v1
kind: Cluster
metadata:
  name: cli
spec:
  k3s: {version: %s}
  ssh: {user: %s, privateKeyPath: %s}
  hosts:
    - {name: cli-s, address: %s, role: server, sshHostKey: %q}
    - {name: cli-a, address: %s, role: agent, sshHostKey: %q}
`, standinVersion, k3stest.DefaultUser, n.KeyFile(), hosts[0].Addr(), key(hosts[0]), hosts[1].Addr(), key(hosts[1])), 0o600))

	env := map[string]string{"OPENCTL_HOME": home, "HOME": home, "OPENCTL_STATE_PASSPHRASE": "correct horse battery staple", "NO_COLOR": "1"}
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		opts := cli.Options{Drivers: []registry.Driver{k3s.Driver{}}, Env: func(k string) string { return env[k] }}
		code := cli.Run(ctx, opts, args, strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}

	code, out, errOut := run("validate", "-f", manifest)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "1 resource valid")

	code, out, errOut = run("plan", "-f", manifest, "--detailed-exitcode")
	require.Equal(t, 2, code, errOut)
	assert.Contains(t, out+errOut, "Plan: 3 to create")

	code, out, errOut = run("apply", "-f", manifest)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", out, errOut)
	assert.Contains(t, out, "cluster/cli created")

	code, out, errOut = run("get", "clusters")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^cli +Ready +`+regexpQuote(standinVersion)+` +https://`+regexpQuote(hosts[0].Addr().String())+`:6443 +2/2`, out)

	code, out, errOut = run("get", "clusters", "cli", "-o", "yaml")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `kubeconfig: "[redacted]"`, "secrets never printed")
	assert.NotContains(t, out, "K10", "nor the tokens")

	code, out, errOut = run("plan", "-f", manifest, "--detailed-exitcode")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out+errOut, "3 unchanged")

	kc, err := os.ReadFile(filepath.Join(home, "kubeconfigs", "cli.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(kc), "current-context: cli")

	// The kubeconfig action prints it, live.
	code, out, errOut = run("k3s", "kubeconfig", "cluster", "cli")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "current-context: cli")
	assert.Contains(t, out, "server: https://"+hosts[0].Addr().String()+":6443")
	assert.NotContains(t, out, "done", "standard output holds the kubeconfig alone")
	assert.Contains(t, errOut, "Cluster/cli: kubeconfig done")

	// Day-2 actions, through the nodes' agents.
	code, out, errOut = run("k3s", "status", "cluster", "cli")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^NAME +ROLE +READY +VERSION +AGENT +ADDRESS$`, out)
	assert.Regexp(t, `(?m)^cli-s +server +true +`+regexpQuote(standinVersion)+` +\S+ +`+regexpQuote(hosts[0].Addr().String())+`$`, out)
	assert.Regexp(t, `(?m)^cli-a +agent +true +`+regexpQuote(standinVersion)+` +\S+ +`+regexpQuote(hosts[1].Addr().String())+`$`, out)
	code, out, errOut = run("k3s", "logs", "node", "cli-s", "--lines", "500")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "k3s is up and running")
	code, out, errOut = run("k3s", "logs", "node", "cli-s", "-n", "2")
	require.Equal(t, 0, code, errOut)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 2, out)
	// Following cli-a's log while it restarts shows the restart's lines
	// as they come; interrupting the follow ends it cleanly.
	fctx, stopFollow := context.WithCancel(ctx)
	var followed, followErr agenttest.LogBuffer
	followDone := make(chan int, 1)
	go func() {
		opts := cli.Options{Drivers: []registry.Driver{k3s.Driver{}}, Env: func(k string) string { return env[k] }}
		followDone <- cli.Run(fctx, opts, []string{"k3s", "logs", "node", "cli-a", "--follow", "-n", "5"}, strings.NewReader(""), &followed, &followErr)
	}()
	require.Eventually(t, func() bool { return strings.Contains(followed.String(), "k3s agent is up and running") }, 30*time.Second, 100*time.Millisecond,
		"stdout: %s\nstderr: %s", followed.String(), followErr.String())
	before := strings.Count(followed.String(), "k3s agent is up and running")
	code, out, errOut = run("k3s", "restart", "node", "cli-a")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out+errOut, "cli-a: k3s restarted")
	require.Eventually(t, func() bool {
		return strings.Count(followed.String(), "k3s agent is up and running") > before
	}, 30*time.Second, 100*time.Millisecond, "the restart's lines arrive while following")
	stopFollow()
	select {
	case <-followDone:
	case <-time.After(10 * time.Second):
		t.Fatal("logs --follow did not end when interrupted")
	}

	code, out, errOut = run("delete", "-f", manifest)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", out, errOut)
	assert.Contains(t, out, "cluster/cli deleted")
}

func regexpQuote(s string) string {
	return strings.NewReplacer(".", `\.`, "+", `\+`).Replace(s)
}
