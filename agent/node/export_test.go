package node

import "time"

// ServerTimeouts returns the read-header, read, write and idle timeouts
// of s's http.Server, for tests.
func ServerTimeouts(s *Server) (readHeader, read, write, idle time.Duration) {
	return s.srv.ReadHeaderTimeout, s.srv.ReadTimeout, s.srv.WriteTimeout, s.srv.IdleTimeout
}

// SetServerTimeouts replaces s's http.Server timeouts, so that a test can
// check they are enforced (and that handlers extend their own deadlines)
// without waiting for the real ones. Call it before Serve.
func SetServerTimeouts(s *Server, readHeader, read, write, idle time.Duration) {
	s.srv.ReadHeaderTimeout, s.srv.ReadTimeout, s.srv.WriteTimeout, s.srv.IdleTimeout = readHeader, read, write, idle
}
