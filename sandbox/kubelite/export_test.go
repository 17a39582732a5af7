package kubelite

import "time"

// SetKeptEvents makes s keep only the last n changes for watches.
func SetKeptEvents(s *Store, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keep = n
}

// SetBookmarkInterval sets how often the watches of s get bookmarks.
func SetBookmarkInterval(s *Store, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick = d
}
