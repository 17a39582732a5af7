package state

import (
	"path/filepath"

	"github.com/openctl/openctl/state/seal"
)

// UseKeyForTest gives st an already unlocked key (its key file kf and
// keyring ring), sparing a test the 600,000-iteration passphrase
// derivation each new store would run. A FileStore gets kf saved as its
// key file.
func UseKeyForTest(st Store, kf *seal.KeyFile, ring *seal.Keyring) error {
	switch s := st.(type) {
	case *FileStore:
		if err := kf.Save(filepath.Join(s.dir, keyFileName)); err != nil {
			return err
		}
		s.keys.Add(ring)
	case *Memory:
		s.keyMu.Lock()
		s.useKey(kf, ring)
		s.keyMu.Unlock()
	}
	return nil
}

// SchemeOf and FileDir expose the DSN parsing of Backends and FileBackend
// to the tests.
var (
	SchemeOf = schemeOf
	FileDir  = fileDir
)
