package standin

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// FormatToken returns k3s's full token: K10<sha256 of the CA PEM>::<user>:<password>.
func FormatToken(caPEM []byte, user, password string) string {
	sum := sha256.Sum256(caPEM)
	return "K10" + hex.EncodeToString(sum[:]) + "::" + user + ":" + password
}

// serverPassword picks the server password as k3s does: the --token value
// (its password part, if it is a full token), else the server entry of
// server/cred/passwd, else a random 16-byte hex string.
func serverPassword(token, passwdPath string) (string, error) {
	return pickPassword(token, passwdPath, "server", "")
}

// agentPassword picks the agent (node user) password: the --agent-token
// value (its password part, if full), else the node entry of
// server/cred/passwd (a joiner's comes from the cluster's bootstrap
// data), else the server password.
func agentPassword(agentToken, passwdPath, serverPW string) (string, error) {
	return pickPassword(agentToken, passwdPath, "node", serverPW)
}

func pickPassword(token, passwdPath, user, fallback string) (string, error) {
	if token != "" {
		if _, rest, ok := strings.Cut(token, "::"); ok && strings.HasPrefix(token, "K10") {
			_, pw, ok := strings.Cut(rest, ":")
			if !ok {
				return "", fmt.Errorf("standin: token is not of the form K10<hash>::<user>:<password>")
			}
			return pw, nil
		}
		return token, nil
	}
	if pw, err := passwdEntry(passwdPath, user); err == nil {
		return pw, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if fallback != "" {
		return fallback, nil
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("standin: token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// passwdEntry returns user's password from k3s's passwd file
// (lines password,user,uid,groups); os.ErrNotExist if absent.
func passwdEntry(path, user string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("standin: passwd: %w", err)
	}
	pw, err := passwdEntryFrom(b, user)
	if err != nil {
		return "", fmt.Errorf("standin: passwd %s: %w", path, err)
	}
	return pw, nil
}

// passwdEntryFrom is passwdEntry on the file's contents.
func passwdEntryFrom(passwd []byte, user string) (string, error) {
	r := csv.NewReader(bytes.NewReader(passwd))
	r.FieldsPerRecord = -1
	records, err := r.ReadAll()
	if err != nil {
		return "", err
	}
	for _, rec := range records {
		if len(rec) >= 2 && rec[1] == user {
			return rec[0], nil
		}
	}
	return "", fmt.Errorf("no user %s: %w", user, os.ErrNotExist)
}

// writeTokens writes server/cred/passwd (users server and node),
// server/token (0600) and its node-token link, and server/agent-token: a
// link to token when the agent password is the server's, else its own
// K10<hash>::node:<agent password> file (0600).
func writeTokens(serverDir string, caPEM []byte, password, agentPW string) error {
	if err := writeFile(filepath.Join(serverDir, "cred", "passwd"), formatPasswd(password, agentPW), 0o600); err != nil {
		return err
	}
	token := FormatToken(caPEM, "server", password) + "\n"
	if err := writeFile(filepath.Join(serverDir, "token"), []byte(token), 0o600); err != nil {
		return err
	}
	links := []string{"node-token", "agent-token"}
	if agentPW != password {
		links = links[:1]
	}
	for _, link := range []string{"node-token", "agent-token"} {
		if err := os.Remove(filepath.Join(serverDir, link)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("standin: %w", err)
		}
	}
	for _, link := range links {
		if err := os.Symlink(filepath.Join(serverDir, "token"), filepath.Join(serverDir, link)); err != nil {
			return fmt.Errorf("standin: %w", err)
		}
	}
	if agentPW != password {
		agent := FormatToken(caPEM, "node", agentPW) + "\n"
		return writeFile(filepath.Join(serverDir, "agent-token"), []byte(agent), 0o600)
	}
	return nil
}
