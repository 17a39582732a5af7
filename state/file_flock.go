//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package state

import (
	"errors"
	"os"
	"syscall"
)

// tryFlock takes an exclusive flock on f without waiting; busy reports
// that another open file description holds it.
func tryFlock(f *os.File) (busy bool, err error) {
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return true, nil
		}
		return false, err
	}
}

// unflock releases the flock on f.
func unflock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// processGone reports whether no process with that pid runs on this host.
// A process we may not signal (EPERM) runs.
func processGone(pid int) bool {
	if pid <= 0 {
		return false // 0 and negative pids name process groups
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
