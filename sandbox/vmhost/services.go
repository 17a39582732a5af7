package vmhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Service states (systemctl is-active's words).
const (
	stInactive     = "inactive"
	stActivating   = "activating"
	stActive       = "active"
	stReloading    = "reloading"
	stDeactivating = "deactivating"
	stFailed       = "failed"
)

// systemd's defaults.
const (
	defaultStartTimeout = 90 * time.Second
	defaultStopTimeout  = 90 * time.Second
	defaultRestartSec   = 100 * time.Millisecond
	startLimitBurst     = 5
	startLimitInterval  = 10 * time.Second
	// powerOffWait bounds how long PowerOff and Close wait for the
	// programs of the services to return once their contexts ended.
	powerOffWait = 10 * time.Second
)

// execLine is one Exec line of a unit (or the command of an init script).
type execLine struct {
	argv   []string
	ignore bool // "-" prefix: a failure is not one
}

// svcConfig is a service as loaded from its unit file or init script.
type svcConfig struct {
	name        string // k3s.service (systemd) or k3s (OpenRC)
	path        string // the unit file or init script
	source      string // the files' contents when loaded (systemd)
	description string
	typ         string // simple, exec, notify, oneshot
	pre         []execLine
	start       []execLine // one, but for Type=oneshot
	reload      []execLine
	env         []string // Environment=, in order
	envFiles    []envFile
	restart     string // no, always, on-failure, on-abnormal, on-success
	restartSec  time.Duration
	startTO     time.Duration // 0: no limit
	stopTO      time.Duration // 0: no limit
	remain      bool          // RemainAfterExit
	install     bool          // has an [Install] section
	wantedBy    []string
	workDir     string
	// respawnMax limits the restarts (OpenRC's respawn_max; 0: none);
	// systemd's start limit applies instead when startLimit is set.
	respawnMax    int
	respawnPeriod time.Duration
	// startLimit applies systemd's start rate limit: startBurst starts
	// in startInterval (StartLimitBurst=, StartLimitIntervalSec=; an
	// interval of 0 turns it off).
	startLimit    bool
	startBurst    int
	startInterval time.Duration
	// OpenRC: where the program's output goes ("": nowhere) and the
	// environment it is started with (the init script's exports).
	openrc         bool
	stdout, stderr string
	fixedEnv       []string
}

type envFile struct {
	path     string
	optional bool
}

// proc is one running program of a service: its main process or a
// control process (ExecStartPre, ExecReload).
type proc struct {
	pid    int
	ident  string
	cancel context.CancelFunc
	done   chan struct{} // closed when the program has returned
	reload chan struct{} // the program's Reloads (main process only)
	// signal is the signal that ended it ("TERM", "KILL"), set by
	// whoever cancelled it; "" when the program returned by itself.
	signal  string
	timeout bool // cancelled because its start timed out
}

// job is a pending start job that callers may wait for.
type job struct {
	done   chan struct{}
	result string // "done", "failed", "canceled", "timeout", "start-limit-hit", "exit-code"…
}

func newJob() *job { return &job{done: make(chan struct{})} }

// service is a service's state in the manager. Guarded by manager.mu.
type service struct {
	name  string
	cfg   *svcConfig // the loaded definition; nil when not loaded
	state string
	sub   string
	// result is why it last failed ("success" otherwise).
	result    string
	since     time.Time
	main      *proc
	control   *proc
	gen       int // bumped by each launch and stop: stale events compare it
	job       *job
	stopDone  chan struct{} // closed when a stop in progress ends
	pending   *job          // a start queued behind a stop in progress
	timer     *time.Timer   // auto-restart or start timeout
	nRestarts int
	// The last main process: its PID and how it ended.
	mainPID    int
	exitCode   string // exited, killed
	exitStatus int
	starts     []time.Time // recent launches, for the start limit
	// OpenRC's respawn count since firstSpawn.
	respawns   int
	firstSpawn time.Time
}

// manager runs a host's services. Its programs are goroutines: each has
// its own context, cancelled to stop it.
type manager struct {
	h       *Host
	kind    string   // InitSystemd or InitOpenRC
	journal *journal // nil for OpenRC

	mu      sync.Mutex
	svcs    map[string]*service
	pids    map[int]*proc
	nextPID int
	wg      sync.WaitGroup
}

func newManager(h *Host, kind string) *manager {
	m := &manager{h: h, kind: kind, svcs: map[string]*service{}, pids: map[int]*proc{}, nextPID: 300}
	if kind == InitSystemd {
		m.journal = newJournal()
	}
	return m
}

// get returns the service's record, creating it. Call with mu held.
func (m *manager) get(name string) *service {
	sv, ok := m.svcs[name]
	if !ok {
		sv = &service{name: name, state: stInactive, sub: "dead", result: "success"}
		m.svcs[name] = sv
	}
	return sv
}

// logf writes a message of the service manager about sv to the journal.
func (m *manager) logf(sv *service, format string, args ...any) {
	m.journal.systemd(sv.name, format, args...)
}

// label is "k3s.service - Lightweight Kubernetes" as systemd names a unit
// in its messages.
func label(sv *service) string {
	if sv.cfg != nil && sv.cfg.description != "" {
		return sv.name + " - " + sv.cfg.description
	}
	return sv.name
}

func (m *manager) setState(sv *service, state, sub string) {
	if sv.state != state {
		sv.since = time.Now()
	}
	sv.state, sv.sub = state, sub
}

// finishJob ends the pending start job with result.
func (m *manager) finishJob(sv *service, result string) {
	if sv.job == nil {
		return
	}
	if result != "done" && result != "canceled" && m.journal != nil {
		m.logf(sv, "Failed to start %s.", label(sv))
	}
	sv.job.result = result
	close(sv.job.done)
	sv.job = nil
}

// start begins starting sv with its loaded configuration and returns
// the job to wait for; nil when it already runs. Call with mu held.
func (m *manager) start(sv *service) *job {
	switch sv.state {
	case stActive, stReloading:
		return nil
	case stActivating:
		if sv.job == nil {
			sv.job = newJob()
		}
		if sv.sub == "auto-restart" {
			sv.timer.Stop()
			m.launch(sv)
		}
		return sv.job
	case stDeactivating:
		if sv.pending == nil {
			sv.pending = newJob()
		}
		return sv.pending
	}
	sv.job = newJob()
	j := sv.job
	sv.nRestarts, sv.respawns, sv.firstSpawn = 0, 0, time.Time{}
	m.launch(sv)
	return j
}

// limited reports whether one more launch would exceed systemd's start
// limit (by default 5 starts in 10 s). OpenRC's respawn_max is
// afterEnd's.
func (m *manager) limited(sv *service) bool {
	cfg := sv.cfg
	if !cfg.startLimit || cfg.startInterval <= 0 || cfg.startBurst <= 0 {
		return false
	}
	now := time.Now()
	sv.starts = slices.DeleteFunc(sv.starts, func(t time.Time) bool { return now.Sub(t) > cfg.startInterval })
	return len(sv.starts) >= cfg.startBurst
}

// launch runs the service's ExecStartPre lines and then its main
// program, in a goroutine. Call with mu held.
func (m *manager) launch(sv *service) {
	cfg := sv.cfg
	sv.gen++
	gen := sv.gen
	if m.limited(sv) {
		m.logf(sv, "%s: Start request repeated too quickly.", sv.name)
		m.logf(sv, "%s: Failed with result 'start-limit-hit'.", sv.name)
		sv.result = "start-limit-hit"
		m.setState(sv, stFailed, "failed")
		if sv.job == nil {
			m.logf(sv, "Failed to start %s.", label(sv))
		}
		m.finishJob(sv, "start-limit-hit")
		return
	}
	if cfg.startLimit {
		sv.starts = append(sv.starts, time.Now())
	}
	if sv.firstSpawn.IsZero() {
		sv.firstSpawn = time.Now()
	}
	sub := "start"
	if len(cfg.pre) > 0 {
		sub = "start-pre"
	}
	m.setState(sv, stActivating, sub)
	if cfg.typ != "simple" || len(cfg.pre) > 0 {
		m.logf(sv, "Starting %s...", label(sv))
	}
	env, err := m.environment(cfg)
	if err != nil {
		m.logf(sv, "%s: Failed to load environment files: %v", sv.name, err)
		m.logf(sv, "%s: Failed to spawn 'start-pre' task: %v", sv.name, err)
		m.failed(sv, "resources")
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for _, l := range cfg.pre {
			m.mu.Lock()
			if sv.gen != gen {
				m.mu.Unlock()
				return
			}
			p := m.newProc(sv, l.argv, false)
			sv.control = p
			m.mu.Unlock()
			status := m.run(p, sv, cfg, l.argv, env, nil)
			m.mu.Lock()
			if sv.control == p {
				sv.control = nil
			}
			if sv.gen != gen {
				m.mu.Unlock()
				return
			}
			if status != 0 && !l.ignore {
				m.logf(sv, "%s: Control process exited, code=%s, status=%s", sv.name, exitCode(p), exitText(p, status))
				result := "exit-code"
				if p.signal != "" {
					result = "signal"
				}
				m.failed(sv, result)
				m.mu.Unlock()
				return
			}
			m.mu.Unlock()
		}
		for i, l := range cfg.start {
			m.mu.Lock()
			if sv.gen != gen {
				m.mu.Unlock()
				return
			}
			p := m.newProc(sv, l.argv, true)
			sv.main, sv.mainPID, sv.exitCode, sv.exitStatus = p, p.pid, "", 0
			m.setState(sv, stActivating, "start")
			switch cfg.typ {
			case "notify":
				if cfg.startTO > 0 {
					sv.timer = time.AfterFunc(cfg.startTO, func() { m.startTimedOut(sv, p) })
				}
			case "oneshot":
			default:
				m.active(sv)
			}
			m.mu.Unlock()
			hooks := &ServiceHooks{Ready: func() { m.ready(sv, p) }, Reload: p.reload}
			status := m.run(p, sv, cfg, l.argv, env, hooks)
			m.mu.Lock()
			last := i == len(cfg.start)-1 || status != 0
			m.exited(sv, p, status, last)
			m.mu.Unlock()
			if !last {
				continue
			}
			return
		}
	}()
}

// newProc registers a process of sv. Call with mu held.
func (m *manager) newProc(sv *service, argv []string, main bool) *proc {
	m.nextPID++
	p := &proc{pid: m.nextPID, ident: ident(argv[0]), done: make(chan struct{})}
	if main {
		p.reload = make(chan struct{}, 1)
	}
	m.pids[p.pid] = p
	return p
}

// ident is the name a process logs under: its command's base name, cut
// to the 15 bytes of a Linux comm.
func ident(cmd string) string {
	b := path.Base(cmd)
	if len(b) > 15 {
		b = b[:15]
	}
	return b
}

// run runs one program of sv and returns its exit status; an executable
// that cannot be found or run fails with 203 as systemd's EXEC step does.
func (m *manager) run(p *proc, sv *service, cfg *svcConfig, argv []string, env []string, hooks *ServiceHooks) int {
	ctx, cancel := context.WithCancel(context.Background())
	m.mu.Lock()
	p.cancel = cancel
	canceled := p.signal != ""
	m.mu.Unlock()
	defer func() {
		cancel()
		m.mu.Lock()
		delete(m.pids, p.pid)
		m.mu.Unlock()
		close(p.done)
	}()
	if canceled {
		return 143
	}
	stdout, stderr, closeOut, err := m.outputs(sv, cfg, p)
	if err != nil {
		return 1 // supervise-daemon: unable to open the logfile
	}
	defer closeOut()
	if !cfg.openrc {
		argv = expandExec(argv, env)
	}
	if len(argv) == 0 {
		return 203
	}
	f := fsys{h: m.h, user: "root"}
	file := argv[0]
	if !strings.HasPrefix(file, "/") {
		file = m.h.lookPath(f, envValue(env, "PATH"), file)
	}
	fi, err := f.stat(file)
	if file == "" || err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 || !m.h.executable(f, file) {
		why := "No such file or directory"
		switch {
		case err == nil && file != "" && (fi.IsDir() || fi.Mode().Perm()&0o111 == 0):
			why = "Permission denied"
		case err == nil && file != "":
			why = "Exec format error"
		}
		if cfg.openrc {
			fmt.Fprintf(stderr, " * supervise-daemon: failed to exec `%s': %s\n", argv[0], why)
			return 1
		}
		if why != "Exec format error" {
			m.journal.add(sv.name, "("+ident(argv[0])+")", p.pid, fmt.Sprintf("%s: Unable to locate executable '%s': %s", sv.name, argv[0], why))
		}
		m.journal.add(sv.name, "("+ident(argv[0])+")", p.pid, fmt.Sprintf("%s: Failed at step EXEC spawning %s: %s", sv.name, argv[0], why))
		return 203
	}
	dir := "/"
	if cfg.workDir != "" {
		dir = cfg.workDir
	}
	c := &Call{
		Args: argv, Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr,
		Env: env, Host: m.h, User: "root", Dir: dir,
	}
	if hooks != nil {
		c = c.WithService(hooks)
	}
	return m.h.exec(ctx, c)
}

// outputs returns where a process's output goes: the journal (systemd)
// or the init script's log files (OpenRC).
func (m *manager) outputs(sv *service, cfg *svcConfig, p *proc) (io.Writer, io.Writer, func(), error) {
	if !cfg.openrc {
		w := &lineWriter{emit: func(line string) { m.journal.add(sv.name, p.ident, p.pid, line) }}
		return w, w, w.flush, nil
	}
	open := func(name string) (io.WriteCloser, error) {
		if name == "" {
			return discardCloser{}, nil
		}
		return fsys{h: m.h, user: "root"}.open(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	}
	out, err := open(cfg.stdout)
	if err != nil {
		return nil, nil, nil, err
	}
	errw := out
	if cfg.stderr != cfg.stdout {
		if errw, err = open(cfg.stderr); err != nil {
			out.Close()
			return nil, nil, nil, err
		}
	}
	return out, errw, func() {
		out.Close()
		if errw != out {
			errw.Close()
		}
	}, nil
}

// environment is what a service's programs get: systemd's own
// variables, then Environment= and EnvironmentFile= in order.
func (m *manager) environment(cfg *svcConfig) ([]string, error) {
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}
	if cfg.openrc {
		return append(env, cfg.fixedEnv...), nil
	}
	env = append(env, "INVOCATION_ID="+strconv.FormatInt(time.Now().UnixNano(), 16))
	if cfg.typ == "notify" {
		env = append(env, "NOTIFY_SOCKET=/run/systemd/notify")
	}
	env = append(env, cfg.env...)
	for _, ef := range cfg.envFiles {
		b, err := fsys{h: m.h, user: "root"}.readFile(ef.path)
		if err != nil {
			if ef.optional {
				continue
			}
			return nil, err
		}
		env = append(env, parseEnvFile(string(b))...)
	}
	return env, nil
}

// active marks sv started. Call with mu held.
func (m *manager) active(sv *service) {
	sub := "running"
	if sv.cfg.typ == "oneshot" {
		sub = "exited"
	}
	m.setState(sv, stActive, sub)
	if sv.cfg.typ == "oneshot" {
		m.logf(sv, "Finished %s.", label(sv))
	} else {
		m.logf(sv, "Started %s.", label(sv))
	}
	m.finishJob(sv, "done")
}

// ready is the main process's NotifyReady.
func (m *manager) ready(sv *service, p *proc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sv.main != p || sv.state != stActivating || sv.cfg.typ != "notify" {
		return
	}
	if sv.timer != nil {
		sv.timer.Stop()
	}
	m.active(sv)
}

// startTimedOut ends a notify service that did not become ready in time.
func (m *manager) startTimedOut(sv *service, p *proc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sv.main != p || sv.state != stActivating {
		return
	}
	m.logf(sv, "%s: start operation timed out. Terminating.", sv.name)
	p.timeout = true
	m.signal(p, "TERM")
}

// signal ends p as the signal sig would. Call with mu held.
func (m *manager) signal(p *proc, sig string) {
	if p.signal == "" {
		p.signal = sig
	}
	if p.cancel != nil {
		p.cancel()
	}
}

// cleanSignals end a daemon cleanly for systemd (EXIT_CLEAN_DAEMON).
var cleanSignals = map[string]bool{"HUP": true, "INT": true, "TERM": true, "PIPE": true}

var signalNumbers = map[string]int{"HUP": 1, "INT": 2, "QUIT": 3, "KILL": 9, "USR1": 10, "USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15}

// exitCode is systemd's code= of an ended process.
func exitCode(p *proc) string {
	if p.signal != "" {
		return "killed"
	}
	return "exited"
}

// exitText is systemd's status= of an ended process: "1/FAILURE",
// "15/TERM".
func exitText(p *proc, status int) string {
	if p.signal != "" {
		return fmt.Sprintf("%d/%s", signalNumbers[p.signal], p.signal)
	}
	names := map[int]string{0: "SUCCESS", 1: "FAILURE", 2: "INVALIDARGUMENT", 3: "NOTIMPLEMENTED", 4: "NOPERMISSION", 5: "NOTINSTALLED", 6: "NOTCONFIGURED", 7: "NOTRUNNING", 203: "EXEC", 209: "STDOUT", 217: "USER"}
	if n, ok := names[status]; ok {
		return fmt.Sprintf("%d/%s", status, n)
	}
	return fmt.Sprintf("%d/n/a", status)
}

// exited handles the end of a main process. last is false for a
// Type=oneshot line followed by more. Call with mu held.
func (m *manager) exited(sv *service, p *proc, status int, last bool) {
	if sv.main != p || sv.stopDone != nil {
		return // stopped, or powered off: the stopper finishes
	}
	sv.main = nil
	if sv.timer != nil {
		sv.timer.Stop()
	}
	sv.exitCode, sv.exitStatus = exitCode(p), status
	if p.signal != "" {
		sv.exitStatus = signalNumbers[p.signal]
	}
	clean := status == 0 && p.signal == "" || p.signal != "" && cleanSignals[p.signal] && !p.timeout
	if clean && !last {
		return
	}
	cfg := sv.cfg
	result := "success"
	switch {
	case p.timeout:
		result = "timeout"
	case !clean && p.signal != "":
		result = "signal"
	case !clean:
		result = "exit-code"
	case cfg.typ == "notify" && sv.state == stActivating:
		result = "protocol" // gone before READY=1
	}
	if result != "success" && result != "protocol" && !p.timeout {
		m.logf(sv, "%s: Main process exited, code=%s, status=%s", sv.name, sv.exitCode, exitText(p, status))
	}
	if result == "success" {
		if cfg.typ == "oneshot" && sv.state == stActivating {
			if cfg.remain {
				m.active(sv)
				return
			}
			m.logf(sv, "%s: Deactivated successfully.", sv.name)
			m.setState(sv, stInactive, "dead")
			m.logf(sv, "Finished %s.", label(sv))
			m.finishJob(sv, "done")
			return
		}
		m.logf(sv, "%s: Deactivated successfully.", sv.name)
	} else {
		m.logf(sv, "%s: Failed with result '%s'.", sv.name, result)
	}
	m.afterEnd(sv, result)
}

// failed ends a start that failed before its main process ran (an
// ExecStartPre, the environment). Call with mu held.
func (m *manager) failed(sv *service, result string) {
	m.logf(sv, "%s: Failed with result '%s'.", sv.name, result)
	m.afterEnd(sv, result)
}

// afterEnd applies the restart policy once the service's processes have
// ended with result. Call with mu held.
func (m *manager) afterEnd(sv *service, result string) {
	cfg := sv.cfg
	ok := result == "success"
	restart := false
	switch cfg.restart {
	case "always":
		restart = true
	case "on-failure":
		restart = !ok
	case "on-abnormal":
		restart = result == "signal" || result == "timeout"
	case "on-success":
		restart = ok
	}
	if cfg.respawnMax > 0 {
		if cfg.respawnPeriod > 0 && time.Since(sv.firstSpawn) > cfg.respawnPeriod {
			sv.respawns, sv.firstSpawn = 0, time.Now()
		}
		if sv.respawns >= cfg.respawnMax {
			restart = false
		}
	}
	if !ok {
		sv.result = result
	}
	if !restart {
		if sv.job != nil {
			m.finishJob(sv, result)
		}
		switch {
		case cfg.openrc && cfg.restart == "always":
			m.setState(sv, stInactive, "dead") // the supervisor gave up: stopped
		case cfg.openrc:
			m.setState(sv, stFailed, "failed") // an unsupervised daemon is gone: crashed
		case ok:
			m.setState(sv, stInactive, "dead")
		default:
			m.setState(sv, stFailed, "failed")
		}
		return
	}
	if sv.job != nil && !ok {
		m.finishJob(sv, result)
	}
	m.setState(sv, stActivating, "auto-restart")
	gen := sv.gen
	sv.timer = time.AfterFunc(cfg.restartSec, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if sv.gen != gen || sv.sub != "auto-restart" {
			return
		}
		sv.nRestarts++
		sv.respawns++
		m.logf(sv, "%s: Scheduled restart job, restart counter is at %d.", sv.name, sv.nRestarts)
		m.launch(sv)
	})
}

// stop stops sv: its processes' contexts are cancelled and waited for,
// up to its stop timeout. It returns a channel closed when the stop is
// over. Call with mu held.
func (m *manager) stop(sv *service) <-chan struct{} {
	if sv.stopDone != nil {
		return sv.stopDone
	}
	sv.gen++
	if sv.timer != nil {
		sv.timer.Stop()
	}
	m.finishJob(sv, "canceled")
	procs := []*proc{}
	for _, p := range []*proc{sv.main, sv.control} {
		if p != nil {
			procs = append(procs, p)
		}
	}
	done := make(chan struct{})
	if len(procs) == 0 {
		if sv.state != stFailed {
			m.setState(sv, stInactive, "dead")
		}
		close(done)
		return done
	}
	sv.stopDone = done
	hadMain := sv.main != nil
	m.setState(sv, stDeactivating, "stop-sigterm")
	m.logf(sv, "Stopping %s...", label(sv))
	for _, p := range procs {
		m.signal(p, "TERM")
	}
	to := defaultStopTimeout
	if sv.cfg != nil {
		to = sv.cfg.stopTO
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		var timeout <-chan time.Time
		if to > 0 {
			t := time.NewTimer(to)
			defer t.Stop()
			timeout = t.C
		}
		timedOut := false
		for _, p := range procs {
			select {
			case <-p.done:
			case <-timeout:
				timedOut = true
			}
			if timedOut {
				break
			}
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		sv.main, sv.control, sv.stopDone = nil, nil, nil
		switch {
		case timedOut && sv.cfg != nil && sv.cfg.openrc:
			// supervise-daemon's retry schedule ends with KILL: the
			// service is stopped (the program is left behind).
			m.setState(sv, stInactive, "dead")
		case timedOut:
			// The program does not return: it is left behind, as a
			// process that ignores SIGKILL would be (it cannot be).
			m.logf(sv, "%s: State 'stop-sigterm' timed out. Killing.", sv.name)
			m.logf(sv, "%s: Killing process %d (%s) with signal SIGKILL.", sv.name, procs[0].pid, procs[0].ident)
			m.logf(sv, "%s: Main process exited, code=killed, status=9/KILL", sv.name)
			m.logf(sv, "%s: Failed with result 'timeout'.", sv.name)
			sv.result = "timeout"
			sv.exitCode, sv.exitStatus = "killed", 9
			m.setState(sv, stFailed, "failed")
		default:
			if hadMain {
				sv.exitCode, sv.exitStatus = "killed", 15
			}
			m.logf(sv, "%s: Deactivated successfully.", sv.name)
			m.setState(sv, stInactive, "dead")
		}
		m.logf(sv, "Stopped %s.", label(sv))
		close(done)
		if j := sv.pending; j != nil {
			// A start queued behind the stop (systemctl restart).
			sv.pending = nil
			sv.job = j
			sv.nRestarts, sv.respawns, sv.firstSpawn = 0, 0, time.Time{}
			m.launch(sv)
		}
	}()
	return done
}

// reloadMain asks sv's main process to reload, as SIGHUP does: a
// request not yet taken is not queued twice (signals are not queued).
func reloadMain(p *proc) {
	select {
	case p.reload <- struct{}{}:
	default:
	}
}

// powerOff ends every service at once, as a power cut does: no stop
// commands, no messages. It waits up to powerOffWait for the programs.
func (m *manager) powerOff() {
	m.mu.Lock()
	var procs []*proc
	for _, sv := range m.svcs {
		sv.gen++
		if sv.timer != nil {
			sv.timer.Stop()
		}
		for _, j := range []*job{sv.job, sv.pending} {
			if j != nil {
				j.result = "canceled"
				close(j.done)
			}
		}
		sv.job, sv.pending = nil, nil
		for _, p := range []*proc{sv.main, sv.control} {
			if p != nil {
				m.signal(p, "KILL")
				procs = append(procs, p)
			}
		}
		sv.main, sv.control, sv.stopDone = nil, nil, nil
	}
	// The next boot's init system knows nothing of this one's services
	// (their states, restart counters, loaded units).
	m.svcs = map[string]*service{}
	m.mu.Unlock()
	deadline := time.NewTimer(powerOffWait)
	defer deadline.Stop()
	for _, p := range procs {
		select {
		case <-p.done:
		case <-deadline.C:
			return
		}
	}
	wait := make(chan struct{})
	go func() { m.wg.Wait(); close(wait) }()
	select {
	case <-wait:
	case <-deadline.C:
	}
}

// discardCloser is an io.WriteCloser that discards: a log that is not
// there (OpenRC without output_log).
type discardCloser struct{}

func (discardCloser) Write(b []byte) (int, error) { return len(b), nil }
func (discardCloser) Close() error                { return nil }

// executable reports whether execve(2) would run file: a registered
// program of its name (or of the name of the file it links to), or a
// file with an interpreter line. A script without one is run by a shell
// but not by execve, which fails with ENOEXEC.
func (h *Host) executable(f fsys, file string) bool {
	if _, ok := h.programs[path.Base(file)]; ok {
		return true
	}
	if rp, err := h.resolve(file, true); err == nil {
		if _, ok := h.programs[path.Base(rp)]; ok {
			return true
		}
	}
	r, err := f.open(file, os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer r.Close()
	head := make([]byte, 2)
	n, _ := io.ReadFull(r, head)
	return string(head[:n]) == "#!"
}

// procByPID returns the running process pid.
func (m *manager) procByPID(pid int) *proc {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pids[pid]
}

// parseEnvFile parses an EnvironmentFile: KEY=VALUE lines, the value
// optionally in single or double quotes; blank lines and comments (#,
// ;) skipped.
func parseEnvFile(s string) []string {
	var env []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '\'' && v[len(v)-1] == '\'' || v[0] == '"' && v[len(v)-1] == '"') {
			q := v[0]
			v = v[1 : len(v)-1]
			if q == '"' {
				v = strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\$`, `$`, "\\`", "`").Replace(v)
			}
		}
		env = append(env, strings.TrimSpace(k)+"="+v)
	}
	return env
}

func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// expandExec substitutes $VAR (a whole word, split on whitespace) and
// ${VAR} in an Exec line's words, as systemd does; $$ is a $.
func expandExec(argv, env []string) []string {
	lookup := func(k string) string { return envValue(env, k) }
	out := make([]string, 0, len(argv))
	for _, a := range argv {
		if strings.HasPrefix(a, "$") && !strings.HasPrefix(a, "${") && !strings.HasPrefix(a, "$$") && isName(a[1:]) {
			out = append(out, strings.Fields(lookup(a[1:]))...)
			continue
		}
		var b strings.Builder
		for i := 0; i < len(a); i++ {
			switch {
			case strings.HasPrefix(a[i:], "$$"):
				b.WriteByte('$')
				i++
			case strings.HasPrefix(a[i:], "${"):
				end := strings.IndexByte(a[i:], '}')
				if end < 0 {
					b.WriteString(a[i:])
					i = len(a)
					continue
				}
				b.WriteString(lookup(a[i+2 : i+end]))
				i += end
			default:
				b.WriteByte(a[i])
			}
		}
		out = append(out, b.String())
	}
	return out
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// progKill is kill [-s SIGNAL | -SIGNAL | -n NUM] PID… (procps' kill and
// dash's builtin): the processes it can reach are the main and control
// processes of the host's services. HUP asks a main process to reload
// (Call.Reloads); TERM, INT, QUIT and KILL end it (its context is
// cancelled); 0 checks that it exists; other signals are accepted and
// have no effect.
func progKill(_ context.Context, c *Call) int {
	builtin := c.Args[0] == cmdKill
	fail := func(status int, format string, args ...any) int {
		if builtin {
			return c.shellErr(status, "kill: "+format, args...)
		}
		fmt.Fprintf(c.Stderr, "kill: "+format+"\n", args...)
		return status
	}
	sig := "TERM"
	args := c.Args[1:]
	parseSig := func(s string) (string, bool) {
		s = strings.TrimPrefix(strings.ToUpper(s), "SIG")
		if n, err := strconv.Atoi(s); err == nil {
			if n == 0 {
				return "0", true
			}
			for name, num := range signalNumbers {
				if num == n {
					return name, true
				}
			}
			return "", false
		}
		_, ok := signalNumbers[s]
		return s, ok
	}
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		a := args[0]
		args = args[1:]
		if a == "--" {
			break
		}
		v := a[1:]
		if a == "-s" || a == "-n" {
			if len(args) == 0 {
				return fail(2, "option requires an argument -- '%c'", a[1])
			}
			v, args = args[0], args[1:]
		}
		s, ok := parseSig(v)
		if !ok {
			return fail(1, "invalid signal number or name: %s", v)
		}
		sig = s
	}
	if len(args) == 0 {
		return fail(2, "not enough arguments")
	}
	status := 0
	for _, a := range args {
		pid, err := strconv.Atoi(a)
		if err != nil {
			status = fail(1, "failed to parse argument: '%s'", a)
			continue
		}
		var p *proc
		if m := c.Host.svc; m != nil {
			p = m.procByPID(pid)
		}
		if p == nil {
			if builtin {
				status = fail(1, "No such process")
			} else {
				status = fail(1, "(%d): No such process", pid)
			}
			continue
		}
		switch sig {
		case "0":
		case "HUP":
			if p.reload != nil {
				reloadMain(p)
			}
		case "TERM", "INT", "QUIT", "KILL":
			c.Host.svc.mu.Lock()
			c.Host.svc.signal(p, sig)
			c.Host.svc.mu.Unlock()
		}
	}
	return status
}

// errNotFound is a unit or service that does not exist.
var errNotFound = errors.New("not found")
