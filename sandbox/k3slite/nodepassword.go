package k3slite

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
)

// nodePasswordMu serialises node password creation per process (nodes
// sharing a host in tests all end up with the first one written).
var nodePasswordMu sync.Mutex

// nodePassword reads the node password file, or creates it with a random
// password (mode 0600), as k3s does on a node's first start.
func nodePassword(f hostFS, p string) (string, error) {
	nodePasswordMu.Lock()
	defer nodePasswordMu.Unlock()
	if b, err := f.ReadFile(p); err == nil {
		if pw := strings.TrimSpace(string(b)); pw != "" {
			return pw, nil
		}
	}
	b := make([]byte, 16)
	rand.Read(b)
	pw := hex.EncodeToString(b)
	if err := f.WriteFile(p, []byte(pw+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("standin: node password: %w", err)
	}
	return pw, nil
}
