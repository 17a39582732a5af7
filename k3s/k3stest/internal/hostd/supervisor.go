package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// request is what a client (systemctl, rc-service) sends on the control
// socket: one JSON line. The supervisor answers with JSON lines of
// [reply], the last one carrying the exit status.
type request struct {
	Cmd     string   `json:"cmd"`
	Units   []string `json:"units"`
	NoBlock bool     `json:"noBlock,omitempty"`
}

type reply struct {
	Stdout string `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
	Exit   *int   `json:"exit,omitempty"`
}

// Service states, as systemctl is-active prints them.
const (
	stInactive     = "inactive"
	stActivating   = "activating"
	stActive       = "active"
	stDeactivating = "deactivating"
	stFailed       = "failed"
)

// supervisor keeps the host's services. Every field of every service is
// guarded by mu.
type supervisor struct {
	openrc bool
	mu     sync.Mutex
	svcs   map[string]*service
}

type service struct {
	name      string
	def       *serviceDef // nil until loaded; dropped by daemon-reload
	state     string
	sub       string // running, start, start-pre, auto-restart, dead, failed
	result    string // why it last failed
	gen       int    // bumped by every start and stop; stale events compare it
	cmd       *exec.Cmd
	done      chan struct{} // closed when cmd exits
	since     time.Time
	activated chan struct{} // closed when the pending start job ends
	jobErr    error         // its outcome
	timer     *time.Timer   // pending auto-restart or start timeout
	stopping  bool
	notify    *net.UnixConn
	journal   *os.File
}

func runSupervisor(args []string) int {
	fs := flag.NewFlagSet("supervise", flag.ContinueOnError)
	flavour := fs.String("flavour", "systemd", "systemd or openrc")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	s := &supervisor{openrc: *flavour == "openrc", svcs: map[string]*service{}}
	ln, err := net.Listen("unix", controlSock)
	if err != nil {
		fmt.Fprintf(os.Stderr, "supervisor: %v\n", err)
		return 1
	}
	go s.runSSHD()
	s.boot()
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintf(os.Stderr, "supervisor: accept: %v\n", err)
			return 1
		}
		go s.serve(c)
	}
}

// runSSHD keeps the host's sshd running; it is not a unit.
func (s *supervisor) runSSHD() {
	for {
		logf, _ := os.OpenFile("/var/log/sshd.log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		cmd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", "/etc/ssh/sshd_config")
		cmd.Stdout, cmd.Stderr, cmd.Env, cmd.Dir = logf, logf, serviceEnv(), "/"
		err := cmd.Run()
		fmt.Fprintf(os.Stderr, "supervisor: sshd exited: %v; restarting\n", err)
		if logf != nil {
			logf.Close()
		}
		time.Sleep(200 * time.Millisecond) // the restart delay of a crashed sshd, not a synchronisation
	}
}

// boot starts every enabled service, without waiting for any.
func (s *supervisor) boot() {
	var names []string
	if s.openrc {
		for _, rl := range []string{"sysinit", "boot", "default"} {
			ents, _ := os.ReadDir(filepath.Join("/etc/runlevels", rl))
			for _, e := range ents {
				names = append(names, e.Name())
			}
		}
	} else {
		wants, _ := filepath.Glob("/etc/systemd/system/*.wants/*")
		sort.Strings(wants)
		seen := map[string]bool{}
		for _, w := range wants {
			n := filepath.Base(w)
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "supervisor: boot: starting %s\n", n)
		if _, err := s.start(n); err != nil {
			fmt.Fprintf(os.Stderr, "supervisor: boot: %s: %v\n", n, err)
		}
	}
}

// get returns the service, creating its record (and notify socket). Call
// with mu held.
func (s *supervisor) get(name string) *service {
	if sv, ok := s.svcs[name]; ok {
		return sv
	}
	sv := &service{name: name, state: stInactive, sub: "dead"}
	if !s.openrc {
		path := filepath.Join(controlDir, "notify", name)
		_ = os.Remove(path)
		if c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"}); err == nil {
			sv.notify = c
			go s.readNotify(sv, c)
		}
		_ = os.MkdirAll(journalDir, 0o755)
		sv.journal, _ = os.OpenFile(filepath.Join(journalDir, name+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	}
	s.svcs[name] = sv
	return sv
}

// load returns the service's definition, reading it if needed. Call with
// mu held.
func (s *supervisor) load(sv *service) (*serviceDef, error) {
	if s.openrc {
		return loadOpenRC(sv.name) // OpenRC reads the script every time
	}
	if sv.def == nil {
		d, err := loadUnit(sv.name)
		if err != nil {
			return nil, err
		}
		sv.def = d
	}
	return sv.def, nil
}

// logf writes a supervisor message to the service's journal.
func (sv *service) logf(format string, args ...any) {
	if sv.journal == nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(sv.journal, "%d 1 systemd %s\n", time.Now().UnixNano(), msg)
}

// start begins a start job for name and returns the channel closed when
// the job ends (nil when the service is already active).
func (s *supervisor) start(name string) (chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv := s.get(name)
	def, err := s.load(sv)
	if err != nil {
		return nil, err
	}
	switch sv.state {
	case stActive:
		return nil, nil
	case stActivating:
		if sv.sub == "auto-restart" {
			sv.timer.Stop()
			s.launch(sv, def)
		}
		return sv.activated, nil
	case stDeactivating:
		return nil, errors.New("the service is stopping")
	}
	sv.activated = make(chan struct{})
	sv.jobErr = nil
	s.launch(sv, def)
	return sv.activated, nil
}

// launch runs ExecStartPre (in a goroutine) and then ExecStart. Call with
// mu held; sv.activated must be open.
func (s *supervisor) launch(sv *service, def *serviceDef) {
	sv.gen++
	gen := sv.gen
	sv.state, sv.sub, sv.since, sv.stopping = stActivating, "start-pre", time.Now(), false
	sv.logf("Starting %s...", descr(def))
	env, err := s.environment(sv, def)
	if err != nil {
		s.failLocked(sv, gen, "resources", fmt.Sprintf("Failed to load environment files: %v", err))
		return
	}
	go func() {
		for _, c := range def.preStart {
			cmd := s.command(sv, def, c, env)
			err := cmd.Run()
			if err != nil && !c.ignoreFailure {
				s.mu.Lock()
				s.failLocked(sv, gen, "exit-code", fmt.Sprintf("Control process exited, %v", err))
				s.mu.Unlock()
				return
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if sv.gen != gen {
			return
		}
		cmd := s.command(sv, def, def.start, env)
		if err := cmd.Start(); err != nil {
			s.failLocked(sv, gen, "exit-code", fmt.Sprintf("Failed to execute %s: %v", def.start.argv[0], err))
			return
		}
		closeOut(cmd)
		sv.cmd, sv.done, sv.sub = cmd, make(chan struct{}), "start"
		go s.wait(sv, gen, cmd, sv.done, def)
		switch def.typ {
		case "notify":
			if def.startTO > 0 {
				sv.timer = time.AfterFunc(def.startTO, func() { s.startTimeout(sv, gen) })
			}
		case "oneshot":
		default:
			s.activeLocked(sv, def)
		}
	}()
}

func descr(def *serviceDef) string {
	if def == nil {
		return "unit"
	}
	if def.description != "" {
		return def.description
	}
	return def.name
}

func (s *supervisor) activeLocked(sv *service, def *serviceDef) {
	sv.state, sv.sub = stActive, "running"
	if def != nil && def.typ == "oneshot" {
		sv.sub = "exited"
	}
	sv.logf("Started %s.", descr(def))
	if sv.activated != nil {
		close(sv.activated)
		sv.activated = nil
	}
}

// failLocked ends a start attempt that failed before the main process
// ran, applying the restart policy.
func (s *supervisor) failLocked(sv *service, gen int, result, msg string) {
	if sv.gen != gen {
		return
	}
	sv.logf("%s: %s", sv.name, msg)
	s.afterExitLocked(sv, true, result)
}

// afterExitLocked decides what happens when the service's process (or a
// start attempt) ended: restart after RestartSec, or rest.
func (s *supervisor) afterExitLocked(sv *service, failed bool, result string) {
	def := sv.def
	if s.openrc || def == nil {
		def, _ = s.load(sv)
	}
	if failed {
		sv.result = result
		sv.logf("%s: Failed with result '%s'.", sv.name, result)
	}
	pending := sv.activated != nil && sv.sub != "auto-restart"
	if pending {
		sv.jobErr = errors.New("failed")
		close(sv.activated)
		sv.activated = nil
	}
	restart := def != nil && (def.restart == "always" || def.restart == "on-failure" && failed)
	if restart {
		delay := def.restartSec
		sv.state, sv.sub = stActivating, "auto-restart"
		if sv.activated == nil {
			sv.activated = make(chan struct{})
		}
		gen := sv.gen
		sv.timer = time.AfterFunc(delay, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if sv.gen != gen || sv.sub != "auto-restart" {
				return
			}
			sv.logf("%s: Scheduled restart job.", sv.name)
			d, err := s.load(sv)
			if err != nil {
				sv.state, sv.sub = stFailed, "failed"
				return
			}
			s.launch(sv, d)
		})
		return
	}
	if failed {
		sv.state, sv.sub = stFailed, "failed"
	} else {
		sv.state, sv.sub = stInactive, "dead"
	}
}

func (s *supervisor) startTimeout(sv *service, gen int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sv.gen != gen || sv.state != stActivating || sv.cmd == nil {
		return
	}
	sv.logf("%s: start operation timed out. Terminating.", sv.name)
	sv.result = "timeout"
	s.signalLocked(sv, syscall.SIGTERM)
}

// wait reaps the main process and applies the restart policy.
func (s *supervisor) wait(sv *service, gen int, cmd *exec.Cmd, done chan struct{}, def *serviceDef) {
	err := cmd.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	close(done)
	if sv.cmd != cmd {
		return
	}
	sv.cmd = nil
	if sv.timer != nil {
		sv.timer.Stop()
	}
	status := "code=exited, status=0/SUCCESS"
	failed := false
	result := "exit-code"
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			status = fmt.Sprintf("code=killed, status=%d/%s", int(ws.Signal()), unix.SignalName(ws.Signal())[3:])
			failed = !(ws.Signal() == syscall.SIGTERM && sv.stopping)
			result = "signal"
		} else {
			status = fmt.Sprintf("code=exited, status=%d/FAILURE", ws.ExitStatus())
			failed = true
		}
	}
	if sv.result == "timeout" {
		failed, result = true, "timeout"
	}
	sv.logf("%s: Main process exited, %s", sv.name, status)
	if sv.stopping || sv.gen != gen {
		return // stop() finishes the bookkeeping
	}
	if def.typ == "oneshot" && !failed && sv.activated != nil {
		if def.remain {
			s.activeLocked(sv, def)
			return
		}
		close(sv.activated)
		sv.activated = nil
		sv.state, sv.sub = stInactive, "dead"
		return
	}
	s.afterExitLocked(sv, failed, result)
}

func (s *supervisor) signalLocked(sv *service, sig syscall.Signal) {
	if sv.cmd == nil || sv.cmd.Process == nil {
		return
	}
	pid := sv.cmd.Process.Pid
	if sv.def != nil && sv.def.killMode == "process" {
		_ = syscall.Kill(pid, sig)
		return
	}
	_ = syscall.Kill(-pid, sig) // the process group
}

// stop stops the service and waits until its process has gone.
func (s *supervisor) stop(name string) error {
	s.mu.Lock()
	sv, ok := s.svcs[name]
	if !ok {
		if _, err := s.load(s.get(name)); err != nil {
			s.mu.Unlock()
			return err
		}
		s.mu.Unlock()
		return nil
	}
	if _, err := s.load(sv); err != nil && sv.cmd == nil {
		s.mu.Unlock()
		return err
	}
	sv.gen++
	if sv.timer != nil {
		sv.timer.Stop()
	}
	if sv.activated != nil {
		sv.jobErr = errors.New("canceled")
		close(sv.activated)
		sv.activated = nil
	}
	if sv.cmd == nil {
		if sv.state != stFailed {
			sv.state, sv.sub = stInactive, "dead"
		}
		s.mu.Unlock()
		return nil
	}
	sv.stopping = true
	sv.state, sv.sub = stDeactivating, "stop-sigterm"
	def := sv.def
	if def == nil || s.openrc {
		def, _ = s.load(sv)
	}
	if def == nil { // an OpenRC script removed while its service runs
		def = &serviceDef{name: sv.name, stopTO: 90 * time.Second, killMode: "control-group"}
	}
	sv.logf("Stopping %s...", descr(def))
	s.signalLocked(sv, syscall.SIGTERM)
	done := sv.done
	pid := sv.cmd.Process.Pid
	to := def.stopTO
	s.mu.Unlock()
	var timeout <-chan time.Time
	if to > 0 {
		timeout = time.After(to)
	}
	select {
	case <-done:
	case <-timeout:
		s.mu.Lock()
		sv.logf("%s: State 'stop-sigterm' timed out. Killing.", sv.name)
		s.signalLocked(sv, syscall.SIGKILL)
		s.mu.Unlock()
		<-done
	}
	s.mu.Lock()
	if def.killMode != "process" {
		_ = syscall.Kill(-pid, syscall.SIGKILL) // whatever remains of the group
	}
	sv.state, sv.sub, sv.stopping = stInactive, "dead", false
	sv.logf("Stopped %s.", descr(def))
	s.mu.Unlock()
	return nil
}

// environment builds the service's environment.
func (s *supervisor) environment(sv *service, def *serviceDef) ([]string, error) {
	env := serviceEnv()
	env = append(env, "INVOCATION_ID="+strconv.FormatInt(time.Now().UnixNano(), 16))
	if s.openrc {
		return append(env, "RC_SVCNAME="+sv.name), nil
	}
	if def.typ == "notify" {
		env = append(env, "NOTIFY_SOCKET="+filepath.Join(controlDir, "notify", sv.name))
	}
	env = append(env, def.env...)
	for _, f := range def.envFiles {
		e, err := readEnvFile(f.path)
		if err != nil {
			if f.optional {
				continue
			}
			return nil, err
		}
		env = append(env, e...)
	}
	return env, nil
}

// command builds an *exec.Cmd for one Exec line, its output going to the
// journal (systemd) or the log files (OpenRC).
func (s *supervisor) command(sv *service, def *serviceDef, c command, env []string) *exec.Cmd {
	argv := c.argv
	if !s.openrc {
		argv = expandEnv(argv, env)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if !filepath.IsAbs(argv[0]) {
		cmd.Path = argv[0]
		for _, d := range strings.Split("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", ":") {
			if _, err := os.Stat(filepath.Join(d, argv[0])); err == nil {
				cmd.Path = filepath.Join(d, argv[0])
				break
			}
		}
		cmd.Err = nil
	}
	cmd.Env = env
	cmd.Dir = "/"
	if def.workDir != "" {
		cmd.Dir = def.workDir
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if s.openrc {
		cmd.Stdout = openLog(def.outputLog)
		cmd.Stderr = openLog(def.errorLog)
		return cmd
	}
	r, w, err := os.Pipe()
	if err != nil {
		return cmd
	}
	cmd.Stdout, cmd.Stderr = w, w
	ident := filepath.Base(argv[0])
	go func() {
		defer r.Close()
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				pid := 0
				if cmd.Process != nil {
					pid = cmd.Process.Pid
				}
				if sv.journal != nil {
					fmt.Fprintf(sv.journal, "%d %d %s %s\n", time.Now().UnixNano(), pid, ident, strings.TrimRight(line, "\n"))
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return cmd
}

// closeOut closes the parent's copies of the child's output files.
func closeOut(cmd *exec.Cmd) {
	for _, w := range []io.Writer{cmd.Stdout, cmd.Stderr} {
		if f, ok := w.(*os.File); ok && f != nil {
			f.Close()
		}
	}
}

func openLog(p string) *os.File {
	if p == "" {
		p = os.DevNull
	}
	_ = os.MkdirAll(filepath.Dir(p), 0o755)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		f, _ = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	return f
}

// readNotify receives sd_notify datagrams for one service.
func (s *supervisor) readNotify(sv *service, c *net.UnixConn) {
	buf := make([]byte, 4096)
	oob := make([]byte, 4096)
	for {
		n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
		if err != nil {
			return
		}
		// Close any file descriptors sent (sd_notify_barrier sends one and
		// waits until it is closed).
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				if fds, err := unix.ParseUnixRights(&m); err == nil {
					for _, fd := range fds {
						unix.Close(fd)
					}
				}
			}
		}
		for _, line := range strings.Split(string(buf[:n]), "\n") {
			if line != "READY=1" {
				continue
			}
			s.mu.Lock()
			if sv.state == stActivating && sv.sub == "start" && sv.cmd != nil {
				if sv.timer != nil {
					sv.timer.Stop()
				}
				s.activeLocked(sv, sv.def)
			}
			s.mu.Unlock()
		}
	}
}

// serve answers one client.
func (s *supervisor) serve(c net.Conn) {
	defer c.Close()
	var req request
	br := bufio.NewReader(c)
	line, err := br.ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &req) != nil {
		return
	}
	enc := json.NewEncoder(c)
	out := func(format string, args ...any) { _ = enc.Encode(reply{Stdout: fmt.Sprintf(format, args...)}) }
	errf := func(format string, args ...any) { _ = enc.Encode(reply{Stderr: fmt.Sprintf(format, args...)}) }
	// gone is closed when the client hangs up (killed systemctl): the job
	// goes on, as with real systemd, but nobody waits for it.
	gone := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, br); close(gone) }()
	code := s.handle(req, out, errf, gone)
	_ = enc.Encode(reply{Exit: &code})
}

func (s *supervisor) handle(req request, out, errf func(string, ...any), gone chan struct{}) int {
	switch req.Cmd {
	case "daemon-reload":
		s.mu.Lock()
		for _, sv := range s.svcs {
			d, err := loadUnit(sv.name)
			switch {
			case err == nil:
				sv.def = d
			case sv.cmd == nil:
				sv.def = nil
			} // a running service whose unit went away keeps its definition
		}
		s.mu.Unlock()
		return 0
	case "reset-failed":
		s.mu.Lock()
		for _, n := range req.Units {
			if sv, ok := s.svcs[n]; ok && sv.state == stFailed {
				sv.state, sv.sub, sv.result = stInactive, "dead", ""
			}
		}
		s.mu.Unlock()
		return 0
	case "start", "restart":
		code := 0
		for _, n := range req.Units {
			if req.Cmd == "restart" {
				if err := s.stop(n); err != nil {
					s.notFound(n, req.Cmd, errf, err)
					code = 5
					continue
				}
			}
			done, err := s.start(n)
			if err != nil {
				code = s.notFound(n, req.Cmd, errf, err)
				continue
			}
			if done == nil || req.NoBlock {
				continue
			}
			select {
			case <-done:
			case <-gone:
				return 1
			}
			s.mu.Lock()
			jobErr := s.svcs[n].jobErr
			s.mu.Unlock()
			if jobErr != nil {
				if s.openrc {
					errf(" * ERROR: %s failed to start\n", n)
				} else if jobErr.Error() == "canceled" {
					errf("Job for %s canceled.\n", n)
				} else {
					errf("Job for %s failed because the control process exited with error code.\nSee \"systemctl status %s\" and \"journalctl -xeu %s\" for details.\n", n, n, n)
				}
				code = 1
			}
		}
		return code
	case "reload":
		code := 0
		for _, n := range req.Units {
			if c := s.reload(n, errf); c != 0 {
				code = c
			}
		}
		return code
	case "stop":
		code := 0
		for _, n := range req.Units {
			if err := s.stop(n); err != nil {
				code = s.notFound(n, req.Cmd, errf, err)
			}
		}
		return code
	case "is-active", "is-failed":
		code := 3
		if req.Cmd == "is-failed" {
			code = 1
		}
		for _, n := range req.Units {
			st := s.state(n)
			out("%s\n", st)
			if req.Cmd == "is-active" && st == stActive || req.Cmd == "is-failed" && st == stFailed {
				code = 0
			}
		}
		return code
	case "status":
		return s.status(req.Units, out, errf)
	}
	errf("Unknown command verb %s.\n", req.Cmd)
	return 1
}

// reload runs a running service's ExecReload with $MAINPID set; for
// OpenRC, whose scripts here reload by "supervise-daemon NAME --signal
// HUP", it sends the service's process SIGHUP.
func (s *supervisor) reload(n string, errf func(string, ...any)) int {
	s.mu.Lock()
	sv := s.get(n)
	def, err := s.load(sv)
	if err != nil {
		s.mu.Unlock()
		return s.notFound(n, "reload", errf, err)
	}
	active := sv.state == stActive && sv.cmd != nil && sv.cmd.Process != nil
	pid := 0
	if active {
		pid = sv.cmd.Process.Pid
	}
	s.mu.Unlock()
	switch {
	case s.openrc && def.reload == nil:
		errf(" * %s: unknown function `reload'\n", n)
		return 1
	case s.openrc && !active:
		errf(" * ERROR: %s has not yet been started\n", n)
		return 1
	case s.openrc:
		if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
			errf(" * ERROR: %s: %v\n", n, err)
			return 1
		}
		return 0
	case def.reload == nil:
		errf("Failed to reload %s: Job type reload is not applicable for unit %s.\n", n, n)
		return 1
	case !active:
		errf("%s is not active, cannot reload.\n", n)
		return 1
	}
	argv := expandEnv(def.reload.argv, []string{"MAINPID=" + strconv.Itoa(pid)})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = serviceEnv()
	if out, err := cmd.CombinedOutput(); err != nil && !def.reload.ignoreFailure {
		sv.logf("%s: reload failed: %v: %s", n, err, out)
		errf("Job for %s failed.\nSee \"systemctl status %s\" and \"journalctl -xeu %s\" for details.\n", n, n, n)
		return 1
	}
	sv.logf("Reloaded %s.", def.description)
	return 0
}

func (s *supervisor) notFound(n, verb string, errf func(string, ...any), err error) int {
	if errors.Is(err, errNotFound) {
		if s.openrc {
			errf(" * rc-service: service `%s' does not exist\n", n)
			return 1
		}
		errf("Failed to %s %s: Unit %s not found.\n", verb, n, n)
		return 5
	}
	errf("Failed to %s %s: %v\n", verb, n, err)
	return 1
}

func (s *supervisor) state(n string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sv, ok := s.svcs[n]; ok {
		return sv.state
	}
	return stInactive
}

func (s *supervisor) status(units []string, out, errf func(string, ...any)) int {
	code := 0
	for _, n := range units {
		s.mu.Lock()
		sv := s.get(n)
		def, err := s.load(sv)
		st, sub, since, result := sv.state, sv.sub, sv.since, sv.result
		pid := 0
		if sv.cmd != nil && sv.cmd.Process != nil {
			pid = sv.cmd.Process.Pid
		}
		s.mu.Unlock()
		if s.openrc {
			if err != nil {
				errf(" * rc-service: service `%s' does not exist\n", n)
				return 1
			}
			switch {
			case st == stActive || st == stActivating:
				out(" * status: started\n")
			case st == stFailed:
				out(" * status: crashed\n")
				return 32
			default:
				out(" * status: stopped\n")
				return 3
			}
			continue
		}
		if err != nil {
			errf("Unit %s could not be found.\n", n)
			return 4
		}
		enabled := "disabled"
		if unitEnabled(n) {
			enabled = "enabled"
		}
		out("● %s - %s\n", n, descr(def))
		out("     Loaded: loaded (%s; %s; preset: enabled)\n", def.path, enabled)
		active := fmt.Sprintf("%s (%s)", st, sub)
		if st == stFailed {
			active += fmt.Sprintf(" (Result: %s)", result)
		}
		if !since.IsZero() {
			active += " since " + since.Format("Mon 2006-01-02 15:04:05 MST") + "; " + time.Since(since).Round(time.Second).String() + " ago"
		}
		out("     Active: %s\n", active)
		if pid != 0 {
			out("   Main PID: %d (%s)\n", pid, filepath.Base(def.start.argv[0]))
		}
		lines, _ := readJournal([]string{n}, 10)
		if len(lines) > 0 {
			out("\n")
			host, _ := os.Hostname()
			for _, l := range lines {
				out("%s\n", l.short(host))
			}
		}
		if st != stActive && code == 0 {
			code = 3
		}
	}
	return code
}
