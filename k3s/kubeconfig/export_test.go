package kubeconfig

import "time"

// SetLockWait sets how long Merge and Remove wait for a lock file held by
// someone else, until the returned function restores it.
func SetLockWait(d time.Duration) (restore func()) {
	old := lockWait
	lockWait = d
	return func() { lockWait = old }
}
