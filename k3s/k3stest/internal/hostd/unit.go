package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// unitDirs are where unit files are looked up, in order. The machine's own
// /usr/lib/systemd/system is deliberately not searched: its units belong
// to the machine running the tests, not to the host.
var unitDirs = []string{"/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system"}

// command is one Exec line: argv plus the prefixes that change its
// handling.
type command struct {
	argv          []string
	ignoreFailure bool // "-" prefix
}

// serviceDef is what the supervisor needs to run a service, from a
// systemd unit or an OpenRC script.
type serviceDef struct {
	name        string // k3s.service, or k3s for OpenRC
	path        string // the unit file or init script
	description string
	typ         string // simple, exec, notify, oneshot
	preStart    []command
	start       command
	reload      *command // ExecReload; for OpenRC, a script offering reload (its HUP is sent as supervise-daemon --signal would)
	env         []string // Environment= then EnvironmentFile= contents, in order
	envFiles    []envFile
	restart     string // no, always, on-failure
	restartSec  time.Duration
	startTO     time.Duration // 0: no limit
	stopTO      time.Duration
	killMode    string // control-group, process, mixed
	remain      bool   // RemainAfterExit
	wantedBy    []string
	workDir     string
	// OpenRC only: where output goes (empty: /dev/null).
	outputLog, errorLog string
	journal             bool // output goes to the journal
}

type envFile struct {
	path     string
	optional bool
}

// normalizeUnit adds ".service" to a bare unit name.
func normalizeUnit(name string) string {
	if strings.Contains(name, "/") {
		name = filepath.Base(name)
	}
	if !strings.Contains(name, ".") {
		name += ".service"
	}
	return name
}

// findUnit returns the path of a unit file.
func findUnit(name string) (string, bool) {
	for _, d := range unitDirs {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
	}
	return "", false
}

var errNotFound = errors.New("not found")

// loadUnit reads and parses a unit file and its drop-ins.
func loadUnit(name string) (*serviceDef, error) {
	p, ok := findUnit(name)
	if !ok {
		return nil, errNotFound
	}
	d := &serviceDef{
		name: name, path: p, typ: "simple", restart: "no", restartSec: 100 * time.Millisecond,
		startTO: 90 * time.Second, stopTO: 90 * time.Second, killMode: "control-group", journal: true,
	}
	files := []string{p}
	drop, _ := filepath.Glob(filepath.Join(filepath.Dir(p), name+".d", "*.conf"))
	sort.Strings(drop)
	files = append(files, drop...)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := d.parse(b); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	if len(d.start.argv) == 0 {
		return nil, fmt.Errorf("%s: Service has no ExecStart= setting, refusing", p)
	}
	return d, nil
}

func (d *serviceDef) parse(b []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	section, pending := "", ""
	unitName := strings.TrimSuffix(d.name, ".service")
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if pending == "" && (line == "" || line[0] == '#' || line[0] == ';') {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			pending += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		if pending != "" && line != "" && (line[0] == '#' || line[0] == ';') {
			continue // comments inside continuations are skipped
		}
		// An empty line ends a continuation (install.sh's ExecStart ends
		// with a backslash and an empty line).
		line, pending = pending+line, ""
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[]")
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		v = strings.NewReplacer("%N", unitName, "%n", d.name, "%%", "%").Replace(v)
		var err error
		switch section + "." + k {
		case "Unit.Description":
			d.description = v
		case "Service.Type":
			d.typ = v
		case "Service.ExecStart":
			d.start, err = parseCommand(v)
		case "Service.ExecReload":
			var c command
			c, err = parseCommand(v)
			d.reload = &c
		case "Service.ExecStartPre":
			if v == "" {
				d.preStart = nil
				break
			}
			var c command
			c, err = parseCommand(v)
			d.preStart = append(d.preStart, c)
		case "Service.Environment":
			var words []string
			words, err = splitWords(v)
			d.env = append(d.env, words...)
		case "Service.EnvironmentFile":
			if v == "" {
				d.envFiles = nil
				break
			}
			ef := envFile{path: v}
			if strings.HasPrefix(v, "-") {
				ef = envFile{path: v[1:], optional: true}
			}
			d.envFiles = append(d.envFiles, ef)
		case "Service.Restart":
			d.restart = v
		case "Service.RestartSec":
			d.restartSec, err = parseSpan(v)
		case "Service.TimeoutStartSec":
			d.startTO, err = parseSpan(v)
		case "Service.TimeoutStopSec":
			d.stopTO, err = parseSpan(v)
		case "Service.TimeoutSec":
			d.startTO, err = parseSpan(v)
			d.stopTO = d.startTO
		case "Service.KillMode":
			d.killMode = v
		case "Service.RemainAfterExit":
			d.remain = v == "yes" || v == "true" || v == "1"
		case "Service.WorkingDirectory":
			d.workDir = strings.TrimPrefix(v, "-")
		case "Install.WantedBy", "Install.RequiredBy":
			d.wantedBy = append(d.wantedBy, strings.Fields(v)...)
		}
		if err != nil {
			return fmt.Errorf("%s=%s: %w", k, v, err)
		}
	}
	return sc.Err()
}

// parseCommand parses an Exec line: prefixes, then words with systemd's
// quoting.
func parseCommand(v string) (command, error) {
	var c command
	for len(v) > 0 && strings.ContainsRune("-@+!:", rune(v[0])) {
		if v[0] == '-' {
			c.ignoreFailure = true
		}
		v = v[1:]
	}
	words, err := splitWords(v)
	if err != nil {
		return c, err
	}
	if len(words) == 0 {
		return c, errors.New("empty command")
	}
	c.argv = words
	return c, nil
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

// parseSpan parses a systemd time span: "5", "5s", "100ms", "1min 30s",
// "infinity". Zero and infinity both mean no limit where a limit applies.
func parseSpan(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "infinity" {
		return 0, nil
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		return time.Duration(n * float64(time.Second)), nil
	}
	units := map[string]time.Duration{
		"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second, "sec": time.Second,
		"m": time.Minute, "min": time.Minute, "h": time.Hour, "hr": time.Hour, "d": 24 * time.Hour,
	}
	var total time.Duration
	for _, tok := range strings.Fields(v) {
		i := 0
		for i < len(tok) && (tok[i] >= '0' && tok[i] <= '9' || tok[i] == '.') {
			i++
		}
		n, err := strconv.ParseFloat(tok[:i], 64)
		u, ok := units[tok[i:]]
		if err != nil || !ok {
			return 0, fmt.Errorf("invalid time span %q", v)
		}
		total += time.Duration(n * float64(u))
	}
	return total, nil
}

// readEnvFile parses an EnvironmentFile: KEY=VALUE lines, values
// optionally quoted; blank lines and comments skipped.
func readEnvFile(p string) ([]string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var env []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '\'' && v[len(v)-1] == '\'' || v[0] == '"' && v[len(v)-1] == '"') {
			v = v[1 : len(v)-1]
		}
		env = append(env, strings.TrimSpace(k)+"="+v)
	}
	return env, nil
}

// expandEnv substitutes ${VAR} and $VAR (a whole word) in Exec arguments,
// as systemd does.
func expandEnv(argv []string, env []string) []string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	out := make([]string, 0, len(argv))
	for _, a := range argv {
		if strings.HasPrefix(a, "$") && !strings.HasPrefix(a, "${") {
			if v, ok := m[a[1:]]; ok {
				out = append(out, strings.Fields(v)...)
			}
			continue
		}
		out = append(out, os.Expand(a, func(k string) string { return m[k] }))
	}
	return out
}

// loadOpenRC reads an OpenRC init script by sourcing it in /bin/sh, as
// openrc-run does, and reads back the variables the stand-in honours.
func loadOpenRC(name string) (*serviceDef, error) {
	p := filepath.Join("/etc/init.d", name)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, errNotFound
	}
	probe := `set -a; . "$0" >/dev/null 2>&1 </dev/null; set +a
printf '%s\0' "$command" "$supervisor" "$respawn_delay" "$output_log" "$error_log" "$description" "$directory" "$extra_started_commands $extra_commands"`
	cmd := exec.Command("/bin/sh", "-c", probe, p)
	cmd.Env = append(serviceEnv(), "RC_SVCNAME="+name)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	f := strings.Split(string(out), "\x00")
	if len(f) < 8 {
		return nil, fmt.Errorf("%s: unexpected probe output", p)
	}
	if f[0] == "" {
		return nil, fmt.Errorf("%s: no command", p)
	}
	d := &serviceDef{
		name: name, path: p, typ: "simple", restart: "no", description: f[5],
		stopTO: 60 * time.Second, killMode: "control-group", outputLog: f[3], errorLog: f[4], workDir: f[6],
	}
	if slices.Contains(strings.Fields(f[7]), "reload") {
		d.reload = &command{}
	}
	if f[1] == "supervise-daemon" {
		d.restart = "always"
		d.restartSec, _ = parseSpan(f[2])
	}
	// The service runs the way supervise-daemon would: the script's
	// variables exported, command_args word-split and evaluated by the shell.
	run := `set -a; . "$0" >/dev/null 2>&1 </dev/null; set +a; eval "exec \"\$command\" $command_args"`
	d.start = command{argv: []string{"/bin/sh", "-c", run, p}}
	return d, nil
}
