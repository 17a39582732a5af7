package k3semu

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// AdoptClusterPasswd runs once a server's datastore member runs, with
// the cluster's passwd file (cluster; empty when this server is the
// first to store it) and its own (local): a different server password
// given by --token is refused with [ErrTokenMismatch]; otherwise the
// cluster's passwords are taken (they were rotated while this server was
// down) and server/cred/passwd and server/token rewritten.
func AdoptClusterPasswd(f FS, serverDir, token string, caPEM, local, cluster []byte) error {
	if len(cluster) == 0 || bytes.Equal(cluster, local) {
		return nil
	}
	want, err := PasswdEntryFrom(cluster, "server")
	if err != nil {
		return fmt.Errorf("standin: cluster passwd: %w", err)
	}
	if token != "" {
		pw, err := pickPassword(f, token, "", "server", "")
		if err != nil {
			return err
		}
		if pw != want {
			return fmt.Errorf("failed to bootstrap cluster data: failed to reconcile with local datastore: %w", ErrTokenMismatch)
		}
	}
	return writeClusterPasswd(f, serverDir, cluster, caPEM)
}

// writeClusterPasswd writes the cluster's passwd file and server/token
// from it (the agent-token file or link is left as it is).
func writeClusterPasswd(f FS, serverDir string, passwd, caPEM []byte) error {
	serverPW, err := PasswdEntryFrom(passwd, "server")
	if err != nil {
		return fmt.Errorf("standin: cluster passwd: %w", err)
	}
	if err := f.WriteFile(path.Join(serverDir, "cred", "passwd"), passwd, 0o600); err != nil {
		return err
	}
	return f.WriteFile(path.Join(serverDir, "token"), []byte(FormatToken(caPEM, "server", serverPW)+"\n"), 0o600)
}

// SyncPasswd applies a change of the cluster's passwd file (a token
// rotation through any server) and logs it.
func (s *Supervisor) SyncPasswd(passwd []byte) {
	changed, err := s.applyPasswd(passwd)
	switch {
	case err != nil:
		s.log.Error("Failed to apply the rotated token", "err", err)
	case changed:
		s.log.Info("Server token updated from the cluster's bootstrap data")
	}
}

// applyPasswd makes passwd this server's: what its supervisor accepts
// and serves to joiners, and its files. It reports whether anything
// changed.
func (s *Supervisor) applyPasswd(passwd []byte) (bool, error) {
	serverPW, err := PasswdEntryFrom(passwd, "server")
	if err != nil {
		return false, fmt.Errorf("standin: cluster passwd: %w", err)
	}
	nodePW, err := PasswdEntryFrom(passwd, "node")
	if err != nil {
		return false, fmt.Errorf("standin: cluster passwd: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serverPW == serverPW && s.nodePW == nodePW {
		return false, nil
	}
	s.serverPW, s.nodePW = serverPW, nodePW
	s.bootstrap["cred/passwd"] = slices.Clone(passwd)
	return true, writeClusterPasswd(s.fs, s.serverDir, passwd, s.caPEM)
}

// tokenRotateRequest is the body of PUT /v1-k3s/token (k3s
// pkg/server/handlers: TokenRotateRequest).
type tokenRotateRequest struct {
	NewToken *string `json:"newToken,omitempty"`
}

// rotateToken replaces the server password as k3s's token handler does:
// the server user's password becomes the new token (random if empty), and
// the node user's too when it was the same; the new passwd is published
// to the cluster, from where every server applies it.
func (s *Supervisor) rotateToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var req tokenRotateRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	newPW := ""
	if req.NewToken != nil {
		newPW = *req.NewToken
	}
	if newPW == "" {
		b := make([]byte, 16)
		rand.Read(b)
		newPW = hex.EncodeToString(b)
	}
	if err := CheckServerToken(newPW); err != nil {
		s.log.Error("token error: " + err.Error())
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.mu.RLock()
	oldPW, nodePW := s.serverPW, s.nodePW
	s.mu.RUnlock()
	if nodePW == oldPW {
		nodePW = newPW
	}
	passwd := FormatPasswd(newPW, nodePW)
	if err := s.PublishPasswd(r.Context(), passwd); err != nil {
		s.log.Error("token rotation failed", "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if _, err := s.applyPasswd(passwd); err != nil {
		s.log.Error("token rotation failed", "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.log.Info("Server token rotated")
	w.WriteHeader(http.StatusOK)
}

// NodeBootstrapTokenAuthGroup is the extra group `k3s token create` gives
// its tokens (k3s pkg/kubeadm); the supervisor lets such a token act as
// an agent (the node user).
const NodeBootstrapTokenAuthGroup = "system:bootstrappers:k3s:default-node-token"

// validBootstrapToken reports whether token is a bootstrap token stored
// in the cluster that may authenticate now (kubeadm's Secret shape).
func validBootstrapToken(ctx context.Context, client kubernetes.Interface, token string, now time.Time) bool {
	m := bootstrapTokenRE.FindStringSubmatch(token)
	if len(m) != 3 {
		return false
	}
	sec, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, "bootstrap-token-"+m[1], metav1.GetOptions{})
	if err != nil || sec.Type != corev1.SecretType("bootstrap.kubernetes.io/token") {
		return false
	}
	if subtle.ConstantTimeCompare(sec.Data["token-secret"], []byte(m[2])) != 1 ||
		string(sec.Data["token-id"]) != m[1] ||
		string(sec.Data["usage-bootstrap-authentication"]) != "true" {
		return false
	}
	if exp := sec.Data["expiration"]; len(exp) > 0 {
		t, err := time.Parse(time.RFC3339, string(exp))
		if err != nil || !now.Before(t) {
			return false
		}
	}
	return slices.Contains(strings.Split(string(sec.Data["auth-extra-groups"]), ","), NodeBootstrapTokenAuthGroup)
}
