package k3s

// These tests run the provider's own scripts and service definitions
// (its constants and templates, not copies) on vmhost hosts, the
// simulated Linux hosts of the sandbox: what the provider sends is what
// the sandbox must run.

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/remote"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// serviceK3s stands in for the k3s binary: --version, kubectl's Ready
// condition, and server/agent, which log, report ready (sd_notify) and
// run until stopped.
func serviceK3s(ctx context.Context, c *vmhost.Call) int {
	if len(c.Args) < 2 {
		return 1
	}
	switch c.Args[1] {
	case "--version":
		fmt.Fprintln(c.Stdout, "k3s version v1.37.2+k3s1 (abcdef12)")
		return 0
	case "kubectl":
		fmt.Fprint(c.Stdout, "True")
		return 0
	case "server", "agent":
		token := "unset"
		if c.Getenv("K3S_TOKEN") != "" {
			token = "set"
		}
		fmt.Fprintf(c.Stderr, "level=info msg=\"Starting k3s v1.37.2+k3s1\" args=%q token=%s\n", strings.Join(c.Args[1:], " "), token)
		c.NotifyReady()
		fmt.Fprintln(c.Stderr, "level=info msg=\"k3s is up and running\"")
		<-ctx.Done()
		fmt.Fprintln(c.Stderr, "level=info msg=\"Shutting down\"")
		return 0
	}
	return 1
}

// fakeAgent stands in for the node agent: it logs each reload request
// it takes, as the agent re-reads its credentials on SIGHUP.
func fakeAgent(ctx context.Context, c *vmhost.Call) int {
	fmt.Fprintln(c.Stderr, "openctl-agent listening on", strings.Join(c.Args[1:], " "))
	n := 0
	for {
		select {
		case <-ctx.Done():
			return 0
		case <-c.Reloads():
			n++
			fmt.Fprintf(c.Stderr, "credentials reloaded (%d)\n", n)
		}
	}
}

// mustRun runs script on h and requires status 0.
func mustRun(t *testing.T, h *vmhost.Host, script string) string {
	t.Helper()
	st, out, errOut := runOn(t, h, script)
	require.Equal(t, 0, st, "%s\nstdout: %s\nstderr: %s", script, out, errOut)
	return out
}

// k3sUnit renders the provider's service for a server with extra
// arguments.
func k3sUnit(_ *testing.T, init string, extra ...string) string {
	return string(unitFile(init, RoleServer, extra))
}

// k3sStart is the provider's startScript for a server.
func k3sStart(_ *testing.T, init string, restart bool) string {
	return startScript(init, RoleServer, restart)
}

// k3sStop is the provider's stopScript for a server.
func k3sStop(_ *testing.T, init string) string { return stopScript(init, RoleServer) }

// TestK3sService installs the K3s provider's own service definition
// (unit file or init script, rendered from its source) on a systemd and
// an OpenRC host and drives it with the provider's scripts: start, the
// probes, restart, stop, a power cut and a boot, reload (which k3s's
// service does not offer), and the uninstall script. The k3s program is
// a stand-in that reports ready and logs.
func TestK3sService(t *testing.T) {
	for _, init := range []string{vmhost.InitSystemd, vmhost.InitOpenRC} {
		t.Run(init, func(t *testing.T) {
			h, err := vmhost.New(filepath.Join(t.TempDir(), "root"), vmhost.Options{
				Hostname: "cp-0", Init: init, Programs: map[string]vmhost.Program{"k3s": serviceK3s},
				Addresses: []vmhost.Address{{Interface: "eth0", Prefix: mustPrefix("10.0.0.11/24")}},
			})
			require.NoError(t, err)
			defer h.Close()
			unitPath, envPath := "/etc/systemd/system/k3s.service", "/etc/systemd/system/k3s.service.env"
			if init == vmhost.InitOpenRC {
				unitPath, envPath = "/etc/init.d/k3s", "/etc/rancher/k3s/k3s.env"
			}
			require.NoError(t, h.WriteFile("/usr/local/bin/k3s", []byte("k3s binary\n"), 0o755))
			require.NoError(t, h.WriteFile(envPath, []byte("# Written by openctl.\nK3S_TOKEN='K10secret'\n"), 0o600))
			require.NoError(t, h.WriteFile(unitPath, []byte(k3sUnit(t, init, "--node-name=cp-0", "--node-ip=10.0.0.11", "--cluster-init")), 0o755))

			probe := func() string {
				return mustRun(t, h, "set -- k3s 10.0.0.11\n"+probeScript)
			}
			assert.NotContains(t, probe(), "active=1")

			mustRun(t, h, k3sStart(t, init, false))
			isActive := func() bool { return strings.Contains(probe(), "active=1") }
			require.Eventually(t, isActive, 20*time.Second, 5*time.Millisecond, "waiting for %s", "k3s to be active")
			out := probe()
			assert.Contains(t, out, "init="+init+"\n")
			assert.Contains(t, out, "version=v1.37.2+k3s1\n")
			assert.Contains(t, out, "iface=eth0\n")
			status := mustRun(t, h, "set -- k3s cp-0 whole\n"+nodeStatusScript)
			assert.Contains(t, status, "installed=1\nstate=active\n")

			logs := func() string {
				if init == vmhost.InitOpenRC {
					b, _ := h.ReadFile("/var/log/k3s.log")
					return string(b)
				}
				_, out, _ := runOn(t, h, "journalctl -u k3s -n 100 --no-pager -o cat")
				return out
			}
			require.Eventually(t, func() bool { return strings.Contains(logs(), "k3s is up and running") }, 20*time.Second, 5*time.Millisecond, "waiting for %s", "k3s's log")
			assert.Contains(t, logs(), `args="server --node-name=cp-0 --node-ip=10.0.0.11 --cluster-init" token=set`)
			// What a node that does not become ready reports: the last
			// lines of the same log.
			assert.Contains(t, mustRun(t, h, "set -- k3s\n"+lastLogScript), "k3s is up and running")
			if init == vmhost.InitSystemd {
				l := logs()
				assert.Contains(t, l, "Starting k3s.service - Lightweight Kubernetes (written by openctl)...\n")
				assert.Contains(t, l, "Started k3s.service - Lightweight Kubernetes (written by openctl).\n")
				// The unit's ExecStartPre=-/sbin/modprobe runs quietly:
				// the simulated kernel has the modules built in.
				assert.NotContains(t, l, "modprobe")
				assert.Equal(t, "enabled\n", mustRun(t, h, "systemctl is-enabled k3s"))
				_, err := os.Lstat(filepath.Join(h.Dir(), "etc/systemd/system/multi-user.target.wants/k3s.service"))
				assert.NoError(t, err, "enable links the unit")
				pid := strings.TrimSpace(mustRun(t, h, "systemctl show -p MainPID --value k3s"))
				assert.NotEqual(t, "0", pid)
				// A restart (the provider's, --no-block) gives a new process.
				mustRun(t, h, k3sStart(t, init, true))
				require.Eventually(t, func() bool {
					_, out, _ := runOn(t, h, "systemctl show -p MainPID --value k3s; systemctl is-active k3s")
					return !strings.HasPrefix(out, pid+"\n") && strings.HasSuffix(out, "\nactive\n") && !strings.HasPrefix(out, "0\n")
				}, 20*time.Second, 5*time.Millisecond, "waiting for %s", "the restarted k3s")
				st, out, errOut := runOn(t, h, "systemctl reload k3s")
				assert.Equal(t, 1, st, out)
				assert.Equal(t, "Failed to reload k3s.service: Job type reload is not applicable for unit k3s.service.\n", errOut)
			} else {
				assert.Equal(t, "/etc/init.d/k3s", readlink(t, h, "/etc/runlevels/default/k3s"))
				mustRun(t, h, k3sStart(t, init, true))
				require.Eventually(t, func() bool { return strings.Count(logs(), "k3s is up and running") == 2 }, 20*time.Second, 5*time.Millisecond, "waiting for %s", "the restarted k3s")
				st, _, errOut := runOn(t, h, "rc-service k3s reload")
				assert.Equal(t, 1, st)
				assert.Equal(t, " * k3s: unknown function `reload'\n", errOut)
			}

			// The provider's stop, as before clearing the datastore.
			mustRun(t, h, k3sStop(t, init))
			assert.NotContains(t, probe(), "active=1")
			assert.Contains(t, logs(), "Shutting down")
			if init == vmhost.InitSystemd {
				assert.Contains(t, logs(), "Stopping k3s.service - Lightweight Kubernetes (written by openctl)...\nlevel=info msg=\"Shutting down\"\nk3s.service: Deactivated successfully.\nStopped k3s.service - Lightweight Kubernetes (written by openctl).\n")
				st, out, _ := runOn(t, h, "systemctl is-active k3s")
				assert.Equal(t, 3, st)
				assert.Equal(t, "inactive\n", out)
			} else {
				st, out, _ := runOn(t, h, "rc-service k3s status")
				assert.Equal(t, 3, st)
				assert.Equal(t, " * status: stopped\n", out)
			}

			// Started again, then the power is cut: nothing runs, and a
			// boot starts the enabled service again.
			mustRun(t, h, k3sStart(t, init, false))
			require.Eventually(t, isActive, 20*time.Second, 5*time.Millisecond, "waiting for %s", "k3s to be active")
			h.PowerOff()
			assert.NotContains(t, probe(), "active=1")
			require.NoError(t, h.Boot(t.Context()))
			require.Eventually(t, isActive, 20*time.Second, 5*time.Millisecond, "waiting for %s", "k3s to be active after a boot")

			// The provider's uninstall script stops and removes it.
			st, out, errOut := runOn(t, h, "set -- k3s\n"+uninstallScript)
			require.Equal(t, 0, st, errOut)
			assert.Empty(t, out)
			assert.NotContains(t, probe(), "active=1")
			for _, gone := range []string{unitPath, envPath, "/usr/local/bin/k3s"} {
				_, err := os.Lstat(filepath.Join(h.Dir(), gone))
				assert.True(t, os.IsNotExist(err), "%s removed", gone)
			}
			if init == vmhost.InitSystemd {
				_, err := os.Lstat(filepath.Join(h.Dir(), "etc/systemd/system/multi-user.target.wants/k3s.service"))
				assert.True(t, os.IsNotExist(err), "disable removes the link")
				st, _, errOut := runOn(t, h, "systemctl start k3s")
				assert.Equal(t, 5, st)
				assert.Equal(t, "Failed to start k3s.service: Unit k3s.service not found.\n", errOut)
			} else {
				_, err := os.Lstat(filepath.Join(h.Dir(), "etc/runlevels/default/k3s"))
				assert.True(t, os.IsNotExist(err), "rc-update del removes the link")
				_, err = os.Lstat(filepath.Join(h.Dir(), "var/log/k3s.log"))
				assert.True(t, os.IsNotExist(err), "the log is removed")
			}
		})
	}
}

func readlink(t *testing.T, h *vmhost.Host, p string) string {
	t.Helper()
	target, err := os.Readlink(filepath.Join(h.Dir(), p))
	require.NoError(t, err)
	return target
}

// TestAgentService installs the node agent's service (agent.InstallFiles'
// unit and OpenRC script), enables and starts it with
// agent.EnableCommands as the provider runs them, reloads its
// credentials with agent.ReloadCommand (SIGHUP, which the stand-in agent
// takes from Call.Reloads), and checks the provider's agent probe.
func TestAgentService(t *testing.T) {
	for _, init := range []agent.InitSystem{agent.Systemd, agent.OpenRC} {
		t.Run(string(init), func(t *testing.T) {
			vinit := vmhost.InitSystemd
			if init == agent.OpenRC {
				vinit = vmhost.InitOpenRC
			}
			h, err := vmhost.New(filepath.Join(t.TempDir(), "root"), vmhost.Options{Init: vinit, Programs: map[string]vmhost.Program{"openctl-agent": fakeAgent}})
			require.NoError(t, err)
			defer h.Close()
			files, err := agent.InstallFiles(agent.InstallOptions{Init: init, Listen: ":9443"})
			require.NoError(t, err)
			unit := ""
			for _, f := range files {
				switch f.Kind {
				case agent.KindDir:
					mustRun(t, h, "install -d -m 0700 "+remote.Quote(f.Path))
				case agent.KindService:
					require.NoError(t, h.WriteFile(f.Path, f.Content, f.Mode))
					unit = f.Path
				default:
					require.NoError(t, h.WriteFile(f.Path, []byte(string(f.Kind)+"\n"), f.Mode))
				}
			}
			probe := func() string {
				return mustRun(t, h, "set -- "+unit+" "+agent.DefaultConfigDir+"\n"+agentProbeScript)
			}
			assert.NotContains(t, probe(), "active=1")
			cmds, err := agent.EnableCommands(init)
			require.NoError(t, err)
			mustRun(t, h, commandScript(cmds))
			require.Eventually(t, func() bool { return strings.Contains(probe(), "active=1") }, 20*time.Second, 5*time.Millisecond, "waiting for %s", "the agent to run")

			logs := func() string {
				if init == agent.OpenRC {
					b, _ := h.ReadFile(agent.OpenRCLogPath)
					return string(b)
				}
				_, out, _ := runOn(t, h, "journalctl -u openctl-agent --no-pager -o cat")
				return out
			}
			require.Eventually(t, func() bool {
				return strings.Contains(logs(), "openctl-agent listening on --listen :9443 --ca /etc/openctl-agent/ca.pem")
			}, 20*time.Second, 5*time.Millisecond, "waiting for %s", "the agent's log")

			reload, err := agent.ReloadCommand(init)
			require.NoError(t, err)
			out := mustRun(t, h, commandScript([][]string{reload}))
			assert.Empty(t, out)
			require.Eventually(t, func() bool { return strings.Contains(logs(), "credentials reloaded (1)") }, 20*time.Second, 5*time.Millisecond, "waiting for %s", "the reload")
			if init == agent.Systemd {
				assert.Contains(t, logs(), "Reloading openctl-agent.service - openctl node agent...\n")
				assert.Contains(t, logs(), "Reloaded openctl-agent.service - openctl node agent.\n")
			} else {
				// Without >/dev/null, rc-service prints the script's
				// ebegin and eend.
				assert.Equal(t, " * Reloading openctl-agent credentials ...\n [ ok ]\n", mustRun(t, h, "rc-service openctl-agent reload"))
				require.Eventually(t, func() bool { return strings.Contains(logs(), "credentials reloaded (2)") }, 20*time.Second, 5*time.Millisecond, "waiting for %s", "the second reload")
			}

			// A reinstall runs the enable commands again: a restart.
			mustRun(t, h, commandScript(cmds))
			require.Eventually(t, func() bool { return strings.Count(logs(), "listening on") == 2 }, 20*time.Second, 5*time.Millisecond, "waiting for %s", "the restarted agent")
			assert.Contains(t, probe(), "active=1")

			// The K3s uninstall script leaves nothing of the agent running.
			mustRun(t, h, "set -- k3s\n"+uninstallScript)
			assert.NotContains(t, probe(), "active=1")
			_, err = os.Lstat(filepath.Join(h.Dir(), unit))
			assert.True(t, os.IsNotExist(err))
		})
	}
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// initProgram records its calls and says a unit is active when asked
// about "k3s".
func initProgram(calls *[]string) vmhost.Program {
	return func(_ context.Context, c *vmhost.Call) int {
		*calls = append(*calls, strings.Join(c.Args, " "))
		if strings.Contains(strings.Join(c.Args, " "), "is-active") {
			if c.Args[len(c.Args)-1] == "k3s" {
				c.Stdout.Write([]byte("active\n"))
				return 0
			}
			c.Stdout.Write([]byte("inactive\n"))
			return 3
		}
		return 0
	}
}

// k3sProgram answers --version and kubectl's Ready condition.
func k3sProgram(_ context.Context, c *vmhost.Call) int {
	switch {
	case len(c.Args) > 1 && c.Args[1] == "--version":
		c.Stdout.Write([]byte("k3s version v1.37.2+k3s1 (abcdef12)\n"))
	case len(c.Args) > 1 && c.Args[1] == "kubectl":
		c.Stdout.Write([]byte("True"))
	default:
		return 1
	}
	return 0
}

func runOn(t *testing.T, h *vmhost.Host, script string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	st, err := h.Run(t.Context(), script, nil, &out, &errOut, nil, "root")
	require.NoError(t, err)
	return st, out.String(), errOut.String()
}

// TestK3sScripts runs the K3s provider's node status and uninstall
// scripts on a systemd and an OpenRC host whose init system and k3s are
// stand-ins registered through Options.Programs.
func TestK3sScripts(t *testing.T) {
	for _, init := range []string{vmhost.InitSystemd, vmhost.InitOpenRC} {
		t.Run(init, func(t *testing.T) {
			var calls []string
			programs := map[string]vmhost.Program{"k3s": k3sProgram}
			unit := "/etc/systemd/system/k3s.service"
			if init == vmhost.InitSystemd {
				programs["/usr/bin/systemctl"] = initProgram(&calls)
			} else {
				programs["/sbin/rc-service"] = initProgram(&calls)
				programs["/sbin/rc-update"] = initProgram(&calls)
				unit = "/etc/init.d/k3s"
			}
			h, err := vmhost.New(filepath.Join(t.TempDir(), "root"), vmhost.Options{Init: init, Programs: programs})
			require.NoError(t, err)
			defer h.Close()
			st, _, stderr := runOn(t, h, `set -e
mkdir -p /etc/rancher/k3s /etc/rancher/node /var/lib/rancher/k3s/server /etc/openctl-agent
echo unit > `+unit+`
echo k3s > /usr/local/bin/k3s && chmod 0755 /usr/local/bin/k3s
ln -s k3s /usr/local/bin/kubectl && ln -s /usr/local/bin/k3s /usr/local/bin/crictl && ln -s /usr/bin/cat /usr/local/bin/ctr
echo T > /var/lib/rancher/k3s/server/token && echo A > /var/lib/rancher/k3s/server/agent-token
echo 'apiVersion: v1' > /etc/rancher/k3s/k3s.yaml
echo pw > /etc/rancher/node/password`)
			require.Equal(t, 0, st, stderr)

			st, stdout, stderr := runOn(t, h, "set -- k3s cp-0 whole\n"+nodeStatusScript)
			assert.Equal(t, 0, st)
			assert.Empty(t, stderr)
			want := "installed=1\nstate=active\nversion=v1.37.2+k3s1\nready=True\n" +
				"--- /var/lib/rancher/k3s/server/token\nT\n\n--- /var/lib/rancher/k3s/server/agent-token\nA\n\n--- /etc/rancher/k3s/k3s.yaml\napiVersion: v1\n\n"
			assert.Equal(t, want, stdout)
			// The lighter reads a wait polls with.
			for read, want := range map[string]string{"poll": "installed=1\nstate=active\nready=True\n", "service": "installed=1\nstate=active\n"} {
				st, stdout, stderr = runOn(t, h, "set -- k3s cp-0 "+read+"\n"+nodeStatusScript)
				assert.Equal(t, 0, st, read)
				assert.Empty(t, stderr, read)
				assert.Equal(t, want, stdout, read)
			}

			st, stdout, stderr = runOn(t, h, "set -- k3s\n"+uninstallScript)
			assert.Equal(t, 0, st)
			assert.Empty(t, stdout)
			assert.Empty(t, stderr)
			for _, gone := range []string{unit, "usr/local/bin/k3s", "usr/local/bin/kubectl", "usr/local/bin/crictl", "etc/rancher/k3s", "var/lib/rancher/k3s", "etc/openctl-agent"} {
				_, err := os.Lstat(filepath.Join(h.Dir(), gone))
				assert.True(t, os.IsNotExist(err), "%s removed", gone)
			}
			for _, kept := range []string{"etc/rancher/node/password", "usr/local/bin/ctr"} {
				_, err := os.Lstat(filepath.Join(h.Dir(), kept))
				assert.NoError(t, err, "%s kept", kept)
			}
			if init == vmhost.InitSystemd {
				assert.Contains(t, calls, "systemctl disable --now k3s")
				assert.Contains(t, calls, "systemctl daemon-reload")
			} else {
				assert.Contains(t, calls, "rc-service k3s stop")
				assert.Contains(t, calls, "rc-update del openctl-agent default")
			}
		})
	}
}

// TestInstallScriptRunOnHost runs the provider's install-script path with a curl
// stand-in that "downloads" an installer recording what it was given.
func TestInstallScriptRunOnHost(t *testing.T) {
	installer := `#!/bin/sh
set -e
echo "version=$INSTALL_K3S_VERSION skip=$INSTALL_K3S_SKIP_START token=$K3S_TOKEN args=$*" > /root/installer.log
`
	curl := func(_ context.Context, c *vmhost.Call) int {
		for i, a := range c.Args {
			if a == "-o" && i+1 < len(c.Args) {
				f, err := c.Open(c.Args[i+1], os.O_WRONLY|os.O_TRUNC, 0)
				if err != nil {
					return c.Errorf(23, "%v", err)
				}
				defer f.Close()
				f.Write([]byte(installer))
				return 0
			}
		}
		return 2
	}
	script := "set -- https://get.k3s.io /run/vars.env v1.37.2+k3s1 HASH server --node-name=cp-0\n" + installScriptRun
	for _, withCurl := range []bool{false, true} {
		programs := map[string]vmhost.Program{}
		if withCurl {
			programs["/usr/bin/curl"] = curl
		}
		h, err := vmhost.New(filepath.Join(t.TempDir(), "root"), vmhost.Options{Init: vmhost.InitSystemd, Programs: programs})
		require.NoError(t, err)
		t.Cleanup(func() { _ = h.Close() })
		require.NoError(t, os.WriteFile(filepath.Join(h.Dir(), "run/vars.env"), []byte("K3S_TOKEN='tok'\n"), 0o600))
		st, stdout, stderr := runOn(t, h, script)
		leftovers, err := filepath.Glob(filepath.Join(h.Dir(), "tmp/tmp.*"))
		require.NoError(t, err)
		assert.Empty(t, leftovers, "the downloaded script is removed")
		_, err = os.Stat(filepath.Join(h.Dir(), "run/vars.env"))
		assert.True(t, os.IsNotExist(err), "the variables file is removed at once")
		if !withCurl {
			assert.Equal(t, 1, st)
			assert.Equal(t, "neither curl nor wget is installed to fetch https://get.k3s.io\n", stderr)
			continue
		}
		require.Equal(t, 0, st, stderr)
		assert.Empty(t, stdout)
		log, err := os.ReadFile(filepath.Join(h.Dir(), "root/installer.log"))
		require.NoError(t, err)
		assert.Equal(t, "version=v1.37.2+k3s1 skip=true token=tok args=server --node-name=cp-0\n", string(log))
		rec, err := os.ReadFile(filepath.Join(h.Dir(), "etc/rancher/k3s/openctl-install.sha256"))
		require.NoError(t, err)
		assert.Equal(t, "HASH\n", string(rec))
	}
}
