package vmhost_test

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/remote"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// waitFor waits until cond holds (it is checked every few milliseconds,
// for up to 20 seconds: a condition, not a duration, is what is awaited).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 20*time.Second, 5*time.Millisecond, "waiting for %s", what)
}

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

// readFile returns the host's file p ("" when missing).
func readFile(h *vmhost.Host, p string) string {
	b, _ := os.ReadFile(filepath.Join(h.Dir(), p))
	return string(b)
}

// writeFile puts a file on the host as the provider's uploads do.
func writeFile(t *testing.T, h *vmhost.Host, p, content string, mode os.FileMode) {
	t.Helper()
	full := filepath.Join(h.Dir(), p)
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(t, os.WriteFile(full, []byte(content), mode))
	require.NoError(t, os.Chmod(full, mode))
}

// k3sUnit renders the provider's service for a server (k3s.unitFile's
// templates, read from its source) with extra arguments.
func k3sUnit(t *testing.T, init string, extra ...string) string {
	if init == vmhost.InitOpenRC {
		args := []string{remote.Quote("server")}
		for _, a := range extra {
			args = append(args, remote.Quote(a))
		}
		tmpl := k3sTemplate(t, "unitFile", "#!/sbin/openrc-run")
		return fmt.Sprintf(tmpl, "k3s", "/usr/local/bin/k3s", strings.ReplaceAll(strings.Join(args, " "), `"`, `\"`), "/etc/rancher/k3s/k3s.env")
	}
	tmpl := k3sTemplate(t, "unitFile", "[Unit]")
	s := fmt.Sprintf(tmpl, "/etc/systemd/system/k3s.service.env", "/usr/local/bin/k3s", "server")
	for _, a := range extra {
		s += fmt.Sprintf(" \\\n    '%s'", strings.ReplaceAll(a, "'", `'\''`))
	}
	return s + "\n"
}

// k3sStart is the provider's startScript for a server.
func k3sStart(t *testing.T, init string, restart bool) string {
	verb := "start"
	if restart {
		verb = "restart"
	}
	if init == vmhost.InitOpenRC {
		return fmt.Sprintf(k3sTemplate(t, "startScript", "rc-update add"), "k3s", "k3s", verb)
	}
	return fmt.Sprintf(k3sTemplate(t, "startScript", "systemctl daemon-reload"), "/etc/systemd/system/k3s.service", verb, "k3s")
}

// k3sStop is the provider's stopScript for a server.
func k3sStop(t *testing.T, init string) string {
	parts := funcStrings(t, "../../k3s", "stopScript") // "rc-service ", " stop", "systemctl stop "
	require.Len(t, parts, 3)
	if init == vmhost.InitOpenRC {
		return parts[0] + "k3s" + parts[1]
	}
	return parts[2] + "k3s"
}

// shellCommands renders argument vectors as the provider runs them (its
// installAgent step).
func shellCommands(cmds ...[]string) string {
	var b strings.Builder
	b.WriteString("set -e\n")
	for _, c := range cmds {
		for i, w := range c {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(remote.Quote(w))
		}
		b.WriteString(" >/dev/null\n")
	}
	return b.String()
}

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
			writeFile(t, h, "/usr/local/bin/k3s", "k3s binary\n", 0o755)
			writeFile(t, h, envPath, "# Written by openctl.\nK3S_TOKEN='K10secret'\n", 0o600)
			writeFile(t, h, unitPath, k3sUnit(t, init, "--node-name=cp-0", "--node-ip=10.0.0.11", "--cluster-init"), 0o755)

			probe := func() string {
				return mustRun(t, h, "set -- k3s 10.0.0.11\n"+k3sScript(t, "probeScript"))
			}
			assert.NotContains(t, probe(), "active=1")

			mustRun(t, h, k3sStart(t, init, false))
			isActive := func() bool { return strings.Contains(probe(), "active=1") }
			waitFor(t, "k3s to be active", isActive)
			out := probe()
			assert.Contains(t, out, "init="+init+"\n")
			assert.Contains(t, out, "version=v1.37.2+k3s1\n")
			assert.Contains(t, out, "iface=eth0\n")
			status := mustRun(t, h, "set -- k3s cp-0 whole\n"+k3sScript(t, "nodeStatusScript"))
			assert.Contains(t, status, "installed=1\nstate=active\n")

			logs := func() string {
				if init == vmhost.InitOpenRC {
					return readFile(h, "/var/log/k3s.log")
				}
				_, out, _ := runOn(t, h, "journalctl -u k3s -n 100 --no-pager -o cat")
				return out
			}
			waitFor(t, "k3s's log", func() bool { return strings.Contains(logs(), "k3s is up and running") })
			assert.Contains(t, logs(), `args="server --node-name=cp-0 --node-ip=10.0.0.11 --cluster-init" token=set`)
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
				waitFor(t, "the restarted k3s", func() bool {
					_, out, _ := runOn(t, h, "systemctl show -p MainPID --value k3s; systemctl is-active k3s")
					return !strings.HasPrefix(out, pid+"\n") && strings.HasSuffix(out, "\nactive\n") && !strings.HasPrefix(out, "0\n")
				})
				st, out, errOut := runOn(t, h, "systemctl reload k3s")
				assert.Equal(t, 1, st, out)
				assert.Equal(t, "Failed to reload k3s.service: Job type reload is not applicable for unit k3s.service.\n", errOut)
			} else {
				assert.Equal(t, "/etc/init.d/k3s", readlink(t, h, "/etc/runlevels/default/k3s"))
				mustRun(t, h, k3sStart(t, init, true))
				waitFor(t, "the restarted k3s", func() bool { return strings.Count(logs(), "k3s is up and running") == 2 })
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
			waitFor(t, "k3s to be active", isActive)
			h.PowerOff()
			assert.NotContains(t, probe(), "active=1")
			require.NoError(t, h.Boot(t.Context()))
			waitFor(t, "k3s to be active after a boot", isActive)

			// The provider's uninstall script stops and removes it.
			st, out, errOut := runOn(t, h, "set -- k3s\n"+k3sScript(t, "uninstallScript"))
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
					writeFile(t, h, f.Path, string(f.Content), f.Mode)
					unit = f.Path
				default:
					writeFile(t, h, f.Path, string(f.Kind)+"\n", f.Mode)
				}
			}
			probe := func() string {
				return mustRun(t, h, "set -- "+unit+" "+agent.DefaultConfigDir+"\n"+k3sScript(t, "agentProbeScript"))
			}
			assert.NotContains(t, probe(), "active=1")
			cmds, err := agent.EnableCommands(init)
			require.NoError(t, err)
			mustRun(t, h, shellCommands(cmds...))
			waitFor(t, "the agent to run", func() bool { return strings.Contains(probe(), "active=1") })

			logs := func() string {
				if init == agent.OpenRC {
					return readFile(h, agent.OpenRCLogPath)
				}
				_, out, _ := runOn(t, h, "journalctl -u openctl-agent --no-pager -o cat")
				return out
			}
			waitFor(t, "the agent's log", func() bool {
				return strings.Contains(logs(), "openctl-agent listening on --listen :9443 --ca /etc/openctl-agent/ca.pem")
			})

			reload, err := agent.ReloadCommand(init)
			require.NoError(t, err)
			out := mustRun(t, h, shellCommands(reload))
			assert.Empty(t, out)
			waitFor(t, "the reload", func() bool { return strings.Contains(logs(), "credentials reloaded (1)") })
			if init == agent.Systemd {
				assert.Contains(t, logs(), "Reloading openctl-agent.service - openctl node agent...\n")
				assert.Contains(t, logs(), "Reloaded openctl-agent.service - openctl node agent.\n")
			} else {
				// Without >/dev/null, rc-service prints the script's
				// ebegin and eend.
				assert.Equal(t, " * Reloading openctl-agent credentials ...\n [ ok ]\n", mustRun(t, h, "rc-service openctl-agent reload"))
				waitFor(t, "the second reload", func() bool { return strings.Contains(logs(), "credentials reloaded (2)") })
			}

			// A reinstall runs the enable commands again: a restart.
			mustRun(t, h, shellCommands(cmds...))
			waitFor(t, "the restarted agent", func() bool { return strings.Count(logs(), "listening on") == 2 })
			assert.Contains(t, probe(), "active=1")

			// The K3s uninstall script leaves nothing of the agent running.
			mustRun(t, h, "set -- k3s\n"+k3sScript(t, "uninstallScript"))
			assert.NotContains(t, probe(), "active=1")
			_, err = os.Lstat(filepath.Join(h.Dir(), unit))
			assert.True(t, os.IsNotExist(err))
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }
