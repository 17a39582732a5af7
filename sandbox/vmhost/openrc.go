package vmhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// openrcFunctions are the helpers openrc-run gives an init script
// (functions.sh, rc-functions.sh): ebegin, eend and the like print as
// OpenRC does without a terminal; the dependency words are no-ops
// outside depend().
const openrcFunctions = `yesno() { case "$1" in [Yy][Ee][Ss]|[Tt][Rr][Uu][Ee]|[Oo][Nn]|1) return 0 ;; esac; return 1; }
einfo() { yesno "$EINFO_QUIET" || printf ' * %s\n' "$*"; }
einfon() { yesno "$EINFO_QUIET" || printf ' * %s' "$*"; }
ewarn() { printf ' * %s\n' "$*" >&2; }
ewarnn() { printf ' * %s' "$*" >&2; }
eerror() { printf ' * %s\n' "$*" >&2; }
eerrorn() { printf ' * %s' "$*" >&2; }
ebegin() { yesno "$EINFO_QUIET" || printf ' * %s ...\n' "$*"; }
eend() {
	_eend_rc=${1:-0}
	[ $# -gt 0 ] && shift
	if [ "$_eend_rc" = 0 ]; then yesno "$EINFO_QUIET" || printf ' [ ok ]\n'
	else [ $# -gt 0 ] && eerror "$*"; printf ' [ !! ]\n'; fi
	return $_eend_rc
}
ewend() {
	_eend_rc=${1:-0}
	[ $# -gt 0 ] && shift
	if [ "$_eend_rc" = 0 ]; then yesno "$EINFO_QUIET" || printf ' [ ok ]\n'
	else [ $# -gt 0 ] && ewarn "$*"; printf ' [ !! ]\n'; fi
	return $_eend_rc
}
veinfo() { :; }
vewarn() { :; }
vebegin() { :; }
veend() { return ${1:-0}; }
vewend() { return ${1:-0}; }
eindent() { :; }
eoutdent() { :; }
need() { :; }
use() { :; }
want() { :; }
before() { :; }
after() { :; }
provide() { :; }
keyword() { :; }
config() { :; }
service_set_value() { :; }
service_get_value() { :; }
checkpath() {
	_cp_kind=-f _cp_mode=
	while [ $# -gt 0 ]; do
		case $1 in
		-d|-D) _cp_kind=-d ;;
		-f|-F) _cp_kind=-f ;;
		-m|--mode) shift; _cp_mode=$1 ;;
		-o|--owner) shift ;;
		-q|-W|--quiet|--writable) ;;
		-*) ;;
		*) if [ "$_cp_kind" = -d ]; then mkdir -p "$1"; else [ -e "$1" ] || : > "$1"; fi || return 1
		   [ -z "$_cp_mode" ] || chmod "$_cp_mode" "$1" || return 1 ;;
		esac
		shift
	done
}
`

// rcScript is an init script sourced in a shell, as openrc-run holds it:
// its variables and functions stay for the actions run on it.
type rcScript struct {
	name, path string
	r          *interp.Runner
	release    func()
}

// openScript sources the init script file of the service name in a new
// shell whose output goes to c's, with openrc-run's environment and
// helpers.
func (m *manager) openScript(ctx context.Context, c *Call, name, file string) (*rcScript, error) {
	f := fsys{h: m.h, user: "root"}
	if fi, err := f.stat(file); err != nil || fi.IsDir() {
		return nil, errNotFound
	}
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"RC_SVCNAME=" + name, "RC_SERVICE=" + file, "SVCNAME=" + name,
		"RC_RUNLEVEL=default", "RC_SVCDIR=/run/openrc",
	}
	if q := c.Getenv("EINFO_QUIET"); q != "" {
		env = append(env, "EINFO_QUIET="+q)
	}
	rc := &Call{Args: []string{"openrc-run"}, Stdin: strings.NewReader(""), Stdout: c.Stdout, Stderr: c.Stderr, Env: env, Host: m.h, User: "root", Dir: "/"}
	r, release, err := newRunner(ctx, rc, file, []string{"--", file})
	if err != nil {
		return nil, err
	}
	s := &rcScript{name: name, path: file, r: r, release: release}
	if st := s.run(ctx, openrcFunctions); st != 0 {
		release()
		return nil, fmt.Errorf("the helpers failed (%d)", st)
	}
	if st := s.run(ctx, `. "$RC_SERVICE"`); st != 0 {
		release()
		fmt.Fprintf(c.Stderr, " * %s: error loading %s\n", name, file)
		return nil, errLoad
	}
	return s, nil
}

var errLoad = errors.New("error loading the init script")

// run runs the shell source src in the script's shell and returns its
// status.
func (s *rcScript) run(ctx context.Context, src string) int {
	file, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(src), s.path)
	if err != nil {
		return 2
	}
	stdinAliases(file)
	status := 0
	for _, st := range file.Stmts {
		err := s.r.Run(ctx, st)
		if code, ok := interp.IsExitStatus(err); ok {
			status = int(code)
		} else if err != nil {
			return 2
		} else {
			status = 0
		}
		if s.r.Exited() {
			break
		}
	}
	return status
}

// get returns the value of the script's variable name.
func (s *rcScript) get(name string) string {
	return s.r.Vars[name].String()
}

func (s *rcScript) isSet(name string) bool { return s.r.Vars[name].IsSet() }

// has reports whether the script defines the function name.
func (s *rcScript) has(name string) bool { return s.r.Funcs[name] != nil }

// call runs the script's function name, if defined, and returns its
// status.
func (s *rcScript) call(ctx context.Context, name string) int {
	if !s.has(name) {
		return 0
	}
	return s.run(ctx, name)
}

// config builds the service the script describes, as supervise-daemon
// (or start-stop-daemon) would run it: command with command_args
// evaluated by the shell, the script's exported variables as its
// environment, output to output_log and error_log.
func (s *rcScript) config(ctx context.Context) (*svcConfig, error) {
	command := s.get("command")
	if command == "" {
		return nil, errors.New("no command")
	}
	// eval, as supervise-daemon.sh does: quotes in command_args group
	// words, redirections in it apply to the evaluation.
	if st := s.run(ctx, `eval "set -- $command_args $command_args_foreground"`); st != 0 {
		return nil, fmt.Errorf("command_args: status %d", st)
	}
	argv := append([]string{command}, s.r.Params...)
	cfg := &svcConfig{
		name: s.name, path: s.path, description: s.get("description"), typ: "simple",
		start: []execLine{{argv: argv}}, restart: "no", stopTO: 5 * time.Second, openrc: true,
		workDir: s.get("directory"),
	}
	if s.isSet("output_log") {
		cfg.stdout = s.get("output_log")
	}
	if s.isSet("error_log") {
		cfg.stderr = s.get("error_log")
	}
	if s.get("supervisor") == "supervise-daemon" {
		cfg.restart = "always"
		cfg.respawnMax = 10
		if v := s.get("respawn_max"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("Invalid respawn-max value '%s'", v)
			}
			cfg.respawnMax = n
		}
		if v := s.get("respawn_delay"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("Invalid respawn-delay value '%s'", v)
			}
			cfg.restartSec = time.Duration(n) * time.Second
		}
		if v := s.get("respawn_period"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("Invalid respawn-period value '%s'", v)
			}
			cfg.respawnPeriod = time.Duration(n) * time.Second
		}
	}
	if retry := s.get("retry"); retry != "" {
		// TERM/60/KILL/5: the first timeout is how long a stop waits.
		parts := strings.Split(retry, "/")
		if len(parts) == 1 {
			parts = []string{"TERM", parts[0]}
		}
		if n, err := strconv.Atoi(parts[1]); err == nil {
			cfg.stopTO = time.Duration(n) * time.Second
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.r.Vars)) {
		// supervise-daemon clears RC_ variables but RC_SVCNAME and
		// RC_SERVICE.
		rc := strings.HasPrefix(name, "RC_") && name != "RC_SVCNAME" && name != "RC_SERVICE"
		if vr := s.r.Vars[name]; vr.Exported && vr.IsSet() && name != "PATH" && !rc && name != "EINFO_QUIET" {
			cfg.fixedEnv = append(cfg.fixedEnv, name+"="+vr.String())
		}
	}
	return cfg, nil
}

// commands are the actions the script offers beyond start, stop,
// restart, status and describe.
func (s *rcScript) commands() (all, started, stopped []string) {
	started = strings.Fields(s.get("extra_started_commands"))
	stopped = strings.Fields(s.get("extra_stopped_commands"))
	all = append(append(append(strings.Fields(s.get("extra_commands")), strings.Fields(s.get("opts"))...), started...), stopped...)
	return all, started, stopped
}

// rcStarted reports whether OpenRC counts sv as started (running, about
// to respawn, or crashed).
func rcStarted(sv *service) bool {
	return sv != nil && (sv.state == stActive || sv.state == stActivating || sv.state == stFailed || sv.state == stReloading)
}

// rcAction runs one action of the service name's init script file, as
// openrc-run does, printing on c's streams; it returns the status.
func (m *manager) rcAction(ctx context.Context, c *Call, name, file, action string) int {
	m.mu.Lock()
	sv := m.svcs[name]
	started := rcStarted(sv)
	m.mu.Unlock()
	switch action {
	case "status":
		if _, err := (fsys{h: m.h, user: "root"}).stat(file); err != nil {
			fmt.Fprintf(c.Stderr, " * rc-service: service `%s' does not exist\n", name)
			return 1
		}
		m.mu.Lock()
		state := stInactive
		if sv != nil {
			state = sv.state
		}
		m.mu.Unlock()
		switch state {
		case stActive, stActivating, stReloading:
			if c.Getenv("EINFO_QUIET") == "" {
				fmt.Fprintln(c.Stdout, " * status: started")
			}
			return 0
		case stDeactivating:
			fmt.Fprintln(c.Stderr, " * status: stopping")
			return 4
		case stFailed:
			fmt.Fprintln(c.Stderr, " * status: crashed")
			return 32
		}
		if c.Getenv("EINFO_QUIET") == "" {
			fmt.Fprintln(c.Stdout, " * status: stopped")
		}
		return 3
	case "start":
		if started {
			fmt.Fprintf(c.Stderr, " * WARNING: %s has already been started\n", name)
			return 0
		}
	case "stop":
		if !started {
			fmt.Fprintf(c.Stderr, " * WARNING: %s is already stopped\n", name)
			return 0
		}
	case "restart":
		if started {
			if st := m.rcAction(ctx, c, name, file, "stop"); st != 0 {
				return st
			}
		}
		return m.rcAction(ctx, c, name, file, "start")
	}
	s, err := m.openScript(ctx, c, name, file)
	if err != nil {
		if errors.Is(err, errNotFound) {
			fmt.Fprintf(c.Stderr, " * rc-service: service `%s' does not exist\n", name)
		}
		return 1
	}
	defer s.release()
	label := s.get("name")
	if label == "" {
		label = name
	}
	switch action {
	case "start":
		fail := func() int {
			fmt.Fprintf(c.Stderr, " * ERROR: %s failed to start\n", name)
			return 1
		}
		if st := s.call(ctx, "start_pre"); st != 0 {
			return fail()
		}
		if s.has("start") {
			// The script's own start() replaces the supervisor's.
			if st := s.call(ctx, "start"); st != 0 {
				return fail()
			}
			m.mu.Lock()
			sv := m.get(name)
			sv.cfg = &svcConfig{name: name, path: file, openrc: true, typ: "simple"}
			m.setState(sv, stActive, "exited")
			m.mu.Unlock()
		} else {
			cfg, err := s.config(ctx)
			if err != nil {
				if err.Error() == "no command" {
					fmt.Fprintln(c.Stderr, " * The command variable is undefined.")
					fmt.Fprintf(c.Stderr, " * There is nothing for %s to start.\n", label)
				} else {
					fmt.Fprintf(c.Stderr, " * %s: %v\n", name, err)
				}
				return fail()
			}
			s.run(ctx, `ebegin "Starting `+strings.ReplaceAll(label, `"`, `\"`)+`"`)
			f := fsys{h: m.h, user: "root"}
			exe := cfg.start[0].argv[0]
			if !strings.HasPrefix(exe, "/") {
				exe = m.h.lookPath(f, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", exe)
			}
			if _, err := f.stat(exe); exe == "" || err != nil {
				fmt.Fprintf(c.Stderr, " * %s: %s does not exist\n", cfg.supervisorName(), cfg.start[0].argv[0])
				fmt.Fprintf(c.Stderr, " * failed to start %s\n", label)
				fmt.Fprintln(c.Stdout, " [ !! ]")
				return fail()
			}
			m.mu.Lock()
			sv := m.get(name)
			sv.cfg = cfg
			m.start(sv)
			m.mu.Unlock()
			s.run(ctx, "eend 0")
		}
		if st := s.call(ctx, "start_post"); st != 0 {
			return fail()
		}
		return 0
	case "stop":
		fail := func() int {
			fmt.Fprintf(c.Stderr, " * ERROR: %s failed to stop\n", name)
			return 1
		}
		if st := s.call(ctx, "stop_pre"); st != 0 {
			return fail()
		}
		if s.has("stop") {
			if st := s.call(ctx, "stop"); st != 0 {
				return fail()
			}
		} else {
			s.run(ctx, `ebegin "Stopping `+strings.ReplaceAll(label, `"`, `\"`)+`"`)
		}
		m.mu.Lock()
		sv := m.get(name)
		done := m.stop(sv)
		m.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return 143
		}
		m.mu.Lock()
		if sv.state == stFailed && sv.main == nil {
			m.setState(sv, stInactive, "dead") // a crashed service is stopped now
		}
		m.mu.Unlock()
		if !s.has("stop") {
			s.run(ctx, "eend 0")
		}
		if st := s.call(ctx, "stop_post"); st != 0 {
			return fail()
		}
		return 0
	case "describe":
		if d := s.get("description"); d != "" {
			s.run(ctx, `einfo "$description"`)
		} else {
			fmt.Fprintf(c.Stderr, " * No description for %s\n", name)
		}
		return 0
	}
	all, startedCmds, stoppedCmds := s.commands()
	if !slices.Contains(all, action) {
		fmt.Fprintf(c.Stderr, " * %s: unknown function `%s'\n", name, action)
		return 1
	}
	if slices.Contains(startedCmds, action) && !started {
		fmt.Fprintf(c.Stderr, " * %s: cannot `%s' as it has not been started\n", name, action)
		return 1
	}
	if slices.Contains(stoppedCmds, action) && started {
		fmt.Fprintf(c.Stderr, " * %s: cannot `%s' as it has not been stopped\n", name, action)
		return 1
	}
	if !s.has(action) {
		fmt.Fprintf(c.Stderr, " * %s: function `%s' defined but does not exist\n", name, action)
		return 1
	}
	for _, fn := range []string{action + "_pre", action, action + "_post"} {
		if st := s.call(ctx, fn); st != 0 {
			return st
		}
	}
	return 0
}

// supervisorName is the program that would report on the command.
func (cfg *svcConfig) supervisorName() string {
	if cfg.restart == "always" {
		return "supervise-daemon"
	}
	return "start-stop-daemon"
}

// progRcService is rc-service [-q] [-i|--ifexists] [-s|--ifstarted]
// [-S|--ifstopped] NAME ACTION…, and rc-service -e|--exists NAME.
func progRcService(ctx context.Context, c *Call) int {
	m := c.Host.svc
	if m == nil || m.kind != InitOpenRC {
		return c.Errorf(1, "OpenRC is not the init system here")
	}
	args := c.Args[1:]
	var ifExists, ifStarted, ifStopped, quiet bool
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-e", "--exists":
			if len(args) < 2 {
				return c.Errorf(1, "option requires an argument -- 'e'")
			}
			if _, err := c.Stat("/etc/init.d/" + args[1]); err != nil {
				return 1
			}
			return 0
		case "-i", "--ifexists":
			ifExists = true
		case "-s", "--ifstarted":
			ifStarted = true
		case "-S", "--ifstopped":
			ifStopped = true
		case "-q", "--quiet":
			quiet = true
		case "-v", "--verbose", "-C", "--nocolor":
		default:
			fmt.Fprintf(c.Stderr, " * rc-service: unrecognized option '%s'\n", args[0])
			return 1
		}
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(c.Stderr, "Usage: rc-service [options] [<service> <cmd>...]")
		return 1
	}
	name := args[0]
	file := "/etc/init.d/" + name
	if _, err := c.Stat(file); err != nil {
		if ifExists {
			return 0
		}
		fmt.Fprintf(c.Stderr, " * rc-service: service `%s' does not exist\n", name)
		return 1
	}
	if c.User != "root" && (len(args) < 2 || args[1] != "status") {
		fmt.Fprintf(c.Stderr, " * %s: superuser access required\n", name)
		return 1
	}
	m.mu.Lock()
	started := rcStarted(m.svcs[name])
	m.mu.Unlock()
	if ifStarted && !started || ifStopped && started {
		return 0
	}
	if len(args) < 2 {
		fmt.Fprintf(c.Stderr, " * %s: no command given\n", name)
		return 1
	}
	rc := c
	if quiet {
		rc = c.sub(c.Args)
		rc.Env = append(slices.Clone(c.Env), "EINFO_QUIET=yes")
	}
	for _, action := range args[1:] {
		if st := m.rcAction(ctx, rc, name, file, action); st != 0 {
			return st
		}
	}
	return 0
}

// progOpenRCRun is /sbin/openrc-run SCRIPT ACTION…, what running an init
// script (#!/sbin/openrc-run) does.
func progOpenRCRun(ctx context.Context, c *Call) int {
	m := c.Host.svc
	if m == nil || m.kind != InitOpenRC {
		return c.Errorf(1, "OpenRC is not the init system here")
	}
	if len(c.Args) < 3 {
		name := "openrc-run"
		if len(c.Args) == 2 {
			name = path.Base(c.Args[1])
		}
		fmt.Fprintf(c.Stderr, " * %s: not enough arguments\n", name)
		return 1
	}
	file := c.Path(c.Args[1])
	name := path.Base(file)
	for _, action := range c.Args[2:] {
		if st := m.rcAction(ctx, c, name, file, action); st != 0 {
			return st
		}
	}
	return 0
}

// progRcUpdate is rc-update add|del NAME [RUNLEVEL…] (default: the
// default runlevel): links in /etc/runlevels/RUNLEVEL.
func progRcUpdate(_ context.Context, c *Call) int {
	args := c.Args[1:]
	for len(args) > 0 && (args[0] == "-q" || args[0] == "--quiet" || args[0] == "-v") {
		args = args[1:]
	}
	if len(args) < 2 || (args[0] != "add" && args[0] != "del" && args[0] != "delete") {
		fmt.Fprintln(c.Stderr, "Usage: rc-update [options] add <service> [<runlevel>...]\n   or: rc-update [options] del <service> [<runlevel>...]")
		return 1
	}
	name := args[1]
	levels := args[2:]
	if len(levels) == 0 {
		levels = []string{"default"}
	}
	f := c.fs()
	status := 0
	for _, rl := range levels {
		dir := "/etc/runlevels/" + rl
		if fi, err := f.stat(dir); err != nil || !fi.IsDir() {
			fmt.Fprintf(c.Stderr, " * rc-update: runlevel `%s' does not exist\n", rl)
			status = 1
			continue
		}
		link := dir + "/" + name
		if args[0] == "add" {
			if _, err := f.stat("/etc/init.d/" + name); err != nil {
				fmt.Fprintf(c.Stderr, " * rc-update: service `%s' does not exist\n", name)
				return 1
			}
			if _, err := f.lstat(link); err == nil {
				fmt.Fprintf(c.Stderr, " * rc-update: %s already installed in runlevel `%s'; skipping\n", name, rl)
				continue
			}
			if err := f.symlink("/etc/init.d/"+name, link); err != nil {
				fmt.Fprintf(c.Stderr, " * rc-update: %s: %s\n", link, errText(err))
				status = 1
				continue
			}
			fmt.Fprintf(c.Stdout, " * service %s added to runlevel %s\n", name, rl)
			continue
		}
		if _, err := f.lstat(link); err != nil {
			fmt.Fprintf(c.Stderr, " * rc-update: service `%s' is not in the runlevel `%s'\n", name, rl)
			status = 1
			continue
		}
		if err := f.remove(link); err != nil {
			fmt.Fprintf(c.Stderr, " * rc-update: %s: %s\n", link, errText(err))
			status = 1
			continue
		}
		fmt.Fprintf(c.Stdout, " * service %s removed from runlevel %s\n", name, rl)
	}
	return status
}

// progSuperviseDaemon is supervise-daemon NAME --signal SIGNAL (-s), as
// an init script's reload() sends its daemon a signal: HUP asks the
// program to reload (Call.Reloads); TERM, INT, QUIT and KILL end it (the
// supervisor respawns it). Starting and stopping are rc-service's.
func progSuperviseDaemon(_ context.Context, c *Call) int {
	m := c.Host.svc
	svc := c.Getenv("RC_SVCNAME")
	if svc == "" {
		fmt.Fprintln(c.Stderr, " * supervise-daemon: The RC_SVCNAME environment variable is not set")
		return 1
	}
	if len(c.Args) < 2 || c.Args[1] != svc {
		first := ""
		if len(c.Args) > 1 {
			first = c.Args[1]
		}
		fmt.Fprintf(c.Stderr, " * supervise-daemon: the first argument is %s and must be %s\n", first, svc)
		return 1
	}
	args := c.Args[2:]
	sig := ""
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-s" || a == "--signal":
			if i+1 >= len(args) {
				fmt.Fprintln(c.Stderr, " * supervise-daemon: option requires an argument -- 's'")
				return 1
			}
			i++
			sig = args[i]
		case strings.HasPrefix(a, "--signal="):
			sig = strings.TrimPrefix(a, "--signal=")
		default:
			fmt.Fprintf(c.Stderr, " * supervise-daemon: %s: only --signal is simulated; rc-service starts and stops services\n", a)
			return 1
		}
	}
	if sig == "" {
		fmt.Fprintln(c.Stderr, " * supervise-daemon: nothing to do (only --signal is simulated)")
		return 1
	}
	sig = strings.TrimPrefix(strings.ToUpper(sig), "SIG")
	if n, err := strconv.Atoi(sig); err == nil {
		for name, num := range signalNumbers {
			if num == n {
				sig = name
			}
		}
	}
	if _, ok := signalNumbers[sig]; !ok {
		fmt.Fprintf(c.Stderr, " * supervise-daemon: %s: invalid signal\n", sig)
		return 1
	}
	if m == nil {
		fmt.Fprintln(c.Stderr, " * supervise-daemon: unable to open control fifo No such file or directory")
		return 1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	sv := m.svcs[svc]
	if sv == nil || sv.cfg == nil || sv.cfg.restart != "always" || (sv.state != stActive && sv.state != stActivating) {
		fmt.Fprintln(c.Stderr, " * supervise-daemon: unable to open control fifo No such file or directory")
		return 1
	}
	if p := sv.main; p != nil {
		switch sig {
		case "HUP":
			reloadMain(p)
		case "TERM", "INT", "QUIT", "KILL":
			m.signal(p, sig)
		}
	}
	return 0
}

// bootOpenRC starts the services of the sysinit, boot and default
// runlevels, in that order and by name within one, as openrc does
// (depend() is not read). Their output is discarded.
func (m *manager) bootOpenRC(ctx context.Context) error {
	f := fsys{h: m.h, user: "root"}
	c := &Call{Args: []string{"openrc"}, Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Host: m.h, User: "root", Dir: "/"}
	var errs []error
	for _, rl := range []string{"sysinit", "boot", "default"} {
		ents, err := f.readDir("/etc/runlevels/" + rl)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if err := ctx.Err(); err != nil {
				return err
			}
			name := e.Name()
			if st := m.rcAction(ctx, c, name, "/etc/init.d/"+name, "start"); st != 0 {
				errs = append(errs, fmt.Errorf("vmhost: boot: %s: status %d", name, st))
			}
		}
	}
	return errors.Join(errs...)
}
