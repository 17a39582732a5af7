// Command openctl is the reference command-line tool of the openctl
// library: kubectl-style apply, plan, get, describe and delete of
// Kubernetes-style manifests through the providers compiled into it (the
// Proxmox VE provider), with state kept in files or PostgreSQL.
//
//	openctl apply --sandbox -f examples/vms.yaml   # against a built-in Proxmox VE simulator
//	openctl apply -f vms.yaml                      # against the Proxmox VE in ~/.openctl/config.yaml
//	openctl plan -f vms.yaml --detailed-exitcode   # 0: no changes, 2: changes, 1: error
//	openctl get vms -o wide
//	openctl proxmox reboot vm web-01
//
// The command is thin: every behaviour lives in the library packages
// (github.com/openctl/openctl and below), so that a program embedding
// the engine gets the same. Run "openctl --help" for the commands and the
// exit codes.
package main

import (
	"context"
	"os"
)

func main() {
	stderr := newSwitchWriter(os.Stderr)
	ctx, stop := notifyContext(context.Background(), stderr)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, stderr)
	stop()
	os.Exit(code)
}
