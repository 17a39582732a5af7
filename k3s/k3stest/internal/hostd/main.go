// Command hostd is the init system of a k3stest host: one static binary
// that acts by the name it is run as.
//
//	k3stest-hostd init ...      pid 1 of the host: mounts, hostname, reaps orphans, runs the supervisor
//	k3stest-hostd supervise ... the supervisor: sshd, the services, the control socket
//	systemctl, journalctl, systemd-notify   the systemd stand-in's commands
//	rc-service, rc-update, openrc-run       the OpenRC stand-in's commands
//
// The harness (package k3stest) builds it with go build and installs it in
// each host under those names. It is not meant to run anywhere else.
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	if name == "k3stest-hostd" || name == "hostd" {
		if len(args) == 0 {
			fmt.Fprintln(os.Stderr, "usage: k3stest-hostd init|supervise|<command> ...")
			os.Exit(2)
		}
		name, args = args[0], args[1:]
	}
	os.Exit(dispatch(name, args))
}

func dispatch(name string, args []string) int {
	switch name {
	case "init":
		return runInit(args)
	case "supervise":
		return runSupervisor(args)
	case "systemctl":
		return systemctl(args)
	case "journalctl":
		return journalctl(args)
	case "systemd-notify":
		return systemdNotify(args)
	case "rc-service":
		return rcService(args)
	case "openrc-run":
		return openrcRun(args)
	case "rc-update":
		return rcUpdate(args)
	}
	fmt.Fprintf(os.Stderr, "k3stest-hostd: unknown command %q\n", name)
	return 2
}
