//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package state

import (
	"os"

	"github.com/openctl/openctl/errcode"
)

// tryFlock is not available here: the file store needs flock(2).
func tryFlock(*os.File) (bool, error) {
	return false, errcode.New(errcode.Internal, "state: the file store needs flock(2), which this system lacks")
}

func unflock(*os.File) error { return nil }

// processGone cannot tell here; locks are never reported stale.
func processGone(int) bool { return false }
