//go:build !unix

package plugin

import "os/exec"

// setGroup does nothing where process groups are not available; the
// plugin process alone is killed on cancellation.
func setGroup(*exec.Cmd) {}
