package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// call sends a request to the supervisor and copies its answer to stdout
// and stderr; it returns the exit status.
func call(req request, notRunning string) int {
	c, err := net.Dial("unix", controlSock)
	if err != nil {
		fmt.Fprint(os.Stderr, notRunning)
		return 1
	}
	defer c.Close()
	b, _ := json.Marshal(req)
	if _, err := c.Write(append(b, '\n')); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dec := json.NewDecoder(bufio.NewReader(c))
	for {
		var r reply
		if err := dec.Decode(&r); err != nil {
			fmt.Fprintf(os.Stderr, "connection to the init system lost: %v\n", err)
			return 1
		}
		os.Stdout.WriteString(r.Stdout)
		os.Stderr.WriteString(r.Stderr)
		if r.Exit != nil {
			return *r.Exit
		}
	}
}

const noSystemd = "System has not been booted with systemd as init system (PID 1). Can't operate.\nFailed to connect to bus: Host is down\n"

// systemctl is the systemctl stand-in.
func systemctl(args []string) int {
	var verb string
	var units []string
	quiet, noBlock, now := false, false, false
	for _, a := range args {
		switch a {
		case "-q", "--quiet":
			quiet = true
		case "--no-block":
			noBlock = true
		case "--now":
			now = true
		case "--no-pager", "-l", "--full", "--no-legend", "--no-ask-password", "--system":
		default:
			if strings.HasPrefix(a, "-") {
				fmt.Fprintf(os.Stderr, "systemctl: unrecognized option '%s'\n", a)
				return 1
			}
			if verb == "" {
				verb = a
			} else {
				units = append(units, a)
			}
		}
	}
	if verb == "" {
		fmt.Fprintln(os.Stderr, "systemctl: the stand-in needs a verb")
		return 1
	}
	needUnits := map[string]bool{"start": true, "stop": true, "restart": true, "is-active": true, "is-failed": true, "is-enabled": true, "enable": true, "disable": true, "status": true}
	if needUnits[verb] && len(units) == 0 {
		fmt.Fprintf(os.Stderr, "Too few arguments.\n")
		return 1
	}
	paths := units
	for i, u := range units {
		units[i] = normalizeUnit(u)
	}
	switch verb {
	case "enable":
		code := enable(paths, units, quiet)
		if code == 0 && now {
			return call(request{Cmd: "start", Units: units, NoBlock: noBlock}, noSystemd)
		}
		return code
	case "disable":
		code := disable(units, quiet)
		if code == 0 && now {
			return call(request{Cmd: "stop", Units: units}, noSystemd)
		}
		return code
	case "is-enabled":
		code := 1
		for _, u := range units {
			if _, ok := findUnit(u); !ok {
				if !quiet {
					fmt.Fprintf(os.Stderr, "Failed to get unit file state for %s: No such file or directory\n", u)
				}
				continue
			}
			st := "disabled"
			if unitEnabled(u) {
				st, code = "enabled", 0
			}
			if !quiet {
				fmt.Println(st)
			}
		}
		return code
	case "is-active", "is-failed":
		if quiet {
			os.Stdout, _ = os.Open(os.DevNull)
		}
	}
	return call(request{Cmd: verb, Units: units, NoBlock: noBlock}, noSystemd)
}

// unitEnabled reports whether a *.wants or *.requires link to the unit
// exists.
func unitEnabled(u string) bool {
	m, _ := filepath.Glob(filepath.Join("/etc/systemd/system", "*.wants", u))
	r, _ := filepath.Glob(filepath.Join("/etc/systemd/system", "*.requires", u))
	return len(m)+len(r) > 0
}

// enable links the units into /etc/systemd/system (when given as a path
// elsewhere) and into the .wants directories their [Install] names.
func enable(paths, units []string, quiet bool) int {
	for i, u := range units {
		p := paths[i]
		if strings.Contains(p, "/") && filepath.Dir(p) != "/etc/systemd/system" {
			dst := filepath.Join("/etc/systemd/system", u)
			_ = os.Remove(dst)
			if err := os.Symlink(p, dst); err != nil {
				fmt.Fprintf(os.Stderr, "Failed to enable unit: %v\n", err)
				return 1
			}
			if !quiet {
				fmt.Fprintf(os.Stderr, "Created symlink %s → %s.\n", dst, p)
			}
		}
		up, ok := findUnit(u)
		if !ok {
			fmt.Fprintf(os.Stderr, "Failed to enable unit: Unit file %s does not exist.\n", u)
			return 1
		}
		d := &serviceDef{name: u}
		b, err := os.ReadFile(up)
		if err == nil {
			err = d.parse(b)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "Failed to enable unit: %v\n", err)
			return 1
		}
		if len(d.wantedBy) == 0 && !quiet {
			fmt.Fprintf(os.Stderr, "The unit files have no installation config (WantedBy=, RequiredBy=, Also=,\nAlias= settings in the [Install] section, and DefaultInstance= for template\nunits). This means they are not meant to be enabled or disabled using systemctl.\n")
		}
		for _, t := range d.wantedBy {
			dir := filepath.Join("/etc/systemd/system", t+".wants")
			link := filepath.Join(dir, u)
			if cur, err := os.Readlink(link); err == nil && cur == up {
				continue
			}
			_ = os.MkdirAll(dir, 0o755)
			_ = os.Remove(link)
			if err := os.Symlink(up, link); err != nil {
				fmt.Fprintf(os.Stderr, "Failed to enable unit: %v\n", err)
				return 1
			}
			if !quiet {
				fmt.Fprintf(os.Stderr, "Created symlink %s → %s.\n", link, up)
			}
		}
	}
	return 0
}

func disable(units []string, quiet bool) int {
	for _, u := range units {
		links, _ := filepath.Glob(filepath.Join("/etc/systemd/system", "*.wants", u))
		for _, l := range links {
			if err := os.Remove(l); err != nil && !errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(os.Stderr, "Failed to disable unit: %v\n", err)
				return 1
			}
			if !quiet {
				fmt.Fprintf(os.Stderr, "Removed \"%s\".\n", l)
			}
		}
		if _, ok := findUnit(u); !ok && len(links) == 0 {
			fmt.Fprintf(os.Stderr, "Failed to disable unit: Unit file %s does not exist.\n", u)
			return 1
		}
	}
	return 0
}

// systemdNotify is a minimal systemd-notify: --ready and VAR=VALUE
// arguments are sent as one datagram to $NOTIFY_SOCKET.
func systemdNotify(args []string) int {
	var lines []string
	for _, a := range args {
		switch {
		case a == "--ready":
			lines = append(lines, "READY=1")
		case strings.HasPrefix(a, "--status="):
			lines = append(lines, "STATUS="+strings.TrimPrefix(a, "--status="))
		case strings.HasPrefix(a, "--"):
		default:
			lines = append(lines, a)
		}
	}
	sock := os.Getenv("NOTIFY_SOCKET")
	if sock == "" {
		fmt.Fprintln(os.Stderr, "No status data could be sent: $NOTIFY_SOCKET was not set")
		return 1
	}
	c, err := net.DialTimeout("unixgram", sock, 5*time.Second)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Failed to notify init system: %v\n", err)
		return 1
	}
	defer c.Close()
	if _, err := c.Write([]byte(strings.Join(lines, "\n"))); err != nil {
		fmt.Fprintf(os.Stderr, "Failed to notify init system: %v\n", err)
		return 1
	}
	return 0
}
