package k3slite

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

// serverPassword picks the server password as k3s does: the --token value
// (its password part, if it is a full token), else the server entry of
// server/cred/passwd, else a random 16-byte hex string.
func serverPassword(f hostFS, token, passwdPath string) (string, error) {
	return pickPassword(f, token, passwdPath, "server", "")
}

// agentPassword picks the agent (node user) password: the --agent-token
// value (its password part, if full), else the node entry of
// server/cred/passwd (a joiner's comes from the cluster's bootstrap
// data), else the server password.
func agentPassword(f hostFS, agentToken, passwdPath, serverPW string) (string, error) {
	return pickPassword(f, agentToken, passwdPath, "node", serverPW)
}

func pickPassword(f hostFS, token, passwdPath, user, fallback string) (string, error) {
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
	} else if pw, err := passwdEntry(f, passwdPath, user); err == nil {
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
func passwdEntry(f hostFS, path, user string) (string, error) {
	b, err := f.readFile(path)
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
func writeTokens(f hostFS, serverDir string, caPEM []byte, password, agentPW string) error {
	if err := f.writeFile(path.Join(serverDir, "cred", "passwd"), formatPasswd(password, agentPW), 0o600); err != nil {
		return err
	}
	token := FormatToken(caPEM, "server", password) + "\n"
	if err := f.writeFile(path.Join(serverDir, "token"), []byte(token), 0o600); err != nil {
		return err
	}
	links := []string{"node-token", "agent-token"}
	if agentPW != password {
		links = links[:1]
	}
	if err := f.remove(path.Join(serverDir, "node-token"), path.Join(serverDir, "agent-token")); err != nil {
		return err
	}
	for _, link := range links {
		if err := f.symlink(path.Join(serverDir, "token"), path.Join(serverDir, link)); err != nil {
			return err
		}
	}
	if agentPW != password {
		agent := FormatToken(caPEM, "node", agentPW) + "\n"
		return f.writeFile(path.Join(serverDir, "agent-token"), []byte(agent), 0o600)
	}
	return nil
}

// formatPasswd is server/cred/passwd with the server and node users.
func formatPasswd(serverPW, agentPW string) []byte {
	return fmt.Appendf(nil, "%s,server,server,k3s:server\n%s,node,node,k3s:agent\n", serverPW, agentPW)
}

// errTokenMismatch: a server restarted with another --token than its
// cluster's.
var errTokenMismatch = errors.New("bootstrap data already found and encrypted with different token")

// errServerTokenFormat is k3s's refusal of a bootstrap token (id.secret)
// used as a server token (k3s#7313, PR #7389).
var errServerTokenFormat = errors.New("failed to normalize server token; must be in format K10<CA-HASH>::<USERNAME>:<PASSWORD> or <PASSWORD>")

var bootstrapTokenRE = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)

// isBootstrapToken reports whether s has the form [a-z0-9]{6}.[a-z0-9]{16}.
func isBootstrapToken(s string) bool { return bootstrapTokenRE.MatchString(s) }

// checkServerToken refuses a server --token whose credentials (the whole
// short token, or the part after :: of a full one) are a bootstrap token.
func checkServerToken(token string) error {
	token = strings.TrimSpace(token)
	creds := token
	if _, rest, ok := strings.Cut(token, "::"); ok && strings.HasPrefix(token, "K10") {
		creds = rest
	}
	if isBootstrapToken(creds) {
		return errServerTokenFormat
	}
	return nil
}
