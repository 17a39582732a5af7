package k3s_test

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/k3s"
)

// testInstaller is an install script shaped as k3s's install.sh behaves
// for what openctl uses (internal/k3semu/CONTRACT.md §1): INSTALL_K3S_VERSION, the
// command and flags as arguments, INSTALL_K3S_SKIP_START, K3S_* variables
// copied into the service's environment file (0600), the binary
// downloaded and checked against sha256sum-amd64.txt, kubectl linked to
// k3s, a systemd unit of Type=notify. It logs each run's arguments to
// /var/log/test-installer.log. %[1]s is where the releases are served.
const testInstaller = `#!/bin/sh
set -e
echo "$INSTALL_K3S_VERSION $*" >> /var/log/test-installer.log
cmd=$1; shift
svc=k3s; [ "$cmd" = agent ] && svc=k3s-agent
base=%[1]s/$INSTALL_K3S_VERSION
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
curl -sSfL -o "$tmp/sums" "$base/sha256sum-amd64.txt"
curl -sSfL -o "$tmp/k3s" "$base/k3s"
want=$(awk '$2 == "k3s" {print $1}' "$tmp/sums")
[ "$(sha256sum "$tmp/k3s" | cut -d' ' -f1)" = "$want" ] || { echo "[ERROR]  Download sha256 does not match" >&2; exit 1; }
chmod 755 "$tmp/k3s"; mv -f "$tmp/k3s" /usr/local/bin/k3s
command -v kubectl >/dev/null 2>&1 || ln -sf k3s /usr/local/bin/kubectl
env_file=/etc/systemd/system/$svc.service.env
umask 077; : > "$env_file"
env | grep -E '^K3S_' | sed -e "s/=/='/" -e "s/$/'/" >> "$env_file"
umask 022
{
  printf '[Unit]\nDescription=Lightweight Kubernetes\n[Install]\nWantedBy=multi-user.target\n[Service]\nType=notify\n'
  printf 'EnvironmentFile=-%%s\nKillMode=process\nTimeoutStartSec=0\nRestart=always\nRestartSec=5s\n' "$env_file"
  printf 'ExecStart=/usr/local/bin/k3s %%s' "$cmd"
  for a in "$@"; do printf " \\\\\n    '%%s'" "$a"; done
  printf '\n'
} > /etc/systemd/system/$svc.service
systemctl enable /etc/systemd/system/$svc.service >/dev/null 2>&1
systemctl daemon-reload
[ "$INSTALL_K3S_SKIP_START" = true ] || systemctl restart $svc
echo "[INFO]  installed"
`

// TestInstallScript installs a server and an agent with
// spec.k3s.install.method: script: each node fetches the install script
// over HTTPS (its URL configurable) and runs it with the version, the
// command and the flags; the tokens reach it through a 0600 file, never
// a command line; openctl starts the services itself. A re-apply runs no
// script; a delete removes what the script installed.
func TestInstallScript(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	hosts := e.hosts(ctx, t, "is1", "is2")

	// The test's own CA, trusted by the hosts, signs the script server's
	// certificate for the network's gateway address.
	ca, err := pki.NewCA("install script test CA")
	require.NoError(t, err)
	cert, err := ca.IssueServer("installer", []net.IP{net.IP(e.net.Gateway().AsSlice())})
	require.NoError(t, err)
	key, err := cert.KeyPEM()
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(cert.CertPEM(), key)
	require.NoError(t, err)
	ln, err := tls.Listen("tcp", net.JoinHostPort(e.net.Gateway().String(), "0"), &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	require.NoError(t, err)
	base := "https://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("/releases/", http.StripPrefix("/releases/", http.FileServer(http.Dir(e.cfg.BinaryDir))))
	mux.HandleFunc("/install.sh", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, testInstaller, base+"/releases")
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	for _, h := range hosts {
		out, err := h.Run(ctx, "sh", "-c", "cat >> /etc/ssl/certs/ca-certificates.crt <<'EOF'\n"+string(ca.CertPEM())+"EOF")
		require.NoError(t, err, "%s", out)
	}
	c := e.cluster("scripted", hosts[:1], hosts[1:])
	c.Spec["k3s"].(map[string]any)["install"] = map[string]any{"method": k3s.InstallScript, "scriptURL": base + "/install.sh"}

	rep, err := e.engine.Apply(ctx, c)
	if err != nil {
		dumpLogs(ctx, t, hosts...)
	}
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Count(openctl.OutcomeCreated))
	steps := e.takeSteps()
	assert.Contains(t, steps, hosts[0].SSHAddr()+" run the install script")
	for _, s := range steps {
		assert.NotContains(t, s, "write /usr/local/bin/k3s", "the node downloads k3s itself")
	}
	f, err := e.engine.Get(ctx, c.ID())
	require.NoError(t, err)
	assert.Equal(t, "2/2", f.Resource.Status["readyNodes"])

	for i, h := range hosts {
		svc, cmd := "k3s", "server"
		if i == 1 {
			svc, cmd = "k3s-agent", "agent"
		}
		out, err := h.Run(ctx, "sh", "-c", "cat /var/log/test-installer.log; stat -c %a /etc/systemd/system/"+svc+".service.env; grep -c '^K3S_TOKEN=' /etc/systemd/system/"+svc+".service.env; ls /run/openctl-k3s-install.env 2>&1 || true")
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		require.Len(t, lines, 4, string(out))
		assert.True(t, strings.HasPrefix(lines[0], standinVersion+" "+cmd+" --node-name="+h.Name()+" "), lines[0])
		assert.NotContains(t, lines[0], "K10", "no token on the script's command line")
		assert.NotContains(t, lines[0], "token", "no token on the script's command line")
		assert.Equal(t, "600", lines[1])
		assert.Equal(t, "1", lines[2])
		assert.Contains(t, lines[3], "No such file", "the variables file is gone")
	}

	// A re-apply reads and runs no script.
	e.takeSteps()
	rep, err = e.engine.Apply(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Count(openctl.OutcomeUnchanged))
	for _, s := range e.takeSteps() {
		assert.Contains(t, s, "read the node's state", "a no-op re-apply only reads")
	}
	for _, h := range hosts {
		out, err := h.Run(ctx, "wc", "-l", "/var/log/test-installer.log")
		require.NoError(t, err)
		assert.Equal(t, "1", strings.Fields(string(out))[0], "%s ran the script once", h.Name())
	}

	_, err = e.engine.Delete(ctx, c.ID())
	require.NoError(t, err)
	for _, h := range hosts {
		out, err := h.Run(ctx, "sh", "-c", "ls /usr/local/bin /etc/rancher 2>&1; pgrep -a k3s || true")
		require.NoError(t, err)
		assert.NotRegexp(t, `(?m)^(k3s|kubectl)$`, string(out), h.Name())
		assert.NotContains(t, string(out), "k3s ", h.Name())
	}
}
