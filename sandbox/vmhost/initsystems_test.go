package vmhost_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/sandbox/vmhost"
)

// daemon is a test service program; its first argument says how it
// behaves: ready (notify, then run, logging reloads), fail (exit 1),
// never (run without ever being ready), exit0, env (print $FOO and $BAR,
// then as ready).
func daemon(ctx context.Context, c *vmhost.Call) int {
	mode := ""
	if len(c.Args) > 1 {
		mode = c.Args[1]
	}
	switch mode {
	case "fail":
		fmt.Fprintln(c.Stderr, "boom")
		return 1
	case "exit0":
		return 0
	case "never":
		<-ctx.Done()
		return 0
	case "env":
		fmt.Fprintf(c.Stdout, "FOO=%s BAR=%s\n", c.Getenv("FOO"), c.Getenv("BAR"))
	}
	fmt.Fprintln(c.Stdout, "up")
	c.NotifyReady()
	for {
		select {
		case <-ctx.Done():
			return 0
		case <-c.Reloads():
			fmt.Fprintln(c.Stdout, "reload")
		}
	}
}

func newInitHost(t *testing.T, init string) *vmhost.Host {
	t.Helper()
	h, err := vmhost.New(filepath.Join(t.TempDir(), "root"), vmhost.Options{
		Hostname: "cp-0", Init: init, Programs: map[string]vmhost.Program{"/usr/local/bin/daemon": daemon},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// unitFile is a service unit running daemon with mode.
func unitFile(desc, typ, mode string, extra ...string) string {
	return "[Unit]\nDescription=" + desc + "\n\n[Service]\nType=" + typ + "\nExecStart=/usr/local/bin/daemon " + mode + "\n" +
		strings.Join(extra, "\n") + "\n\n[Install]\nWantedBy=multi-user.target\n"
}

type cmdResult struct {
	status         int
	stdout, stderr string
}

func sh(t *testing.T, h *vmhost.Host, script string) cmdResult {
	t.Helper()
	var out, errOut strings.Builder
	st, err := h.Run(t.Context(), script, nil, &out, &errOut, nil, "root")
	require.NoError(t, err)
	return cmdResult{st, out.String(), errOut.String()}
}

// TestSystemctlUnknownUnits: what systemctl and journalctl say of a unit
// that does not exist, and of a command they do not know.
func TestSystemctlUnknownUnits(t *testing.T) {
	h := newInitHost(t, vmhost.InitSystemd)
	for _, tc := range []struct {
		cmd  string
		want cmdResult
	}{
		{"systemctl start nope", cmdResult{5, "", "Failed to start nope.service: Unit nope.service not found.\n"}},
		{"systemctl restart nope.service", cmdResult{5, "", "Failed to restart nope.service: Unit nope.service not found.\n"}},
		{"systemctl stop nope", cmdResult{5, "", "Failed to stop nope.service: Unit nope.service not loaded.\n"}},
		{"systemctl reload nope", cmdResult{5, "", "Failed to reload nope.service: Unit nope.service not found.\n"}},
		{"systemctl is-active nope", cmdResult{3, "inactive\n", ""}},
		{"systemctl is-active --quiet nope", cmdResult{3, "", ""}},
		{"systemctl is-failed nope", cmdResult{1, "inactive\n", ""}},
		{"systemctl is-enabled nope", cmdResult{1, "", "Failed to get unit file state for nope.service: No such file or directory\n"}},
		{"systemctl status nope", cmdResult{4, "", "Unit nope.service could not be found.\n"}},
		{"systemctl show -p LoadState -p ActiveState nope", cmdResult{0, "LoadState=not-found\nActiveState=inactive\n", ""}},
		{"systemctl enable nope", cmdResult{1, "", "Failed to enable unit: Unit file nope.service does not exist.\n"}},
		{"systemctl disable --now nope", cmdResult{1, "", "Failed to disable unit: Unit file nope.service does not exist.\n"}},
		{"systemctl frobnicate x", cmdResult{1, "", "Unknown command verb 'frobnicate'.\n"}},
		{"systemctl --bogus start x", cmdResult{1, "", "systemctl: unrecognized option '--bogus'\n"}},
		{"systemctl start", cmdResult{1, "", "Too few arguments.\n"}},
		{"journalctl -u nope --no-pager", cmdResult{0, "-- No entries --\n", ""}},
		{"journalctl -q -u nope", cmdResult{0, "", ""}},
		{"journalctl --bogus", cmdResult{1, "", "journalctl: unrecognized option '--bogus'\n"}},
		{"kill 4242", cmdResult{1, "", "sh: 1: kill: No such process\n"}},
		{"/bin/kill -HUP 4242", cmdResult{1, "", "kill: (4242): No such process\n"}},
	} {
		assert.Equal(t, tc.want, sh(t, h, tc.cmd), tc.cmd)
	}
	// Not as another user: polkit has no one to ask.
	for _, tc := range []struct {
		cmd  string
		want cmdResult
	}{
		{"systemctl start a", cmdResult{1, "", "Failed to start a.service: Interactive authentication required.\n"}},
		{"systemctl daemon-reload", cmdResult{1, "", "Failed to reload daemon: Interactive authentication required.\n"}},
		{"systemctl is-active a", cmdResult{3, "inactive\n", ""}},
		{"sudo -n systemctl start a", cmdResult{5, "", "Failed to start a.service: Unit a.service not found.\n"}},
		{"/bin/kill -HUP 4242", cmdResult{1, "", "kill: (4242): No such process\n"}},
	} {
		var out, errOut strings.Builder
		st, err := h.Run(t.Context(), tc.cmd, nil, &out, &errOut, nil, "debian")
		require.NoError(t, err)
		assert.Equal(t, tc.want, cmdResult{st, out.String(), errOut.String()}, tc.cmd)
	}
}

// TestSystemdService: a Type=notify unit's start waits for the program's
// NotifyReady; its environment comes from Environment= and
// EnvironmentFile= (a missing optional one skipped); reload runs
// ExecReload (kill -HUP $MAINPID, which reaches Call.Reloads); status,
// show, enable, disable and the journal look as systemd's do.
func TestSystemdService(t *testing.T) {
	h := newInitHost(t, vmhost.InitSystemd)
	writeFile(t, h, "/etc/systemd/system/a.service", unitFile("Alpha", "notify", "env",
		"EnvironmentFile=-/etc/default/a", "EnvironmentFile=/etc/a.env", `Environment="FOO=foo bar"`,
		"ExecReload=/bin/kill -HUP $MAINPID", "TimeoutStartSec=0"), 0o644)
	writeFile(t, h, "/etc/a.env", "# comment\nBAR='from file'\n", 0o600)

	r := sh(t, h, "systemctl enable a.service")
	assert.Equal(t, cmdResult{0, "", "Created symlink '/etc/systemd/system/multi-user.target.wants/a.service' → '/etc/systemd/system/a.service'.\n"}, r)
	assert.Equal(t, cmdResult{0, "enabled\n", ""}, sh(t, h, "systemctl is-enabled a"))
	assert.Equal(t, cmdResult{0, "", ""}, sh(t, h, "systemctl enable a"), "enabling again changes nothing")

	// The start returns once the program is ready: no waiting needed.
	assert.Equal(t, cmdResult{0, "active\n", ""}, sh(t, h, "systemctl start a && systemctl is-active a"))
	assert.Equal(t, cmdResult{1, "active\n", ""}, sh(t, h, "systemctl is-failed a"))
	journal := sh(t, h, "journalctl -u a -o cat --no-pager").stdout
	assert.Equal(t, "Starting a.service - Alpha...\nFOO=foo bar BAR=from file\nup\nStarted a.service - Alpha.\n", journal)

	pid := strings.TrimSpace(sh(t, h, "systemctl show -p MainPID --value a").stdout)
	assert.Regexp(t, `^[1-9][0-9]*$`, pid)
	short := sh(t, h, "journalctl -u a -n 1").stdout
	assert.Regexp(t, regexp.MustCompile(`^[A-Z][a-z]{2} [0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} cp-0 systemd\[1\]: Started a\.service - Alpha\.\n$`), short)
	short = sh(t, h, "journalctl -u a -n 2 --no-pager").stdout
	assert.Contains(t, short, " cp-0 daemon["+pid+"]: up\n")

	st := sh(t, h, "systemctl status a")
	assert.Equal(t, 0, st.status)
	lines := strings.Split(st.stdout, "\n")
	assert.Equal(t, "● a.service - Alpha", lines[0])
	assert.Equal(t, "     Loaded: loaded (/etc/systemd/system/a.service; enabled; preset: enabled)", lines[1])
	assert.Regexp(t, `^     Active: active \(running\) since \w{3} \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC; \d+s ago$`, lines[2])
	assert.Equal(t, "   Main PID: "+pid+" (daemon)", lines[3])
	assert.Contains(t, st.stdout, "systemd[1]: Started a.service - Alpha.\n")

	// Reload: ExecReload sends SIGHUP, the program takes it.
	assert.Equal(t, cmdResult{0, "", ""}, sh(t, h, "systemctl reload a"))
	waitFor(t, "the reload", func() bool { return strings.Contains(sh(t, h, "journalctl -u a -o cat").stdout, "\nreload\n") })
	journal = sh(t, h, "journalctl -u a -o cat").stdout
	assert.Contains(t, journal, "Reloading a.service - Alpha...\n")
	assert.Contains(t, journal, "Reloaded a.service - Alpha.\n")

	// A changed unit file is used after daemon-reload only.
	writeFile(t, h, "/etc/systemd/system/a.service", strings.Replace(unitFile("Alpha", "notify", "env", "ExecReload=/bin/kill -HUP $MAINPID"), "Alpha", "Alpha 2", 1), 0o644)
	st = sh(t, h, "systemctl status a")
	assert.Equal(t, "Warning: The unit file, source configuration file or drop-ins of a.service changed on disk. Run 'systemctl daemon-reload' to reload units.\n", st.stderr)
	assert.Equal(t, cmdResult{0, "Alpha\nyes\n", ""}, sh(t, h, "systemctl show -p Description -p NeedDaemonReload --value a"))
	assert.Equal(t, cmdResult{0, "Alpha 2\nno\n", ""}, sh(t, h, "systemctl daemon-reload; systemctl show -p Description -p NeedDaemonReload --value a"))

	// Stop.
	assert.Equal(t, cmdResult{3, "inactive\n", ""}, sh(t, h, "systemctl stop a; systemctl is-active a"))
	journal = sh(t, h, "journalctl -u a -o cat").stdout
	assert.True(t, strings.HasSuffix(journal, "Stopping a.service - Alpha 2...\na.service: Deactivated successfully.\nStopped a.service - Alpha 2.\n"), journal)
	st = sh(t, h, "systemctl status a")
	assert.Equal(t, 3, st.status)
	assert.True(t, strings.HasPrefix(st.stdout, "○ a.service - Alpha 2\n     Loaded: loaded (/etc/systemd/system/a.service; enabled; preset: enabled)\n     Active: inactive (dead) since "), st.stdout)
	assert.Contains(t, st.stdout, "   Main PID: "+pid+" (code=killed, signal=TERM)\n")
	r = sh(t, h, "systemctl reload a")
	assert.Equal(t, cmdResult{1, "", "a.service is not active, cannot reload.\n"}, r)

	// Disable.
	assert.Equal(t, cmdResult{0, "", "Removed '/etc/systemd/system/multi-user.target.wants/a.service'.\n"}, sh(t, h, "systemctl disable a"))
	assert.Equal(t, cmdResult{1, "disabled\n", ""}, sh(t, h, "systemctl is-enabled a"))

	// A unit without ExecReload cannot reload; one without [Install] is
	// static and cannot be enabled.
	writeFile(t, h, "/etc/systemd/system/s.service", "[Service]\nExecStart=/usr/local/bin/daemon ready\n", 0o644)
	assert.Equal(t, cmdResult{0, "static\n", ""}, sh(t, h, "systemctl is-enabled s"))
	r = sh(t, h, "systemctl enable s")
	assert.Equal(t, 0, r.status)
	assert.True(t, strings.HasPrefix(r.stderr, "The unit files have no installation config"), r.stderr)
	r = sh(t, h, "systemctl start s && systemctl reload s")
	assert.Equal(t, cmdResult{1, "", "Failed to reload s.service: Job type reload is not applicable for unit s.service.\n"}, r)
}

// TestSystemdFailures: how systemd reports a program that exits, a
// readiness that never comes, a failing ExecStartPre, a kill, and a
// service that keeps failing (restarts, then the start limit).
func TestSystemdFailures(t *testing.T) {
	h := newInitHost(t, vmhost.InitSystemd)
	seeDetails := func(u string) string {
		return "See \"systemctl status " + u + "\" and \"journalctl -xeu " + u + "\" for details.\n"
	}

	writeFile(t, h, "/etc/systemd/system/f.service", unitFile("Failing", "notify", "fail"), 0o644)
	r := sh(t, h, "systemctl start f")
	assert.Equal(t, cmdResult{1, "", "Job for f.service failed because the control process exited with error code.\n" + seeDetails("f.service")}, r)
	assert.Equal(t, cmdResult{3, "failed\n", ""}, sh(t, h, "systemctl is-active f"))
	assert.Equal(t, cmdResult{0, "failed\n", ""}, sh(t, h, "systemctl is-failed f"))
	assert.Equal(t, cmdResult{0, "failed\nfailed\nexit-code\n1\n", ""}, sh(t, h, "systemctl show -p ActiveState -p SubState -p Result -p ExecMainStatus --value f"))
	assert.Equal(t, "Starting f.service - Failing...\nboom\nf.service: Main process exited, code=exited, status=1/FAILURE\nf.service: Failed with result 'exit-code'.\nFailed to start f.service - Failing.\n",
		sh(t, h, "journalctl -u f -o cat").stdout)
	st := sh(t, h, "systemctl status f")
	assert.Equal(t, 3, st.status)
	assert.Contains(t, st.stdout, "× f.service - Failing\n")
	assert.Contains(t, st.stdout, "     Active: failed (Result: exit-code) since ")
	assert.Contains(t, st.stdout, "   Main PID: ")
	assert.Contains(t, st.stdout, " (code=exited, status=1/FAILURE)\n")
	assert.Equal(t, cmdResult{3, "inactive\n", ""}, sh(t, h, "systemctl reset-failed f; systemctl is-active f"))

	// A notify program that exits 0 before it is ready breaks the protocol.
	writeFile(t, h, "/etc/systemd/system/e.service", unitFile("Early", "notify", "exit0"), 0o644)
	r = sh(t, h, "systemctl start e")
	assert.Equal(t, cmdResult{1, "", "Job for e.service failed because the service did not take the steps required by its unit configuration.\n" + seeDetails("e.service")}, r)
	assert.Equal(t, "Starting e.service - Early...\ne.service: Failed with result 'protocol'.\nFailed to start e.service - Early.\n", sh(t, h, "journalctl -u e -o cat").stdout)

	// A readiness that never comes times out.
	writeFile(t, h, "/etc/systemd/system/t.service", unitFile("Slow", "notify", "never", "TimeoutStartSec=200ms"), 0o644)
	r = sh(t, h, "systemctl start t")
	assert.Equal(t, cmdResult{1, "", "Job for t.service failed because a timeout was exceeded.\n" + seeDetails("t.service")}, r)
	assert.Contains(t, sh(t, h, "journalctl -u t -o cat").stdout, "t.service: start operation timed out. Terminating.\nt.service: Failed with result 'timeout'.\nFailed to start t.service - Slow.\n")

	// --no-block returns at once; the start goes on.
	writeFile(t, h, "/etc/systemd/system/n.service", unitFile("NoBlock", "notify", "never"), 0o644)
	assert.Equal(t, cmdResult{3, "activating\n", ""}, sh(t, h, "systemctl start --no-block n; systemctl is-active n"))
	assert.Equal(t, cmdResult{0, "activating\nstart\n", ""}, sh(t, h, "systemctl show -p ActiveState -p SubState --value n"))
	assert.Equal(t, cmdResult{3, "inactive\n", ""}, sh(t, h, "systemctl stop n; systemctl is-active n"))

	// ExecStartPre: a failure fails the start, unless the line has "-".
	writeFile(t, h, "/etc/systemd/system/p.service", unitFile("Pre", "simple", "ready", "ExecStartPre=/usr/local/bin/daemon fail"), 0o644)
	r = sh(t, h, "systemctl start p")
	assert.Equal(t, 1, r.status)
	assert.Contains(t, sh(t, h, "journalctl -u p -o cat").stdout, "p.service: Control process exited, code=exited, status=1/FAILURE\np.service: Failed with result 'exit-code'.\n")
	writeFile(t, h, "/etc/systemd/system/p.service", unitFile("Pre", "simple", "ready", "ExecStartPre=-/usr/local/bin/daemon fail"), 0o644)
	assert.Equal(t, cmdResult{0, "active\n", ""}, sh(t, h, "systemctl daemon-reload; systemctl start p; systemctl is-active p"))

	// ExecStart is run as execve would: a script needs its #! line (sh
	// would run one without, systemd does not).
	writeFile(t, h, "/usr/local/bin/plain", "echo plain\n", 0o755)
	writeFile(t, h, "/usr/local/bin/script", "#!/bin/sh\necho \"script $1 as $0\"\n", 0o755)
	writeFile(t, h, "/etc/systemd/system/x.service", "[Unit]\nDescription=X\n[Service]\nType=oneshot\nExecStart=/usr/local/bin/script one\nExecStart=/usr/local/bin/plain\n", 0o644)
	r = sh(t, h, "systemctl start x")
	assert.Equal(t, 1, r.status)
	assert.Equal(t, "Starting x.service - X...\nscript one as /usr/local/bin/script\nx.service: Failed at step EXEC spawning /usr/local/bin/plain: Exec format error\n"+
		"x.service: Main process exited, code=exited, status=203/EXEC\nx.service: Failed with result 'exit-code'.\nFailed to start x.service - X.\n",
		sh(t, h, "journalctl -u x -o cat").stdout)

	// kill: TERM is a clean end (Restart=on-failure does not restart),
	// KILL is not (it does).
	writeFile(t, h, "/etc/systemd/system/k.service", unitFile("Killed", "simple", "ready", "Restart=on-failure", "RestartSec=10ms"), 0o644)
	require.Equal(t, 0, sh(t, h, "systemctl start k").status)
	waitFor(t, "k's output", func() bool { return strings.Contains(sh(t, h, "journalctl -u k -o cat").stdout, "up") })
	r = sh(t, h, `kill -TERM "$(systemctl show -p MainPID --value k)"`)
	require.Equal(t, cmdResult{0, "", ""}, r)
	waitFor(t, "k to end", func() bool { return sh(t, h, "systemctl is-active k").stdout == "inactive\n" })
	assert.True(t, strings.HasSuffix(sh(t, h, "journalctl -u k -o cat").stdout, "k.service: Deactivated successfully.\n"))
	require.Equal(t, 0, sh(t, h, "systemctl start k").status)
	pid := strings.TrimSpace(sh(t, h, "systemctl show -p MainPID --value k").stdout)
	require.Equal(t, cmdResult{0, "", ""}, sh(t, h, "/bin/kill -9 "+pid))
	waitFor(t, "k's restart", func() bool {
		return strings.Contains(sh(t, h, "journalctl -u k -o cat").stdout, "k.service: Scheduled restart job, restart counter is at 1.\n") &&
			sh(t, h, "systemctl is-active k").stdout == "active\n"
	})
	assert.Contains(t, sh(t, h, "journalctl -u k -o cat").stdout, "k.service: Main process exited, code=killed, status=9/KILL\nk.service: Failed with result 'signal'.\n")
	assert.Equal(t, "1\n", sh(t, h, "systemctl show -p NRestarts --value k").stdout)
	assert.NotEqual(t, pid+"\n", sh(t, h, "systemctl show -p MainPID --value k").stdout)

	// A program that keeps failing is restarted until the start limit
	// (5 starts in 10 s) stops it: the sixth start is refused.
	writeFile(t, h, "/etc/systemd/system/r.service", unitFile("Restarting", "simple", "fail", "Restart=always", "RestartSec=10ms"), 0o644)
	require.Equal(t, cmdResult{0, "", ""}, sh(t, h, "systemctl start r"))
	waitFor(t, "the start limit", func() bool { return sh(t, h, "systemctl is-active r").stdout == "failed\n" })
	assert.Equal(t, cmdResult{0, "start-limit-hit\n5\n", ""}, sh(t, h, "systemctl show -p Result -p NRestarts --value r"))
	journal := sh(t, h, "journalctl -u r -o cat").stdout
	assert.Equal(t, 5, strings.Count(journal, "boom\n"), journal)
	assert.Contains(t, journal, "r.service: Scheduled restart job, restart counter is at 5.\nr.service: Start request repeated too quickly.\nr.service: Failed with result 'start-limit-hit'.\nFailed to start r.service - Restarting.\n")
	r = sh(t, h, "systemctl start r")
	assert.Equal(t, cmdResult{1, "", "Job for r.service failed because start of the service was attempted too often.\n" + seeDetails("r.service")}, r)

	// StartLimitBurst= sets the limit.
	writeFile(t, h, "/etc/systemd/system/l.service", strings.Replace(unitFile("Limited", "simple", "fail", "Restart=always", "RestartSec=10ms"), "[Service]", "StartLimitBurst=2\n\n[Service]", 1), 0o644)
	require.Equal(t, cmdResult{0, "", ""}, sh(t, h, "systemctl start l"))
	waitFor(t, "the start limit", func() bool { return sh(t, h, "systemctl is-active l").stdout == "failed\n" })
	assert.Equal(t, cmdResult{0, "start-limit-hit\n2\n", ""}, sh(t, h, "systemctl show -p Result -p NRestarts --value l"))
}

// TestJournalctlFollow: journalctl -f prints the last lines, then what
// is logged, until its context ends.
func TestJournalctlFollow(t *testing.T) {
	h := newInitHost(t, vmhost.InitSystemd)
	writeFile(t, h, "/etc/systemd/system/a.service", unitFile("Alpha", "notify", "ready", "ExecReload=/bin/kill -HUP $MAINPID"), 0o644)
	require.Equal(t, 0, sh(t, h, "systemctl start a").status)
	ctx, cancel := context.WithCancel(t.Context())
	var out syncBuffer
	done := make(chan int)
	go func() {
		st, _ := h.Run(ctx, "journalctl -u a -n 1 -f -o cat", nil, &out, nil, nil, "root")
		done <- st
	}()
	waitFor(t, "the last line", func() bool { return out.String() == "Started a.service - Alpha.\n" })
	require.Equal(t, 0, sh(t, h, "systemctl reload a").status)
	waitFor(t, "the followed lines", func() bool { return strings.Contains(out.String(), "reload\n") })
	assert.True(t, strings.HasPrefix(out.String(), "Started a.service - Alpha.\nReloading a.service - Alpha...\n"), out.String())
	cancel()
	assert.Equal(t, 143, <-done)
}

// TestSystemdBoot: Boot starts the enabled units only; PowerOff stops
// everything without a word in the journal.
func TestSystemdBoot(t *testing.T) {
	h := newInitHost(t, vmhost.InitSystemd)
	writeFile(t, h, "/etc/systemd/system/on.service", unitFile("On", "notify", "ready"), 0o644)
	writeFile(t, h, "/etc/systemd/system/off.service", unitFile("Off", "notify", "ready"), 0o644)
	require.Equal(t, 0, sh(t, h, "systemctl enable on").status)
	require.NoError(t, h.Boot(t.Context()))
	waitFor(t, "the boot", func() bool { return sh(t, h, "systemctl is-active on").stdout == "active\n" })
	assert.Equal(t, "inactive\n", sh(t, h, "systemctl is-active off").stdout)
	before := sh(t, h, "journalctl -u on -o cat").stdout
	h.PowerOff()
	assert.Equal(t, cmdResult{3, "inactive\n", ""}, sh(t, h, "systemctl is-active on"))
	assert.Equal(t, before, sh(t, h, "journalctl -u on -o cat").stdout, "a power cut logs nothing")
	require.NoError(t, h.Boot(t.Context()))
	waitFor(t, "the second boot", func() bool { return sh(t, h, "systemctl is-active on").stdout == "active\n" })

	// A host made again on the same disk boots what was enabled there;
	// the journal, in memory, starts empty.
	require.NoError(t, h.Close())
	h2, err := vmhost.New(h.Dir(), vmhost.Options{Hostname: "cp-0", Init: vmhost.InitSystemd, Programs: map[string]vmhost.Program{"/usr/local/bin/daemon": daemon}})
	require.NoError(t, err)
	defer h2.Close()
	assert.Equal(t, cmdResult{3, "inactive\n", ""}, sh(t, h2, "systemctl is-active on"))
	require.NoError(t, h2.Boot(t.Context()))
	waitFor(t, "the new host's boot", func() bool { return sh(t, h2, "systemctl is-active on").stdout == "active\n" })
	assert.Equal(t, "Starting on.service - On...\nup\nStarted on.service - On.\n", sh(t, h2, "journalctl -u on -o cat").stdout)
}

// openrcScript is an init script running daemon with mode.
func openrcScript(mode string, extra ...string) string {
	return "#!/sbin/openrc-run\nname=\"demo daemon\"\ncommand=/usr/local/bin/daemon\ncommand_args=\"" + mode + "\"\noutput_log=/var/log/demo.log\nerror_log=/var/log/demo.log\n" + strings.Join(extra, "\n") + "\n"
}

// TestOpenRC: rc-service, rc-update, supervise-daemon and running an
// init script directly, as OpenRC prints and exits.
func TestOpenRC(t *testing.T) {
	h := newInitHost(t, vmhost.InitOpenRC)
	for _, tc := range []struct {
		cmd  string
		want cmdResult
	}{
		{"rc-service nope start", cmdResult{1, "", " * rc-service: service `nope' does not exist\n"}},
		{"rc-service nope status", cmdResult{1, "", " * rc-service: service `nope' does not exist\n"}},
		{"rc-service -i nope start", cmdResult{0, "", ""}},
		{"rc-service -e nope", cmdResult{1, "", ""}},
		{"rc-update add nope", cmdResult{1, "", " * rc-update: service `nope' does not exist\n"}},
		{"rc-update add nope bogus", cmdResult{1, "", " * rc-update: runlevel `bogus' does not exist\n"}},
		{"supervise-daemon demo --signal HUP", cmdResult{1, "", " * supervise-daemon: The RC_SVCNAME environment variable is not set\n"}},
		{"RC_SVCNAME=demo supervise-daemon other --signal HUP", cmdResult{1, "", " * supervise-daemon: the first argument is other and must be demo\n"}},
		{"RC_SVCNAME=demo supervise-daemon demo --signal HUP", cmdResult{1, "", " * supervise-daemon: unable to open control fifo No such file or directory\n"}},
	} {
		assert.Equal(t, tc.want, sh(t, h, tc.cmd), tc.cmd)
	}

	// A supervised daemon.
	writeFile(t, h, "/etc/init.d/demo", openrcScript("ready", "supervisor=supervise-daemon", "respawn_delay=1",
		`extra_started_commands="reload"`,
		`start_pre() { einfo "preparing"; }`,
		`reload() { ebegin "Reloading"; supervise-daemon "$RC_SVCNAME" --signal HUP; eend $?; }`), 0o755)
	assert.Equal(t, cmdResult{1, "", " * demo: cannot `reload' as it has not been started\n"}, sh(t, h, "rc-service demo reload"))
	assert.Equal(t, cmdResult{3, " * status: stopped\n", ""}, sh(t, h, "rc-service demo status"))
	assert.Equal(t, cmdResult{0, " * service demo added to runlevel default\n", ""}, sh(t, h, "rc-update add demo default"))
	assert.Equal(t, cmdResult{0, "", " * rc-update: demo already installed in runlevel `default'; skipping\n"}, sh(t, h, "rc-update add demo"))
	assert.Equal(t, cmdResult{0, " * preparing\n * Starting demo daemon ...\n [ ok ]\n", ""}, sh(t, h, "rc-service demo start"))
	assert.Equal(t, cmdResult{0, "", " * WARNING: demo has already been started\n"}, sh(t, h, "rc-service demo start"))
	assert.Equal(t, cmdResult{0, " * status: started\n", ""}, sh(t, h, "/etc/init.d/demo status"))
	assert.Equal(t, cmdResult{0, "", ""}, sh(t, h, "rc-service -q demo status"))
	waitFor(t, "the log", func() bool { return readFile(h, "/var/log/demo.log") == "up\n" })
	assert.Equal(t, cmdResult{0, " * Reloading ...\n [ ok ]\n", ""}, sh(t, h, "rc-service demo reload"))
	waitFor(t, "the reload", func() bool { return readFile(h, "/var/log/demo.log") == "up\nreload\n" })
	assert.Equal(t, cmdResult{1, "", " * demo: unknown function `frob'\n"}, sh(t, h, "rc-service demo frob"))
	// The supervisor respawns a daemon that dies.
	assert.Equal(t, cmdResult{0, "", ""}, sh(t, h, "RC_SVCNAME=demo supervise-daemon demo --signal KILL"))
	waitFor(t, "the respawn", func() bool { return readFile(h, "/var/log/demo.log") == "up\nreload\nup\n" })
	assert.Equal(t, cmdResult{0, " * status: started\n", ""}, sh(t, h, "rc-service demo status"))
	assert.Equal(t, cmdResult{0, " * Stopping demo daemon ...\n [ ok ]\n * preparing\n * Starting demo daemon ...\n [ ok ]\n", ""}, sh(t, h, "rc-service demo restart"))
	assert.Equal(t, cmdResult{0, " * Stopping demo daemon ...\n [ ok ]\n", ""}, sh(t, h, "rc-service demo stop"))
	assert.Equal(t, cmdResult{0, "", " * WARNING: demo is already stopped\n"}, sh(t, h, "rc-service demo stop"))

	// Boot starts the default runlevel; PowerOff stops it.
	require.NoError(t, h.Boot(t.Context()))
	assert.Equal(t, cmdResult{0, " * status: started\n", ""}, sh(t, h, "rc-service demo status"))
	h.PowerOff()
	assert.Equal(t, cmdResult{3, " * status: stopped\n", ""}, sh(t, h, "rc-service demo status"))
	assert.Equal(t, cmdResult{0, " * service demo removed from runlevel default\n", ""}, sh(t, h, "rc-update del demo"))
	assert.Equal(t, cmdResult{1, "", " * rc-update: service `demo' is not in the runlevel `default'\n"}, sh(t, h, "rc-update del demo default"))

	// Without a supervisor a daemon that exits has crashed.
	writeFile(t, h, "/etc/init.d/crash", openrcScript("fail"), 0o755)
	assert.Equal(t, 0, sh(t, h, "rc-service crash start").status)
	waitFor(t, "the crash", func() bool { return sh(t, h, "rc-service crash status").status == 32 })
	assert.Equal(t, cmdResult{32, "", " * status: crashed\n"}, sh(t, h, "rc-service crash status"))
	assert.Equal(t, 0, sh(t, h, "rc-service crash stop").status)
	assert.Equal(t, cmdResult{3, " * status: stopped\n", ""}, sh(t, h, "rc-service crash status"))

	// A supervisor gives up after respawn_max respawns.
	writeFile(t, h, "/var/log/demo.log", "", 0o644)
	writeFile(t, h, "/etc/init.d/giveup", openrcScript("fail", "supervisor=supervise-daemon", "respawn_delay=1", "respawn_max=1"), 0o755)
	assert.Equal(t, 0, sh(t, h, "rc-service giveup start").status)
	waitFor(t, "the supervisor to give up", func() bool { return sh(t, h, "rc-service giveup status").status == 3 })
	assert.Equal(t, "boom\nboom\n", readFile(h, "/var/log/demo.log"))

	// Failures to start.
	writeFile(t, h, "/etc/init.d/pre", openrcScript("ready", `start_pre() { eerror "not configured"; return 1; }`), 0o755)
	assert.Equal(t, cmdResult{1, "", " * not configured\n * ERROR: pre failed to start\n"}, sh(t, h, "rc-service pre start"))
	writeFile(t, h, "/etc/init.d/missing", "#!/sbin/openrc-run\nsupervisor=supervise-daemon\ncommand=/usr/local/bin/nope\n", 0o755)
	assert.Equal(t, cmdResult{1, " * Starting missing ...\n [ !! ]\n", " * supervise-daemon: /usr/local/bin/nope does not exist\n * failed to start missing\n * ERROR: missing failed to start\n"}, sh(t, h, "rc-service missing start"))
	writeFile(t, h, "/etc/init.d/nocmd", "#!/sbin/openrc-run\nsupervisor=supervise-daemon\n", 0o755)
	assert.Equal(t, cmdResult{1, "", " * The command variable is undefined.\n * There is nothing for nocmd to start.\n * ERROR: nocmd failed to start\n"}, sh(t, h, "rc-service nocmd start"))
}
