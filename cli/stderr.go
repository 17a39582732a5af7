package cli

import (
	"io"
	"sync"
)

// switchWriter is standard error as the signal handler and the commands
// share it. While apply or delete draws its live view on a terminal,
// writes go through the view (progress.Renderer.Interleave), so that a
// log line or the Ctrl-C notice lands above the view instead of across
// it. It is safe for concurrent use.
type switchWriter struct {
	mu   sync.Mutex // guards w
	w    io.Writer
	base io.Writer // the real stream
}

func newSwitchWriter(w io.Writer) *switchWriter {
	if sw, ok := w.(*switchWriter); ok {
		return sw
	}
	return &switchWriter{w: w, base: w}
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	w := s.w
	s.mu.Unlock()
	return w.Write(p)
}

// through sends the writes to wrap(the real stream) until restore is
// called.
func (s *switchWriter) through(wrap func(io.Writer) io.Writer) (restore func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w = wrap(s.base)
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.w = s.base
	}
}
