package cli_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/openctl/openctl/cli"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/registry"
)

// Run a command line of a CLI with the Proxmox VE driver compiled in:
// validate reads the manifest from standard input and contacts nothing.
func ExampleRun() {
	opts := cli.Options{
		Drivers: []registry.Driver{proxmox.Driver{}},
		Env:     func(string) string { return "" }, // no configuration, no OPENCTL_* variables
	}
	manifest := `
apiVersion: proxmox.openctl.io/v1
kind: VirtualMachine
metadata: {name: web-01}
spec:
  template: {name: ubuntu-24.04-cloud}
`
	code := cli.Run(context.Background(), opts, []string{"validate", "--config", "/nonexistent/config.yaml", "-f", "-"},
		strings.NewReader(manifest), os.Stdout, os.Stdout)
	fmt.Println("exit code", code)
	// Output:
	// openctl: the proxmox provider is not configured: checked decoding, kinds and $refs of its resources, not their specs
	// 1 resource valid
	// exit code 0
}
