package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// entry is one journal line: "<unix-nanos> <pid> <ident> <message>".
type entry struct {
	t     time.Time
	pid   string
	ident string
	msg   string
}

func parseEntry(line string) (entry, bool) {
	f := strings.SplitN(line, " ", 4)
	if len(f) < 4 {
		return entry{}, false
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return entry{}, false
	}
	return entry{t: time.Unix(0, ns), pid: f[1], ident: f[2], msg: f[3]}, true
}

// short formats an entry as journalctl's default output does.
func (e entry) short(host string) string {
	return fmt.Sprintf("%s %s %s[%s]: %s", e.t.Format(time.StampMicro)[:15], host, e.ident, e.pid, e.msg)
}

// readJournal returns the last n entries (n <= 0: all) of the given units
// (none: all units), oldest first.
func readJournal(units []string, n int) ([]entry, error) {
	var files []string
	if len(units) == 0 {
		files, _ = filepath.Glob(filepath.Join(journalDir, "*.log"))
	}
	for _, u := range units {
		files = append(files, filepath.Join(journalDir, normalizeUnit(u)+".log"))
	}
	var all []entry
	for _, f := range files {
		es, _, err := readEntries(f, 0)
		if err != nil {
			continue
		}
		all = append(all, es...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].t.Before(all[j].t) })
	if n > 0 && len(all) > n {
		all = all[len(all)-n:]
	}
	return all, nil
}

// readEntries reads complete lines of f from offset off; it returns the
// offset after the last complete line.
func readEntries(f string, off int64) ([]entry, int64, error) {
	fh, err := os.Open(f)
	if err != nil {
		return nil, off, err
	}
	defer fh.Close()
	if _, err := fh.Seek(off, 0); err != nil {
		return nil, off, err
	}
	var es []entry
	br := bufio.NewReaderSize(fh, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break // a partial last line is read next time
		}
		off += int64(len(line))
		if e, ok := parseEntry(strings.TrimSuffix(line, "\n")); ok {
			es = append(es, e)
		}
	}
	return es, off, nil
}

// journalctl is the journalctl stand-in: -u UNIT (repeatable), -n N,
// --no-pager, -o short|cat, -f, and the harmless -x, -e, -q, -b.
func journalctl(args []string) int {
	var units []string
	n, follow, output, quiet := -1, false, "short", false
	for i := 0; i < len(args); i++ {
		a := args[i]
		val := func() (string, bool) {
			if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "--") {
				return v, true
			}
			if len(a) > 2 && a[0] == '-' && a[1] != '-' {
				return a[2:], true
			}
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return "", false
		}
		switch {
		case a == "-u" || strings.HasPrefix(a, "--unit") || strings.HasPrefix(a, "-u"):
			v, ok := val()
			if !ok {
				return usage("journalctl: option requires an argument -- 'u'")
			}
			units = append(units, v)
		case a == "-n" || strings.HasPrefix(a, "--lines") || strings.HasPrefix(a, "-n"):
			v, ok := val()
			if !ok {
				return usage("journalctl: option requires an argument -- 'n'")
			}
			if v == "all" {
				n = 0
				continue
			}
			x, err := strconv.Atoi(strings.TrimPrefix(v, "+"))
			if err != nil || x < 0 {
				return usage("Failed to parse lines '" + v + "'")
			}
			n = x
		case a == "-o" || strings.HasPrefix(a, "--output") || strings.HasPrefix(a, "-o"):
			v, ok := val()
			if !ok || v != "cat" && v != "short" {
				return usage("journalctl: unsupported output mode (the stand-in knows short and cat)")
			}
			output = v
		case a == "-f" || a == "--follow":
			follow = true
		case a == "-e" || a == "--pager-end":
			if n < 0 {
				n = 1000
			}
		case a == "-q" || a == "--quiet":
			quiet = true
		case a == "--no-pager" || a == "-x" || a == "--catalog" || a == "-b" || a == "--boot" || a == "-xe" || a == "-xeu":
			if a == "-xeu" && i+1 < len(args) {
				i++
				units = append(units, args[i])
			}
		default:
			return usage("journalctl: unrecognized option '" + a + "'")
		}
	}
	if n < 0 && follow {
		n = 10
	}
	host, _ := os.Hostname()
	w := bufio.NewWriter(os.Stdout)
	print := func(e entry) {
		if output == "cat" {
			fmt.Fprintln(w, e.msg)
		} else {
			fmt.Fprintln(w, e.short(host))
		}
	}
	es, _ := readJournal(units, n)
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
	// Follow: remember where each file ends and poll for more.
	if len(units) == 0 {
		fs, _ := filepath.Glob(filepath.Join(journalDir, "*.log"))
		for _, f := range fs {
			units = append(units, strings.TrimSuffix(filepath.Base(f), ".log"))
		}
	}
	offs := map[string]int64{}
	for _, u := range units {
		f := filepath.Join(journalDir, normalizeUnit(u)+".log")
		if fi, err := os.Stat(f); err == nil {
			offs[f] = fi.Size()
		} else {
			offs[f] = 0
		}
	}
	for {
		var news []entry
		for f, off := range offs {
			es, noff, err := readEntries(f, off)
			if err == nil {
				offs[f] = noff
				news = append(news, es...)
			}
		}
		sort.SliceStable(news, func(i, j int) bool { return news[i].t.Before(news[j].t) })
		for _, e := range news {
			print(e)
		}
		if err := w.Flush(); err != nil {
			return 0 // the reader went away
		}
		time.Sleep(100 * time.Millisecond) // tail -f's poll interval
	}
}

func usage(msg string) int {
	fmt.Fprintln(os.Stderr, msg)
	return 1
}
