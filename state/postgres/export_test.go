package postgres

// SetForceTerminatedHook makes ForceUnlock on s call f after the holder's
// session has ended and before the holder's info row is deleted.
func SetForceTerminatedHook(s *Store, f func()) { s.forceTerminated = f }
