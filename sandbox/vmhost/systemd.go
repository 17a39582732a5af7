package vmhost

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// unitDirs are where systemd looks for unit files, in order (/lib is
// /usr/lib on a merged-/usr host).
var unitDirs = []string{"/etc/systemd/system", "/run/systemd/system", "/lib/systemd/system"}

// wantsDir is where enable puts a unit's links for WantedBy=X.
func wantsDir(target string) string { return "/etc/systemd/system/" + target + ".wants" }

// findUnit returns the path of the unit file name, "" when there is none.
func (m *manager) findUnit(name string) string {
	f := fsys{h: m.h, user: "root"}
	for _, d := range unitDirs {
		p := d + "/" + name
		if fi, err := f.stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	return ""
}

// unitSource returns the unit file's contents and its drop-ins', as
// loaded and compared to find a changed unit.
func (m *manager) unitSource(name string) (string, string, error) {
	p := m.findUnit(name)
	if p == "" {
		return "", "", errNotFound
	}
	f := fsys{h: m.h, user: "root"}
	b, err := f.readFile(p)
	if err != nil {
		return "", "", err
	}
	src := string(b)
	for _, d := range unitDirs {
		ents, err := f.readDir(d + "/" + name + ".d")
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".conf") {
				continue
			}
			if b, err := f.readFile(d + "/" + name + ".d/" + e.Name()); err == nil {
				src += "\x00" + string(b)
			}
		}
	}
	return p, src, nil
}

// loadUnit reads the unit name from disk.
func (m *manager) loadUnit(name string) (*svcConfig, error) {
	if !strings.HasSuffix(name, ".service") {
		return nil, errNotFound // only services are simulated
	}
	p, src, err := m.unitSource(name)
	if err != nil {
		return nil, err
	}
	cfg := &svcConfig{
		name: name, path: p, source: src, typ: "simple", restart: "no",
		restartSec: defaultRestartSec, startTO: defaultStartTimeout, stopTO: defaultStopTimeout,
		startLimit: true, startBurst: startLimitBurst, startInterval: startLimitInterval,
	}
	for _, part := range strings.Split(src, "\x00") {
		if err := cfg.parseUnit(part); err != nil {
			return nil, err
		}
	}
	if len(cfg.start) == 0 {
		return nil, fmt.Errorf("%s: Service has no ExecStart=, ExecStop=, or SuccessAction=. Refusing", name)
	}
	if cfg.typ == "oneshot" && cfg.startTO == defaultStartTimeout {
		cfg.startTO = 0
	}
	return cfg, nil
}

// parseUnit reads one unit file's (or drop-in's) settings into cfg.
func (cfg *svcConfig) parseUnit(src string) error {
	section, pending := "", ""
	prefix := strings.TrimSuffix(cfg.name, ".service")
	for _, raw := range strings.Split(src, "\n") {
		line := strings.TrimSpace(raw)
		if pending != "" && (strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";")) {
			continue // comments inside a continuation are skipped
		}
		if pending == "" && (line == "" || line[0] == '#' || line[0] == ';') {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			pending += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		line, pending = pending+line, ""
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			if section == "Install" {
				cfg.install = true
			}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		v = strings.NewReplacer("%N", prefix, "%n", cfg.name, "%p", prefix, "%i", "", "%H", "", "%%", "%").Replace(v)
		var err error
		switch section + "." + k {
		case "Unit.Description":
			cfg.description = v
		case "Unit.StartLimitIntervalSec", "Service.StartLimitInterval":
			cfg.startInterval, err = parseSpan(v)
		case "Unit.StartLimitBurst", "Service.StartLimitBurst":
			cfg.startBurst, err = strconv.Atoi(v)
		case "Service.Type":
			cfg.typ = v
		case "Service.ExecStart":
			err = addExec(&cfg.start, v)
		case "Service.ExecStartPre":
			err = addExec(&cfg.pre, v)
		case "Service.ExecReload":
			err = addExec(&cfg.reload, v)
		case "Service.Environment":
			var words []string
			words, err = splitWords(v)
			cfg.env = append(cfg.env, words...)
		case "Service.EnvironmentFile":
			if v == "" {
				cfg.envFiles = nil
				break
			}
			ef := envFile{path: v}
			if p, ok := strings.CutPrefix(v, "-"); ok {
				ef = envFile{path: p, optional: true}
			}
			cfg.envFiles = append(cfg.envFiles, ef)
		case "Service.Restart":
			cfg.restart = v
		case "Service.RestartSec":
			cfg.restartSec, err = parseSpan(v)
		case "Service.TimeoutStartSec":
			cfg.startTO, err = parseSpan(v)
		case "Service.TimeoutStopSec":
			cfg.stopTO, err = parseSpan(v)
		case "Service.TimeoutSec":
			cfg.startTO, err = parseSpan(v)
			cfg.stopTO = cfg.startTO
		case "Service.RemainAfterExit":
			cfg.remain = v == "yes" || v == "true" || v == "1" || v == "on"
		case "Service.WorkingDirectory":
			cfg.workDir = strings.TrimPrefix(v, "-")
		case "Install.WantedBy", "Install.RequiredBy":
			cfg.wantedBy = append(cfg.wantedBy, strings.Fields(v)...)
		}
		if err != nil {
			return fmt.Errorf("%s: %s=%s: %w", cfg.name, k, v, err)
		}
	}
	return nil
}

// addExec appends an Exec line to lines; an empty value resets them.
func addExec(lines *[]execLine, v string) error {
	if v == "" {
		*lines = nil
		return nil
	}
	var l execLine
	for len(v) > 0 && strings.ContainsRune("-@+!:", rune(v[0])) {
		if v[0] == '-' {
			l.ignore = true
		}
		v = v[1:]
	}
	words, err := splitWords(v)
	if err != nil {
		return err
	}
	if len(words) == 0 {
		return errors.New("empty command")
	}
	l.argv = words
	*lines = append(*lines, l)
	return nil
}

// splitWords splits by whitespace honouring single and double quotes and
// backslash escapes, as systemd does for Exec and Environment lines.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\'' || c == '"':
			in = true
			end := i + 1
			for ; end < len(s) && s[end] != c; end++ {
				if s[end] == '\\' && c == '"' && end+1 < len(s) {
					end++
				}
				cur.WriteByte(s[end])
			}
			if end >= len(s) {
				return nil, errors.New("unterminated quote")
			}
			i = end
		case c == '\\' && i+1 < len(s):
			in = true
			i++
			cur.WriteByte(s[i])
		default:
			in = true
			cur.WriteByte(c)
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// unit returns the service name with its loaded configuration, loading
// it from disk when it is not loaded (as systemd loads a unit when it is
// first referred to). Call with mu held.
func (m *manager) unit(name string) (*service, error) {
	sv := m.get(name)
	if sv.cfg != nil {
		return sv, nil
	}
	cfg, err := m.loadUnit(name)
	if err != nil {
		return sv, err
	}
	sv.cfg = cfg
	return sv, nil
}

// daemonReload reloads every unit from disk, as systemctl daemon-reload
// does; a running service whose unit file went away keeps running with
// the definition it had. Call with mu held.
func (m *manager) daemonReload() {
	for name, sv := range m.svcs {
		cfg, err := m.loadUnit(name)
		switch {
		case err == nil:
			sv.cfg = cfg
		case sv.main == nil && sv.control == nil && sv.state == stInactive && sv.pending == nil:
			delete(m.svcs, name)
		}
	}
}

// changedOnDisk reports whether the loaded unit differs from its files.
func (m *manager) changedOnDisk(sv *service) bool {
	if sv.cfg == nil {
		return false
	}
	_, src, err := m.unitSource(sv.name)
	return err != nil || src != sv.cfg.source
}

// enabled reports whether name has a link in some *.wants or
// *.requires directory of /etc/systemd/system.
func (m *manager) enabled(name string) bool {
	f := fsys{h: m.h, user: "root"}
	ents, err := f.readDir("/etc/systemd/system")
	if err != nil {
		return false
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".wants") && !strings.HasSuffix(e.Name(), ".requires") {
			continue
		}
		if _, err := f.lstat("/etc/systemd/system/" + e.Name() + "/" + name); err == nil {
			return true
		}
	}
	return false
}

// wantedUnits lists the units linked from /etc/systemd/system/*.wants,
// what a boot starts.
func (m *manager) wantedUnits() []string {
	f := fsys{h: m.h, user: "root"}
	var names []string
	ents, _ := f.readDir("/etc/systemd/system")
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".wants") {
			continue
		}
		links, _ := f.readDir("/etc/systemd/system/" + e.Name())
		for _, l := range links {
			if strings.HasSuffix(l.Name(), ".service") && !slices.Contains(names, l.Name()) {
				names = append(names, l.Name())
			}
		}
	}
	slices.Sort(names)
	return names
}

// systemctlOpts are the options a systemctl command line gave.
type systemctlOpts struct {
	noBlock, now, quiet, value bool
	props                      []string
}

// progSystemctl is systemctl as the scripts and the node agent use it:
// daemon-reload, enable [--now], disable [--now], start, stop, restart,
// try-restart, reload, reset-failed, is-active, is-enabled, is-failed,
// status and show [-p PROP…] [--value]; with --no-block, -q/--quiet
// and the harmless --no-pager, --no-legend, --no-ask-password, --system,
// -l/--full, --plain and --no-reload. Only .service units exist.
func progSystemctl(ctx context.Context, c *Call) int {
	m := c.Host.svc
	if m == nil || m.kind != InitSystemd {
		fmt.Fprintln(c.Stderr, "System has not been booted with systemd as init system (PID 1). Can't operate.")
		fmt.Fprintln(c.Stderr, "Failed to connect to bus: Host is down")
		return 1
	}
	var o systemctlOpts
	var words []string
	args := c.Args[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--no-block":
			o.noBlock = true
		case a == "--now":
			o.now = true
		case a == "-q" || a == "--quiet":
			o.quiet = true
		case a == "--value":
			o.value = true
		case a == "-P":
			o.value = true
			fallthrough
		case a == "-p" || a == "--property":
			if i+1 >= len(args) {
				fmt.Fprintf(c.Stderr, "systemctl: option requires an argument -- '%s'\n", strings.TrimLeft(a, "-"))
				return 1
			}
			i++
			o.props = append(o.props, strings.Split(args[i], ",")...)
		case strings.HasPrefix(a, "--property="):
			o.props = append(o.props, strings.Split(strings.TrimPrefix(a, "--property="), ",")...)
		case strings.HasPrefix(a, "-p") && len(a) > 2 && a[2] != '-':
			o.props = append(o.props, strings.Split(a[2:], ",")...)
		case slices.Contains([]string{"--no-pager", "--no-legend", "--no-ask-password", "--system", "-l", "--full", "--plain", "--no-reload", "--force"}, a):
		case strings.HasPrefix(a, "--"):
			fmt.Fprintf(c.Stderr, "systemctl: unrecognized option '%s'\n", a)
			return 1
		case strings.HasPrefix(a, "-") && len(a) > 1:
			fmt.Fprintf(c.Stderr, "systemctl: invalid option -- '%c'\n", a[1])
			return 1
		default:
			words = append(words, a)
		}
	}
	if len(words) == 0 {
		fmt.Fprintln(c.Stderr, "systemctl: listing units is not simulated")
		return 1
	}
	verb, names := words[0], words[1:]
	if c.User != "root" && slices.Contains([]string{"daemon-reload", "enable", "disable", "start", "stop", "restart", "try-restart", "reload", "reset-failed"}, verb) {
		// polkit, with no agent to ask on an SSH session.
		switch verb {
		case "daemon-reload":
			fmt.Fprintln(c.Stderr, "Failed to reload daemon: Interactive authentication required.")
		case "enable", "disable":
			fmt.Fprintf(c.Stderr, "Failed to %s unit: Interactive authentication required.\n", verb)
		default:
			for _, n := range names {
				fmt.Fprintf(c.Stderr, "Failed to %s %s: Interactive authentication required.\n", verb, unitName(n))
			}
		}
		return 1
	}
	needUnits := map[string]bool{"enable": true, "disable": true, "start": true, "stop": true, "restart": true, "try-restart": true, "reload": true, "is-active": true, "is-enabled": true, "is-failed": true}
	if needUnits[verb] && len(names) == 0 {
		fmt.Fprintln(c.Stderr, "Too few arguments.")
		return 1
	}
	switch verb {
	case "daemon-reload":
		m.mu.Lock()
		m.daemonReload()
		m.mu.Unlock()
		return 0
	case "enable", "disable":
		return m.enableCmd(ctx, c, verb, names, o)
	case "start", "stop", "restart", "try-restart", "reload":
		status := 0
		for _, n := range names {
			if st := m.jobCmd(ctx, c, verb, unitName(n), o); st != 0 {
				status = st
			}
		}
		return status
	case "reset-failed":
		m.mu.Lock()
		for name, sv := range m.svcs {
			if len(names) > 0 && !slices.Contains(names, name) && !slices.Contains(names, strings.TrimSuffix(name, ".service")) {
				continue
			}
			sv.starts = nil
			if sv.state == stFailed {
				sv.state, sv.sub, sv.result = stInactive, "dead", "success"
			}
		}
		m.mu.Unlock()
		return 0
	case "is-active", "is-failed":
		status := 3
		if verb == "is-failed" {
			status = 1
		}
		for _, n := range names {
			m.mu.Lock()
			st := stInactive
			if sv, ok := m.svcs[unitName(n)]; ok {
				st = sv.state
			}
			m.mu.Unlock()
			if !o.quiet {
				fmt.Fprintln(c.Stdout, st)
			}
			if verb == "is-active" && st == stActive || verb == "is-failed" && st == stFailed {
				status = 0
			}
		}
		return status
	case "is-enabled":
		status := 1
		for _, n := range names {
			name := unitName(n)
			m.mu.Lock()
			cfg, err := m.loadUnit(name)
			m.mu.Unlock()
			if err != nil {
				fmt.Fprintf(c.Stderr, "Failed to get unit file state for %s: No such file or directory\n", name)
				return 1
			}
			state := "disabled"
			switch {
			case m.enabled(name):
				state = "enabled"
			case len(cfg.wantedBy) == 0:
				state = "static"
			}
			if state != "disabled" {
				status = 0
			}
			if !o.quiet {
				fmt.Fprintln(c.Stdout, state)
			}
		}
		return status
	case "status":
		return m.statusCmd(c, names)
	case "show":
		return m.showCmd(c, names, o)
	}
	fmt.Fprintf(c.Stderr, "Unknown command verb '%s'.\n", verb)
	return 1
}

// warnChanged prints systemctl's warning for a unit changed on disk
// since it was loaded.
func (m *manager) warnChanged(c *Call, sv *service) {
	if m.changedOnDisk(sv) {
		fmt.Fprintf(c.Stderr, "Warning: The unit file, source configuration file or drop-ins of %s changed on disk. Run 'systemctl daemon-reload' to reload units.\n", sv.name)
	}
}

// jobCmd runs start, stop, restart, try-restart or reload for one unit
// and, unless --no-block, waits for the job to end.
func (m *manager) jobCmd(ctx context.Context, c *Call, verb, name string, o systemctlOpts) int {
	m.mu.Lock()
	sv, err := m.unit(name)
	if err != nil {
		running := sv.main != nil || sv.control != nil
		if verb != "stop" || !running {
			m.mu.Unlock()
			return unitError(c, verb, name, err)
		}
	}
	m.warnChanged(c, sv)
	var wait <-chan struct{}
	var j *job
	switch verb {
	case "start":
		j = m.start(sv)
	case "stop":
		wait = m.stop(sv)
	case "restart", "try-restart":
		if verb == "try-restart" && sv.state != stActive && sv.state != stActivating && sv.state != stReloading {
			m.mu.Unlock()
			return 0
		}
		m.stop(sv)
		j = m.start(sv)
	case "reload":
		if len(sv.cfg.reload) == 0 {
			m.mu.Unlock()
			fmt.Fprintf(c.Stderr, "Failed to reload %s: Job type reload is not applicable for unit %s.\n", name, name)
			return 1
		}
		if sv.state != stActive {
			m.mu.Unlock()
			fmt.Fprintf(c.Stderr, "%s is not active, cannot reload.\n", name)
			return 1
		}
		j = m.reload(sv)
	}
	m.mu.Unlock()
	if o.noBlock {
		return 0
	}
	if j != nil {
		wait = j.done
	}
	if wait == nil {
		return 0
	}
	select {
	case <-wait:
	case <-ctx.Done():
		return 143
	}
	if j == nil {
		return 0
	}
	return jobResult(c, name, j.result)
}

// jobResult prints what systemctl prints for a job that did not succeed
// and returns its status.
func jobResult(c *Call, name, result string) int {
	why := map[string]string{
		"resources":       "of unavailable resources or another system error",
		"protocol":        "the service did not take the steps required by its unit configuration",
		"timeout":         "a timeout was exceeded",
		"exit-code":       "the control process exited with error code",
		"signal":          "a fatal signal was delivered to the control process",
		"start-limit-hit": "start of the service was attempted too often",
	}
	switch result {
	case "done":
		return 0
	case "canceled":
		fmt.Fprintf(c.Stderr, "Job for %s canceled.\n", name)
		return 1
	}
	if w, ok := why[result]; ok {
		fmt.Fprintf(c.Stderr, "Job for %s failed because %s.\n", name, w)
	} else {
		fmt.Fprintf(c.Stderr, "Job for %s failed.\n", name)
	}
	fmt.Fprintf(c.Stderr, "See \"systemctl status %s\" and \"journalctl -xeu %s\" for details.\n", name, name)
	return 1
}

// unitError prints systemctl's message for a unit that cannot be loaded.
func unitError(c *Call, verb, name string, err error) int {
	if errors.Is(err, errNotFound) {
		if verb == "stop" {
			fmt.Fprintf(c.Stderr, "Failed to %s %s: Unit %s not loaded.\n", verb, name, name)
		} else {
			fmt.Fprintf(c.Stderr, "Failed to %s %s: Unit %s not found.\n", verb, name, name)
		}
		return 5
	}
	fmt.Fprintf(c.Stderr, "Failed to %s %s: Unit %s has a bad unit file setting.\n", verb, name, name)
	fmt.Fprintf(c.Stderr, "See system logs and 'systemctl status %s' for details.\n", name)
	return 1
}

// reload runs the service's ExecReload lines with $MAINPID set, in a
// goroutine, and returns the job to wait for. Call with mu held.
func (m *manager) reload(sv *service) *job {
	j := newJob()
	cfg := sv.cfg
	main := sv.main
	m.setState(sv, stReloading, sv.sub)
	m.logf(sv, "Reloading %s...", label(sv))
	env, err := m.environment(cfg)
	if err != nil {
		env = nil
	}
	if main != nil {
		env = append(env, "MAINPID="+strconv.Itoa(main.pid))
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		result := "done"
		for _, l := range cfg.reload {
			m.mu.Lock()
			p := m.newProc(sv, l.argv, false)
			sv.control = p
			m.mu.Unlock()
			status := m.run(p, sv, cfg, l.argv, env, nil)
			m.mu.Lock()
			if sv.control == p {
				sv.control = nil
			}
			if status != 0 && !l.ignore {
				m.logf(sv, "%s: Control process exited, code=%s, status=%s", sv.name, exitCode(p), exitText(p, status))
				result = "exit-code"
			}
			m.mu.Unlock()
			if result != "done" {
				break
			}
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if sv.state == stReloading {
			m.setState(sv, stActive, sv.sub)
		}
		if result == "done" {
			m.logf(sv, "Reloaded %s.", label(sv))
		} else {
			m.logf(sv, "Reload failed for %s.", label(sv))
		}
		j.result = result
		close(j.done)
	}()
	return j
}

// enableCmd is systemctl enable|disable [--now] UNIT…: the links of the
// units' [Install] section, then (enable and disable reload the
// manager) daemon-reload, then with --now a start or stop.
func (m *manager) enableCmd(ctx context.Context, c *Call, verb string, names []string, o systemctlOpts) int {
	f := fsys{h: m.h, user: "root"}
	var units []string
	for _, n := range names {
		name := unitName(n)
		if strings.HasPrefix(n, "/") {
			// A path names the unit file; one outside the search path
			// would be linked first (systemctl link), not simulated.
			if !slices.Contains(unitDirs, path.Dir(n)) {
				fmt.Fprintf(c.Stderr, "Failed to %s unit: File %s: unit files outside the unit search path are not simulated\n", verb, n)
				return 1
			}
		}
		m.mu.Lock()
		cfg, err := m.loadUnit(name)
		m.mu.Unlock()
		if err != nil {
			fmt.Fprintf(c.Stderr, "Failed to %s unit: Unit file %s does not exist.\n", verb, name)
			return 1
		}
		units = append(units, name)
		if verb == "enable" {
			if !cfg.install || len(cfg.wantedBy) == 0 {
				fmt.Fprintln(c.Stderr, "The unit files have no installation config (WantedBy=, RequiredBy=, UpheldBy=,\nAlso=, or Alias= settings in the [Install] section, and DefaultInstance= for\ntemplate units). This means they are not meant to be enabled or disabled using systemctl.")
				continue
			}
			for _, target := range cfg.wantedBy {
				dir := wantsDir(target)
				link := dir + "/" + name
				if _, err := f.lstat(link); err == nil {
					continue
				}
				if err := mkdirAll(&Call{Host: m.h, User: "root", Dir: "/"}, dir, 0o755); err != nil {
					fmt.Fprintf(c.Stderr, "Failed to enable unit: %s\n", errText(err))
					return 1
				}
				if err := f.symlink(cfg.path, link); err != nil {
					fmt.Fprintf(c.Stderr, "Failed to enable unit: %s\n", errText(err))
					return 1
				}
				fmt.Fprintf(c.Stderr, "Created symlink '%s' → '%s'.\n", link, cfg.path)
			}
			continue
		}
		ents, _ := f.readDir("/etc/systemd/system")
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".wants") && !strings.HasSuffix(e.Name(), ".requires") {
				continue
			}
			link := "/etc/systemd/system/" + e.Name() + "/" + name
			if _, err := f.lstat(link); err != nil {
				continue
			}
			if err := f.remove(link); err == nil {
				fmt.Fprintf(c.Stderr, "Removed '%s'.\n", link)
			}
		}
	}
	m.mu.Lock()
	m.daemonReload()
	m.mu.Unlock()
	if !o.now {
		return 0
	}
	status := 0
	for _, name := range units {
		action := "start"
		if verb == "disable" {
			action = "stop"
		}
		if st := m.jobCmd(ctx, c, action, name, o); st != 0 {
			status = st
		}
	}
	return status
}

// statusCmd is systemctl status UNIT…: the unit's state and the last
// lines of its journal. It exits 0 when all run, 3 when one does not, 4
// when one is unknown.
func (m *manager) statusCmd(c *Call, names []string) int {
	if len(names) == 0 {
		fmt.Fprintln(c.Stderr, "systemctl: the system's status is not simulated; name a unit")
		return 1
	}
	status := 0
	for i, n := range names {
		name := unitName(n)
		m.mu.Lock()
		sv, err := m.unit(name)
		if err != nil {
			m.mu.Unlock()
			fmt.Fprintf(c.Stderr, "Unit %s could not be found.\n", name)
			status = 4
			continue
		}
		m.warnChanged(c, sv)
		st, sub, since, result := sv.state, sv.sub, sv.since, sv.result
		cfg := sv.cfg
		mainPID, code, exit := sv.mainPID, sv.exitCode, sv.exitStatus
		running := sv.main != nil
		m.mu.Unlock()
		if i > 0 {
			fmt.Fprintln(c.Stdout)
		}
		dot := "●"
		switch st {
		case stInactive:
			dot = "○"
		case stFailed:
			dot = "×"
		}
		fmt.Fprintf(c.Stdout, "%s %s\n", dot, label(&service{name: name, cfg: cfg}))
		enabled := "disabled"
		switch {
		case m.enabled(name):
			enabled = "enabled"
		case len(cfg.wantedBy) == 0:
			enabled = "static"
		}
		fmt.Fprintf(c.Stdout, "     Loaded: loaded (%s; %s; preset: enabled)\n", cfg.path, enabled)
		active := fmt.Sprintf("%s (%s)", st, sub)
		switch {
		case st == stFailed:
			active = fmt.Sprintf("%s (Result: %s)", st, result)
		case sub == "auto-restart" && result != "success":
			active += fmt.Sprintf(" (Result: %s)", result)
		}
		if !since.IsZero() {
			active += " since " + since.UTC().Format("Mon 2006-01-02 15:04:05 MST") + "; " + ago(time.Since(since)) + " ago"
		}
		fmt.Fprintf(c.Stdout, "     Active: %s\n", active)
		switch {
		case running:
			fmt.Fprintf(c.Stdout, "   Main PID: %d (%s)\n", mainPID, ident(cfg.start[0].argv[0]))
		case mainPID != 0 && code != "":
			fmt.Fprintf(c.Stdout, "   Main PID: %d (code=%s, %s)\n", mainPID, code, statusWord(code, exit))
		}
		es, _, _ := m.journal.since(0, func(e entry) bool { return e.unit == name })
		if len(es) > 10 {
			es = es[len(es)-10:]
		}
		if len(es) > 0 {
			fmt.Fprintln(c.Stdout)
			for _, e := range es {
				fmt.Fprintf(c.Stdout, "%s %s %s[%d]: %s\n", e.t.UTC().Format(journalStamp), m.h.hostname, e.ident, e.pid, e.msg)
			}
		}
		if st != stActive && st != stReloading && status == 0 {
			status = 3
		}
	}
	return status
}

// statusWord is what systemctl status says of a main process that
// ended: "status=1/FAILURE", "signal=TERM".
func statusWord(code string, status int) string {
	if code == "killed" {
		for name, n := range signalNumbers {
			if n == status {
				return "signal=" + name
			}
		}
		return "signal=" + strconv.Itoa(status)
	}
	return "status=" + exitText(&proc{}, status)
}

// ago formats a duration as systemctl status does: "5s", "1min 3s",
// "2h 5min".
func ago(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s := int(d.Seconds())
		return fmt.Sprintf("%dmin %ds", s/60, s%60)
	case d < 24*time.Hour:
		mins := int(d.Minutes())
		return fmt.Sprintf("%dh %dmin", mins/60, mins%60)
	}
	hours := int(d.Hours())
	return fmt.Sprintf("%d days %dh", hours/24, hours%24)
}

// showCmd is systemctl show [-p PROP…] [--value] UNIT…. It knows Id,
// Description, LoadState, ActiveState, SubState, Result, MainPID,
// ExecMainCode, ExecMainStatus, NRestarts, UnitFileState, FragmentPath
// and NeedDaemonReload; without -p it prints all of them.
func (m *manager) showCmd(c *Call, names []string, o systemctlOpts) int {
	all := []string{"Id", "Description", "LoadState", "ActiveState", "SubState", "Result", "MainPID", "ExecMainCode", "ExecMainStatus", "NRestarts", "UnitFileState", "FragmentPath", "NeedDaemonReload"}
	props := o.props
	if len(props) == 0 {
		props = all
	}
	for i, n := range names {
		name := unitName(n)
		m.mu.Lock()
		sv, err := m.unit(name)
		vals := map[string]string{
			"Id": name, "LoadState": "loaded", "ActiveState": sv.state, "SubState": sv.sub, "Result": sv.result,
			"MainPID": "0", "ExecMainCode": "0", "ExecMainStatus": strconv.Itoa(sv.exitStatus),
			"NRestarts": strconv.Itoa(sv.nRestarts), "NeedDaemonReload": "no",
		}
		if sv.main != nil {
			vals["MainPID"] = strconv.Itoa(sv.main.pid)
		}
		switch sv.exitCode {
		case "exited":
			vals["ExecMainCode"] = "1"
		case "killed":
			vals["ExecMainCode"] = "2"
		}
		if err != nil {
			vals["LoadState"] = "not-found"
		} else {
			vals["Description"] = sv.cfg.description
			vals["FragmentPath"] = sv.cfg.path
			vals["UnitFileState"] = "disabled"
			switch {
			case m.enabled(name):
				vals["UnitFileState"] = "enabled"
			case len(sv.cfg.wantedBy) == 0:
				vals["UnitFileState"] = "static"
			}
			if m.changedOnDisk(sv) {
				vals["NeedDaemonReload"] = "yes"
			}
		}
		m.mu.Unlock()
		if i > 0 && !o.value {
			fmt.Fprintln(c.Stdout)
		}
		for _, p := range props {
			v, known := vals[p]
			if !known && !slices.Contains(all, p) {
				continue // systemctl prints nothing for a property it does not know
			}
			if o.value {
				fmt.Fprintln(c.Stdout, v)
			} else {
				fmt.Fprintf(c.Stdout, "%s=%s\n", p, v)
			}
		}
	}
	return 0
}

// bootSystemd starts the units linked from the *.wants directories,
// without waiting for them, as a booting machine queues their jobs.
func (m *manager) bootSystemd() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.daemonReload()
	var errs []error
	for _, name := range m.wantedUnits() {
		sv, err := m.unit(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("vmhost: boot: %s: %w", name, err))
			continue
		}
		m.start(sv)
	}
	return errors.Join(errs...)
}
