package vmhost

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// journalMax is how many entries a host's journal keeps; older ones are
// dropped, as journald rotates its files away.
const journalMax = 20000

// entry is one record of the journal.
type entry struct {
	seq   uint64
	t     time.Time
	unit  string // "k3s.service"
	ident string // SYSLOG_IDENTIFIER: "systemd", "k3s"
	pid   int
	msg   string
}

// journal is a host's systemd journal, kept in memory. It is safe for
// concurrent use.
type journal struct {
	mu      sync.Mutex
	entries []entry
	seq     uint64
	grew    chan struct{} // closed and replaced when an entry is added
	now     func() time.Time
}

func newJournal() *journal {
	return &journal{grew: make(chan struct{}), now: time.Now}
}

// add appends one entry.
func (j *journal) add(unit, ident string, pid int, msg string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	j.entries = append(j.entries, entry{seq: j.seq, t: j.now(), unit: unit, ident: ident, pid: pid, msg: msg})
	if len(j.entries) > journalMax {
		j.entries = append(j.entries[:0:0], j.entries[len(j.entries)-journalMax:]...)
	}
	close(j.grew)
	j.grew = make(chan struct{})
}

// systemd logs a message of the service manager (systemd[1]) about unit.
func (j *journal) systemd(unit, format string, args ...any) {
	if j == nil {
		return
	}
	j.add(unit, "systemd", 1, fmt.Sprintf(format, args...))
}

// since returns the entries after seq that match, and the channel that
// is closed when more are added.
func (j *journal) since(seq uint64, match func(entry) bool) ([]entry, uint64, <-chan struct{}) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []entry
	for _, e := range j.entries {
		if e.seq > seq && match(e) {
			out = append(out, e)
		}
	}
	return out, j.seq, j.grew
}

// lineWriter sends what a process writes to its journal, a line per
// entry; a last line without a newline is sent by flush.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	emit func(line string)
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	return len(b), nil
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(string(w.buf))
		w.buf = nil
	}
}

// unitName is the unit name journalctl -u and systemctl take for a
// name: "k3s" is k3s.service.
func unitName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if !strings.Contains(name, ".") {
		name += ".service"
	}
	return name
}

// progJournalctl is journalctl as the scripts and the node agent use it:
// -u/--unit UNIT (repeatable), -n/--lines [N|+N|all], -f/--follow,
// -o/--output short|short-iso|short-precise|cat, -S/--since and
// -U/--until (YYYY-MM-DD [HH:MM[:SS]], HH:MM[:SS], now, today,
// yesterday, -N{s,min,h,d} or "N {s,min,h,d} ago"), -q/--quiet,
// --no-hostname; --no-pager, -x/--catalog, -e/--pager-end, -b/--boot,
// -a/--all, -l/--full and --no-tail are accepted. Matches (FIELD=value)
// are not supported.
func progJournalctl(ctx context.Context, c *Call) int {
	j := c.Host.journal
	if j == nil {
		return c.shellErr(127, "%s: not found", c.Args[0])
	}
	var units []string
	n, follow, output, quiet, noHost := -1, false, "short", false, false
	pagerEnd := false
	var since, until time.Time
	args := c.Args[1:]
	usage := func(format string, a ...any) int {
		fmt.Fprintf(c.Stderr, format+"\n", a...)
		return 1
	}
	now := j.now()
	for i := 0; i < len(args); i++ {
		a := args[i]
		// value returns an option's value: attached (--unit=x, -ux) or
		// the next argument.
		value := func(attached string, ok bool) (string, bool) {
			if ok {
				return attached, true
			}
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return "", false
		}
		var name, attached string
		var hasValue bool
		switch {
		case strings.HasPrefix(a, "--"):
			name, attached, hasValue = strings.Cut(a[2:], "=")
			name = "--" + name
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// Bundled short options: -xeu k3s, -n5, -fu k3s.
			k := 1
			for ; k < len(a); k++ {
				f := a[k]
				if strings.IndexByte("unoSU", f) >= 0 {
					break
				}
				switch f {
				case 'f':
					follow = true
				case 'q':
					quiet = true
				case 'e':
					pagerEnd = true
				case 'x', 'b', 'a', 'l':
				default:
					return usage("journalctl: invalid option -- '%c'", f)
				}
			}
			if k == len(a) {
				continue
			}
			name = "-" + string(a[k])
			attached, hasValue = a[k+1:], k+1 < len(a)
		default:
			return usage("journalctl: matches (%s) are not supported here", a)
		}
		switch name {
		case "-u", "--unit":
			v, ok := value(attached, hasValue)
			if !ok {
				return usage("journalctl: option requires an argument -- 'u'")
			}
			units = append(units, unitName(v))
		case "-n", "--lines":
			v := attached
			if !hasValue {
				// The count is optional; a following number is it.
				if i+1 < len(args) && args[i+1] != "" && strings.Trim(strings.TrimPrefix(args[i+1], "+"), "0123456789") == "" {
					i++
					v = args[i]
				} else {
					v = "10"
				}
			}
			if v == "all" {
				n = -2
				continue
			}
			x, err := strconv.Atoi(strings.TrimPrefix(v, "+"))
			if err != nil || x < 0 {
				return usage("Failed to parse lines '%s'", v)
			}
			n = x
		case "-o", "--output":
			v, ok := value(attached, hasValue)
			if !ok {
				return usage("journalctl: option requires an argument -- 'o'")
			}
			switch v {
			case "short", "cat", "short-iso", "short-precise":
				output = v
			default:
				return usage("Unknown output format '%s'.", v)
			}
		case "-S", "--since", "-U", "--until":
			v, ok := value(attached, hasValue)
			if !ok {
				return usage("journalctl: option requires an argument -- '%c'", name[len(name)-1])
			}
			t, err := parseJournalTime(v, now)
			if err != nil {
				return usage("Failed to parse timestamp: %s", v)
			}
			if name == "-S" || name == "--since" {
				since = t
			} else {
				until = t
			}
		case "--follow":
			follow = true
		case "--quiet":
			quiet = true
		case "--pager-end":
			pagerEnd = true
		case "--no-hostname":
			noHost = true
		case "--no-pager", "--catalog", "--boot", "--all", "--full", "--no-tail":
		default:
			return usage("journalctl: unrecognized option '%s'", a)
		}
	}
	if n == -1 && (follow || pagerEnd) {
		n = 10
		if pagerEnd && !follow {
			n = 1000
		}
	}
	match := func(e entry) bool {
		if len(units) > 0 {
			found := false
			for _, u := range units {
				found = found || e.unit == u
			}
			if !found {
				return false
			}
		}
		return (since.IsZero() || !e.t.Before(since)) && (until.IsZero() || !e.t.After(until))
	}
	host := c.Host.hostname
	w := bufio.NewWriter(c.Stdout)
	print := func(e entry) {
		switch output {
		case "cat":
			fmt.Fprintln(w, e.msg)
			return
		case "short-iso":
			fmt.Fprint(w, e.t.UTC().Format("2006-01-02T15:04:05-07:00"))
		case "short-precise":
			fmt.Fprint(w, e.t.UTC().Format("Jan 02 15:04:05.000000"))
		default:
			fmt.Fprint(w, e.t.UTC().Format(journalStamp))
		}
		if !noHost {
			fmt.Fprint(w, " ", host)
		}
		fmt.Fprintf(w, " %s[%d]: %s\n", e.ident, e.pid, e.msg)
	}
	es, seq, grew := j.since(0, match)
	if n >= 0 && len(es) > n {
		es = es[len(es)-n:]
	}
	if len(es) == 0 && !quiet && !follow {
		fmt.Fprintln(w, "-- No entries --")
	}
	for _, e := range es {
		print(e)
	}
	if err := w.Flush(); err != nil {
		return 1
	}
	if !follow {
		return 0
	}
	for {
		select {
		case <-ctx.Done():
			return 143
		case <-grew:
		}
		es, seq, grew = j.since(seq, match)
		for _, e := range es {
			print(e)
		}
		if err := w.Flush(); err != nil {
			return 1
		}
	}
}

// parseJournalTime parses journalctl's --since and --until values,
// the forms listed on progJournalctl, in UTC.
func parseJournalTime(v string, now time.Time) (time.Time, error) {
	now = now.UTC()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	switch v {
	case "now":
		return now, nil
	case "today":
		return day, nil
	case "yesterday":
		return day.AddDate(0, 0, -1), nil
	case "tomorrow":
		return day.AddDate(0, 0, 1), nil
	}
	rel := strings.TrimSpace(v)
	sign := 0
	switch {
	case strings.HasPrefix(rel, "-"):
		sign, rel = -1, rel[1:]
	case strings.HasPrefix(rel, "+"):
		sign, rel = 1, rel[1:]
	case strings.HasSuffix(rel, " ago"):
		sign, rel = -1, strings.TrimSuffix(rel, " ago")
	}
	if sign != 0 {
		d, err := parseSpan(rel)
		if err != nil {
			return time.Time{}, err
		}
		return now.Add(time.Duration(sign) * d), nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"15:04:05", "15:04"} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return day.Add(time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second), nil
		}
	}
	return time.Time{}, fmt.Errorf("bad time %q", v)
}

// parseSpan parses a systemd time span: "5", "5s", "100ms", "1min 30s",
// "2h". "infinity" is 0 (no limit).
func parseSpan(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "infinity" {
		return 0, nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return time.Duration(f * float64(time.Second)), nil
	}
	units := map[string]time.Duration{
		"us": time.Microsecond, "usec": time.Microsecond, "ms": time.Millisecond, "msec": time.Millisecond,
		"s": time.Second, "sec": time.Second, "second": time.Second, "seconds": time.Second,
		"m": time.Minute, "min": time.Minute, "minute": time.Minute, "minutes": time.Minute,
		"h": time.Hour, "hr": time.Hour, "hour": time.Hour, "hours": time.Hour,
		"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	}
	var total time.Duration
	rest := strings.ReplaceAll(v, " ", "")
	if rest == "" {
		return 0, fmt.Errorf("invalid time span %q", v)
	}
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		k := i
		for k < len(rest) && (rest[k] < '0' || rest[k] > '9') && rest[k] != '.' {
			k++
		}
		f, err := strconv.ParseFloat(rest[:i], 64)
		u, ok := units[rest[i:k]]
		if err != nil || !ok {
			return 0, fmt.Errorf("invalid time span %q", v)
		}
		total += time.Duration(f * float64(u))
		rest = rest[k:]
	}
	return total, nil
}

// journalStamp is the short format's time: "Dec 02 01:32:38".
const journalStamp = "Jan 02 15:04:05"
