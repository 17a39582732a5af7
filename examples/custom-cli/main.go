// Command custom-cli is a team's own openctl: the reference CLI with the
// Proxmox VE provider and one provider of the team's own, package files,
// which keeps files in a directory (apiVersion files.example.com/v1, kind
// File). Everything else — apply, plan, get, describe, delete, validate,
// state, config, completion, the generated "files cat" action — comes from
// package cli.
//
//	go run ./examples/custom-cli apply --sandbox -f examples/custom-cli/testdata/files.yaml
package main

import (
	"github.com/openctl/openctl/cli"
	"github.com/openctl/openctl/examples/custom-cli/files"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

func options() cli.Options {
	return cli.Options{
		Name: "custom",
		Drivers: []registry.Driver{
			proxmox.Driver{},
			files.Driver{}, // the one line that adds the team's provider
		},
		Backends: []state.Backend{state.FileBackend{}},
	}
}

func main() { cli.Main(options()) }
