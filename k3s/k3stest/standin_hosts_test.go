package k3stest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/k3s/k3stest"
)

// k3sUnitFor is the unit install.sh writes for `k3s <args…>` (one quoted
// argument per line), named name ("k3s" or "k3s-agent").
func k3sUnitFor(name string, args ...string) string {
	head, _, _ := strings.Cut(k3sUnit, "ExecStart=")
	head = strings.ReplaceAll(head, "/etc/systemd/system/k3s.service.env", "/etc/systemd/system/"+name+".service.env")
	var b strings.Builder
	b.WriteString(head)
	b.WriteString("ExecStart=/usr/local/bin/k3s \\\n")
	for _, a := range args {
		fmt.Fprintf(&b, "    '%s' \\\n", a)
	}
	b.WriteString("\n")
	return b.String()
}

// TestStandinClusterOnHosts runs the k3s stand-in ($K3S_STANDIN_BINARY) on
// three hosts under the systemd stand-in, as install.sh leaves them: a
// first server, a second server joining it, and an agent joining through
// the second server; each `systemctl restart` returns once that node has
// sent READY=1. Then all three nodes are Ready with the right roles.
func TestStandinClusterOnHosts(t *testing.T) {
	bin := standinBinary(t)
	ctx := testContext(t, 4*time.Minute)
	n := k3stest.NewNetwork(t)
	hosts := addHosts(ctx, t, n, k3stest.Systemd, "cp-0", "cp-1", "w-0")
	cp0, cp1, w0 := hosts[0], hosts[1], hosts[2]
	for _, h := range hosts {
		require.NoError(t, h.CopyFile(ctx, bin, "/usr/local/bin/k3s", 0o755))
	}
	start := func(h *k3stest.Host, unit, env string, args ...string) {
		t.Helper()
		require.NoError(t, h.WriteFile(ctx, "/etc/systemd/system/"+unit+".service", []byte(k3sUnitFor(unit, args...)), 0o644))
		require.NoError(t, h.WriteFile(ctx, "/etc/systemd/system/"+unit+".service.env", []byte(env), 0o600))
		began := time.Now()
		out, err := h.Run(ctx, "sh", "-c", "systemctl daemon-reload && systemctl enable /etc/systemd/system/"+unit+".service >/dev/null 2>&1 && systemctl restart "+unit)
		logs, _ := h.Run(ctx, "journalctl", "-u", unit, "--no-pager", "-o", "cat", "-n", "60")
		require.NoError(t, err, "systemctl restart %s on %s: %s\n%s", unit, h.Name(), out, logs)
		t.Logf("%s on %s ready after %s", unit, h.Name(), time.Since(began).Round(time.Millisecond))
		active, _ := h.Run(ctx, "systemctl", "is-active", unit)
		assert.Equal(t, "active\n", string(active))
	}
	start(cp0, "k3s", "", "server", "--cluster-init", "--token", "s3cret")
	token, err := cp0.ReadFile(ctx, "/var/lib/rancher/k3s/server/token")
	require.NoError(t, err)
	tok := strings.TrimSpace(string(token))
	assert.Regexp(t, `^K10[0-9a-f]{64}::server:s3cret$`, tok)
	url := func(h *k3stest.Host) string { return "https://" + h.Addr().String() + ":6443" }
	start(cp1, "k3s", "K3S_TOKEN='"+tok+"'\n", "server", "--server", url(cp0))
	start(w0, "k3s-agent", "K3S_TOKEN='"+tok+"'\nK3S_URL='"+url(cp1)+"'\n", "agent")

	pw, err := w0.ReadFile(ctx, "/etc/rancher/node/password")
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f]{32}\n$`, string(pw))
	addr := map[string]string{"cp-0": cp0.Addr().String(), "cp-1": cp1.Addr().String(), "w-0": w0.Addr().String()}
	for _, h := range []*k3stest.Host{cp0, cp1} {
		out, err := h.Run(ctx, "/usr/local/bin/k3s", "kubectl", "get", "nodes", "--no-headers", "-o", "wide")
		require.NoError(t, err, "%s", out)
		want := map[string]string{"cp-0": "control-plane,etcd,master", "cp-1": "control-plane,etcd,master", "w-0": "<none>"}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		require.Len(t, lines, 3, "%s", out)
		for _, l := range lines {
			f := strings.Fields(l)
			require.GreaterOrEqual(t, len(f), 6, l)
			assert.Equal(t, "Ready", f[1], l)
			assert.Equal(t, want[f[0]], f[2], l)
			assert.Equal(t, "v1.37.2+k3s1", f[4], l)
			assert.Equal(t, addr[f[0]], f[5], "INTERNAL-IP: the host's address: %s", l)
		}
	}
	// The stand-in's own systemd readiness line reached the journal.
	logs, err := cp1.Run(ctx, "journalctl", "-u", "k3s", "--no-pager", "-o", "cat")
	require.NoError(t, err)
	assert.Contains(t, string(logs), "to etcd cluster as a learner")
	assert.Contains(t, string(logs), `msg="k3s is up and running"`)
}
