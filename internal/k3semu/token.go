package k3semu

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
)

// FormatToken returns k3s's full token: K10<sha256 of the CA PEM>::<user>:<password>.
func FormatToken(caPEM []byte, user, password string) string {
	sum := sha256.Sum256(caPEM)
	return "K10" + hex.EncodeToString(sum[:]) + "::" + user + ":" + password
}

// ServerPassword picks the server password as k3s does: the --token value
// (its password part, if it is a full token), else the server entry of
// server/cred/passwd, else a random 16-byte hex string.
func ServerPassword(f FS, token, passwdPath string) (string, error) {
	return pickPassword(f, token, passwdPath, "server", "")
}

// AgentPassword picks the agent (node user) password: the --agent-token
// value (its password part, if full), else the node entry of
// server/cred/passwd (a joiner's comes from the cluster's bootstrap
// data), else the server password.
func AgentPassword(f FS, agentToken, passwdPath, serverPW string) (string, error) {
	return pickPassword(f, agentToken, passwdPath, "node", serverPW)
}

func pickPassword(f FS, token, passwdPath, user, fallback string) (string, error) {
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
	if passwdPath == "" {
		// nothing to read
	} else if pw, err := PasswdEntry(f, passwdPath, user); err == nil {
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

// PasswdEntry returns user's password from k3s's passwd file
// (lines password,user,uid,groups); os.ErrNotExist if absent.
func PasswdEntry(f FS, path, user string) (string, error) {
	b, err := f.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("standin: passwd: %w", err)
	}
	pw, err := PasswdEntryFrom(b, user)
	if err != nil {
		return "", fmt.Errorf("standin: passwd %s: %w", path, err)
	}
	return pw, nil
}

// PasswdEntryFrom is PasswdEntry on the file's contents.
func PasswdEntryFrom(passwd []byte, user string) (string, error) {
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

// WriteTokens writes server/cred/passwd (users server and node),
// server/token (0600) and its node-token link, and server/agent-token: a
// link to token when the agent password is the server's, else its own
// K10<hash>::node:<agent password> file (0600).
func WriteTokens(f FS, serverDir string, caPEM []byte, password, agentPW string) error {
	if err := f.WriteFile(path.Join(serverDir, "cred", "passwd"), FormatPasswd(password, agentPW), 0o600); err != nil {
		return err
	}
	token := FormatToken(caPEM, "server", password) + "\n"
	if err := f.WriteFile(path.Join(serverDir, "token"), []byte(token), 0o600); err != nil {
		return err
	}
	links := []string{"node-token", "agent-token"}
	if agentPW != password {
		links = links[:1]
	}
	if err := f.Remove(path.Join(serverDir, "node-token"), path.Join(serverDir, "agent-token")); err != nil {
		return err
	}
	for _, link := range links {
		if err := f.Symlink(path.Join(serverDir, "token"), path.Join(serverDir, link)); err != nil {
			return err
		}
	}
	if agentPW != password {
		agent := FormatToken(caPEM, "node", agentPW) + "\n"
		return f.WriteFile(path.Join(serverDir, "agent-token"), []byte(agent), 0o600)
	}
	return nil
}

// FormatPasswd is server/cred/passwd with the server and node users.
func FormatPasswd(serverPW, agentPW string) []byte {
	return fmt.Appendf(nil, "%s,server,server,k3s:server\n%s,node,node,k3s:agent\n", serverPW, agentPW)
}

// ErrTokenMismatch: a server restarted with another --token than its
// cluster's.
var ErrTokenMismatch = errors.New("bootstrap data already found and encrypted with different token")

// ErrServerTokenFormat is k3s's refusal of a bootstrap token (id.secret)
// used as a server token (k3s#7313, PR #7389).
var ErrServerTokenFormat = errors.New("failed to normalize server token; must be in format K10<CA-HASH>::<USERNAME>:<PASSWORD> or <PASSWORD>")

var bootstrapTokenRE = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)

// IsBootstrapToken reports whether s has the form [a-z0-9]{6}.[a-z0-9]{16}.
func IsBootstrapToken(s string) bool { return bootstrapTokenRE.MatchString(s) }

// CheckServerToken refuses a server --token whose credentials (the whole
// short token, or the part after :: of a full one) are a bootstrap token.
func CheckServerToken(token string) error {
	token = strings.TrimSpace(token)
	creds := token
	if _, rest, ok := strings.Cut(token, "::"); ok && strings.HasPrefix(token, "K10") {
		creds = rest
	}
	if IsBootstrapToken(creds) {
		return ErrServerTokenFormat
	}
	return nil
}
