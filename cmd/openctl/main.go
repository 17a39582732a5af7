// Command openctl is the reference command-line tool of the openctl
// library: kubectl-style apply, plan, get, describe and delete of
// Kubernetes-style manifests through the providers compiled into it (the
// Proxmox VE and K3s providers), with state kept in files or PostgreSQL.
//
//	openctl apply --sandbox -f examples/vms.yaml   # against a built-in Proxmox VE simulator
//	openctl apply -f vms.yaml                      # against the Proxmox VE in ~/.openctl/config.yaml
//	openctl plan -f vms.yaml --detailed-exitcode   # 0: no changes, 2: changes, 1: error
//	openctl get vms -o wide
//	openctl proxmox reboot vm web-01
//
// Everything but the list below lives in package cli and the library
// beneath it: a team's own openctl is this file with one more driver (see
// examples/custom-cli). Run "openctl --help" for the commands and the exit
// codes.
package main

import (
	"github.com/spf13/cobra"

	"github.com/openctl/openctl/cli"
	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/sandbox"
	"github.com/openctl/openctl/sandbox/sandboxcmd"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/postgres"
)

// options is the reference binary: its providers, its state backends and
// the Proxmox VE simulator server as "openctl sandbox". Under --sandbox
// the two providers share one simulated world: the Proxmox simulator's
// VMs are hosts the K3s provider reaches over SSH.
func options() cli.Options {
	box := sandbox.NewShared(sandbox.Options{})
	return cli.Options{
		Drivers:  []registry.Driver{proxmox.Driver{SandboxGuests: box.ProxmoxGuests}, k3s.Driver{SandboxHosts: box.K3sHosts}},
		Backends: []state.Backend{state.FileBackend{}, postgres.Backend{}},
		Commands: []*cobra.Command{sandboxcmd.Command()},
	}
}

func main() { cli.Main(options()) }
