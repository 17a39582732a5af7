package main

import (
	"fmt"
	"os"
	"path/filepath"
)

const noOpenRC = " * rc-service: the OpenRC stand-in's supervisor is not running\n"

// rcService is the rc-service stand-in: rc-service NAME start|stop|restart|status,
// and rc-service --exists NAME.
func rcService(args []string) int {
	if len(args) == 2 && (args[0] == "-e" || args[0] == "--exists") {
		if _, err := os.Stat(filepath.Join("/etc/init.d", args[1])); err != nil {
			return 1
		}
		return 0
	}
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: rc-service NAME start|stop|restart|status")
		return 1
	}
	return rcAction(args[0], args[1])
}

// openrcRun is what runs an init script directly: /etc/init.d/NAME ACTION
// runs "openrc-run /etc/init.d/NAME ACTION".
func openrcRun(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: openrc-run SCRIPT start|stop|restart|status")
		return 1
	}
	return rcAction(filepath.Base(args[0]), args[1])
}

func rcAction(name, action string) int {
	if _, err := os.Stat(filepath.Join("/etc/init.d", name)); err != nil {
		fmt.Fprintf(os.Stderr, " * rc-service: service `%s' does not exist\n", name)
		return 1
	}
	switch action {
	case "start", "restart":
		fmt.Printf(" * Starting %s ...\n", name)
	case "stop":
		fmt.Printf(" * Stopping %s ...\n", name)
	case "status":
	case "reload":
		fmt.Printf(" * Reloading %s ...\n", name)
	default:
		fmt.Fprintf(os.Stderr, " * %s: unknown function `%s'\n", name, action)
		return 1
	}
	code := call(request{Cmd: action, Units: []string{name}}, noOpenRC)
	if action != "status" {
		if code == 0 {
			fmt.Println(" [ ok ]")
		} else {
			fmt.Println(" [ !! ]")
		}
	}
	return code
}

// rcUpdate is the rc-update stand-in: add|del NAME [RUNLEVEL].
func rcUpdate(args []string) int {
	if len(args) < 2 || len(args) > 3 || args[0] != "add" && args[0] != "del" && args[0] != "delete" {
		fmt.Fprintln(os.Stderr, "usage: rc-update add|del NAME [RUNLEVEL]")
		return 1
	}
	name, rl := args[1], "default"
	if len(args) == 3 {
		rl = args[2]
	}
	script := filepath.Join("/etc/init.d", name)
	link := filepath.Join("/etc/runlevels", rl, name)
	if args[0] == "add" {
		if _, err := os.Stat(script); err != nil {
			fmt.Fprintf(os.Stderr, " * rc-update: service `%s' does not exist\n", name)
			return 1
		}
		if _, err := os.Lstat(link); err == nil {
			fmt.Fprintf(os.Stderr, " * rc-update: %s already installed in runlevel `%s'; skipping\n", name, rl)
			return 0
		}
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := os.Symlink(script, link); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf(" * service %s added to runlevel %s\n", name, rl)
		return 0
	}
	if err := os.Remove(link); err != nil {
		fmt.Fprintf(os.Stderr, " * rc-update: service `%s' is not in the runlevel `%s'\n", name, rl)
		return 1
	}
	fmt.Printf(" * service %s removed from runlevel %s\n", name, rl)
	return 0
}
