//go:build unix

package plugin

import (
	"os/exec"
	"syscall"
)

// setGroup runs cmd in a process group of its own and makes cancellation
// kill the whole group, so that a plugin's children die with it.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
