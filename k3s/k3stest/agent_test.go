package k3stest_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/k3s/k3stest"
)

// fakeK3s answers --version as k3s does and otherwise runs as a service:
// logs, signals READY=1 when under systemd, and stays up.
const fakeK3s = `#!/bin/sh
if [ "$1" = --version ]; then
	echo "k3s version v1.30.2+k3s1 (abcdef12)"
	echo "go version go1.22.4"
	exit 0
fi
echo "fake k3s $1 is up and running"
if [ -n "$NOTIFY_SOCKET" ]; then systemd-notify --ready; fi
exec sleep 100000
`

// The unit and script install.sh writes (k3s-io/k3s install.sh,
// create_systemd_service_file and create_openrc_service_file).
const k3sUnit = `[Unit]
Description=Lightweight Kubernetes
Documentation=https://k3s.io
Wants=network-online.target
After=network-online.target

[Install]
WantedBy=multi-user.target

[Service]
Type=notify
EnvironmentFile=-/etc/default/%N
EnvironmentFile=-/etc/sysconfig/%N
EnvironmentFile=-/etc/systemd/system/k3s.service.env
KillMode=process
Delegate=yes
User=root
LimitNOFILE=1048576
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
TimeoutStartSec=0
Restart=always
RestartSec=5s
ExecStartPre=/bin/sh -xc '! /usr/bin/systemctl is-enabled --quiet nm-cloud-setup.service 2>/dev/null'
ExecStartPre=-/sbin/modprobe br_netfilter
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/usr/local/bin/k3s \
    server \

`

// k3sOpenRCFor is the OpenRC script install.sh writes for
// `k3s <command> <args…>` (create_openrc_service_file: the command bare,
// each argument quoted on a continuation line).
func k3sOpenRCFor(command string, args ...string) string {
	var b strings.Builder
	b.WriteString(`#!/sbin/openrc-run

depend() {
    after network-online
    want cgroups
}

start_pre() {
    rm -f /tmp/k3s.*
}

supervisor=supervise-daemon
name=k3s
command="/usr/local/bin/k3s"
command_args="` + command + " \\\n")
	for _, a := range args {
		fmt.Fprintf(&b, "\t'%s' \\\n", a)
	}
	b.WriteString(`    >>/var/log/k3s.log 2>&1"

output_log=/var/log/k3s.log
error_log=/var/log/k3s.log

pidfile="/var/run/k3s.pid"
respawn_delay=5
respawn_max=0

set -o allexport
if [ -f /etc/environment ]; then . /etc/environment; fi
if [ -f /etc/rancher/k3s/k3s.env ]; then . /etc/rancher/k3s/k3s.env; fi
set +o allexport
`)
	return b.String()
}

var (
	agentOnce sync.Once
	agentBin  string
	agentErr  error
)

// buildAgent builds the real cmd/openctl-agent, static, once per test binary.
func buildAgent(t *testing.T) string {
	agentOnce.Do(func() {
		dir, err := os.MkdirTemp("", "k3stest-agent-")
		if err != nil {
			agentErr = err
			return
		}
		agentBin = filepath.Join(dir, "openctl-agent")
		cmd := exec.Command("go", "build", "-o", agentBin, "github.com/openctl/openctl/cmd/openctl-agent")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			agentErr = err
			t.Logf("%s", out)
		}
	})
	require.NoError(t, agentErr)
	return agentBin // removed by TestMain
}

func TestMain(m *testing.M) {
	code := m.Run()
	if agentBin != "" {
		os.RemoveAll(filepath.Dir(agentBin))
	}
	os.Exit(code)
}

// agentPKI is a cluster's agent CA and the controller's client
// certificate, as the K3s provider will hold them.
type agentPKI struct {
	ca                    *pki.CA
	clientCert, clientKey []byte
}

func newAgentPKI(t *testing.T) *agentPKI {
	t.Helper()
	ca, err := pki.NewCA("k3stest CA")
	require.NoError(t, err)
	client, err := ca.IssueClient(pki.ControllerName)
	require.NoError(t, err)
	key, err := client.KeyPEM()
	require.NoError(t, err)
	return &agentPKI{ca: ca, clientCert: client.CertPEM(), clientKey: key}
}

// installAgent installs the unmodified openctl-agent (binary) on h the way
// the K3s provider will (agent.InstallFiles, agent.EnableCommands; opts.Init
// from the host's flavour) and returns a client for it over mTLS.
func installAgent(ctx context.Context, t *testing.T, h *k3stest.Host, p *agentPKI, binary []byte, opts agent.InstallOptions) *agent.Client {
	t.Helper()
	opts.Init = agent.Systemd
	if h.Flavour() == k3stest.OpenRC {
		opts.Init = agent.OpenRC
	}
	srv, err := p.ca.IssueServer(h.Name(), []net.IP{net.IP(h.Addr().AsSlice())})
	require.NoError(t, err)
	srvKey, err := srv.KeyPEM()
	require.NoError(t, err)
	files, err := agent.InstallFiles(opts)
	require.NoError(t, err)
	for _, f := range files {
		var data []byte
		switch f.Kind {
		case agent.KindDir:
			out, err := h.Run(ctx, "install", "-d", "-m", fmt.Sprintf("%04o", f.Mode.Perm()), f.Path)
			require.NoError(t, err, "%s", out)
			continue
		case agent.KindBinary:
			data = binary
		case agent.KindCA:
			data = pki.NewBundle(p.ca.Cert).PEM()
		case agent.KindServerCert:
			data = srv.CertPEM()
		case agent.KindServerKey:
			data = srvKey
		case agent.KindService:
			data = f.Content
		default:
			t.Fatalf("unknown install file kind %q", f.Kind)
		}
		require.NoError(t, h.WriteFile(ctx, f.Path, data, f.Mode))
	}
	cmds, err := agent.EnableCommands(opts.Init)
	require.NoError(t, err)
	for _, c := range cmds {
		out, err := h.Run(ctx, c...)
		require.NoError(t, err, "%v: %s", c, out)
	}
	c, err := agent.NewClient(agent.ClientConfig{
		Address:  net.JoinHostPort(h.Addr().String(), strconv.Itoa(agent.DefaultPort)),
		CABundle: pki.NewBundle(p.ca.Cert).PEM(),
		CertPEM:  p.clientCert, KeyPEM: p.clientKey,
		Retries: 20, RetryBackoff: 100 * time.Millisecond,
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// agentBinary builds the agent (once) and returns its contents.
func agentBinary(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(buildAgent(t))
	require.NoError(t, err)
	return b
}

// TestAgentOnHosts installs the unmodified openctl-agent the way the K3s
// provider will (agent.InstallFiles, agent.EnableCommands) next to a fake
// k3s, a shell script, on a systemd host and on an OpenRC host, and calls
// it over mTLS. Unlike TestAgentStandin it needs no k3s stand-in build,
// so it runs wherever the test hosts do.
func TestAgentOnHosts(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 80*time.Second)
	binary := agentBinary(t)
	n := k3stest.NewNetwork(t)
	hosts := map[agent.InitSystem]*k3stest.Host{
		agent.Systemd: addHosts(ctx, t, n, k3stest.Systemd, "ag-systemd")[0],
		agent.OpenRC:  addHosts(ctx, t, n, k3stest.OpenRC, "ag-openrc")[0],
	}
	p := newAgentPKI(t)

	for init, h := range hosts {
		t.Run(string(init), func(t *testing.T) {
			// k3s first, as the provider installs it.
			require.NoError(t, h.WriteFile(ctx, "/usr/local/bin/k3s", []byte(fakeK3s), 0o755))
			if init == agent.Systemd {
				require.NoError(t, h.WriteFile(ctx, "/etc/systemd/system/k3s.service", []byte(k3sUnit), 0o644))
				mustSSH(ctx, t, h, k3stest.DefaultUser, "sudo systemctl enable /etc/systemd/system/k3s.service && sudo systemctl daemon-reload && sudo systemctl restart k3s")
				assert.Equal(t, "enabled\n", mustSSH(ctx, t, h, "root", "systemctl is-enabled k3s"))
			} else {
				require.NoError(t, h.WriteFile(ctx, "/etc/init.d/k3s", []byte(k3sOpenRCFor("server")), 0o755))
				mustSSH(ctx, t, h, k3stest.DefaultUser, "sudo rc-update add k3s default && sudo /etc/init.d/k3s restart")
				assert.Equal(t, " * status: started\n", mustSSH(ctx, t, h, "root", "rc-service k3s status"))
				assert.Equal(t, "none\n", mustSSH(ctx, t, h, "root", "test -d /run/systemd/system || command -v systemctl || echo none"))
			}

			c := installAgent(ctx, t, h, p, binary, agent.InstallOptions{})
			info, err := c.Info(ctx)
			require.NoError(t, err)
			assert.Equal(t, h.Name(), info.Hostname)
			assert.Equal(t, init, info.Init)
			assert.Equal(t, agent.RoleServer, info.Role)
			assert.Equal(t, "v1.30.2+k3s1", info.K3sVersion)
			assert.Equal(t, agent.StateActive, info.ServiceState)
			assert.Empty(t, info.Problems)

			var logs bytes.Buffer
			require.NoError(t, c.Logs(ctx, 10, &logs))
			assert.Contains(t, logs.String(), "fake k3s server is up and running\n")

			// Stop and start through the agent drive the stand-in.
			require.NoError(t, c.Stop(ctx))
			info, err = c.Info(ctx)
			require.NoError(t, err)
			assert.Equal(t, agent.StateInactive, info.ServiceState)
			require.NoError(t, c.Restart(ctx))
			info, err = c.Info(ctx)
			require.NoError(t, err)
			assert.Equal(t, agent.StateActive, info.ServiceState)
		})
	}
}
