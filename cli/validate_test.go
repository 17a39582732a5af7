package cli_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openctl/openctl/cli"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/registry"
)

// TestValidateSaysOpenctlOnce: validate's error names the count of
// resources checked and then the problems, with "openctl: " once.
func TestValidateSaysOpenctlOnce(t *testing.T) {
	opts := cli.Options{Drivers: []registry.Driver{proxmox.Driver{}}, Env: func(string) string { return "" }}
	manifest := "apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata: {name: web-01}\nspec:\n  template: {name: t}\n" +
		"  description: {$ref: {apiVersion: proxmox.openctl.io/v1, kind: VirtualMachine, name: web-01, field: status.ip}}\n"
	var out, errOut bytes.Buffer
	code := cli.Run(t.Context(), opts, []string{"validate", "--config", "/nonexistent/config.yaml", "-f", "-"}, strings.NewReader(manifest), &out, &errOut)
	assert.Equal(t, 2, code, errOut.String())
	assert.True(t, strings.HasPrefix(errOut.String(), "openctl: 1 resource checked: "), errOut.String())
	assert.Equal(t, 1, strings.Count(errOut.String(), "openctl: "), errOut.String())
}
