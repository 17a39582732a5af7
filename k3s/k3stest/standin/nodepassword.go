package standin

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// nodePassword reads the node password file, or creates it with a random
// password (mode 0600), as k3s does on a node's first start. Creation is
// race-free: nodes sharing one host (tests) all end up with the password
// that was written first.
func nodePassword(path string) (string, error) {
	for range 3 {
		if b, err := os.ReadFile(path); err == nil {
			if pw := strings.TrimSpace(string(b)); pw != "" {
				return pw, nil
			}
			os.Remove(path) // empty: made anew, as k3s does
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("standin: node password: %w", err)
		}
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return "", fmt.Errorf("standin: node password: %w", err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", fmt.Errorf("standin: node password: %w", err)
		}
		tmp, err := os.CreateTemp(filepath.Dir(path), ".password-*")
		if err != nil {
			return "", fmt.Errorf("standin: node password: %w", err)
		}
		_, werr := tmp.WriteString(hex.EncodeToString(b) + "\n")
		cerr := tmp.Close()
		if werr == nil && cerr == nil {
			werr = os.Link(tmp.Name(), path) // fails if another node was first
		}
		os.Remove(tmp.Name())
		if werr != nil && !errors.Is(werr, os.ErrExist) {
			return "", fmt.Errorf("standin: node password: %w", errors.Join(werr, cerr))
		}
	}
	return "", fmt.Errorf("standin: node password: %s stays empty", path)
}
