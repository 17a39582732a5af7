package standin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// clusterPasswdKey is the etcd key holding the cluster's passwd file (the
// server and node passwords). k3s keeps its bootstrap data in the
// datastore, encrypted with the server token; the stand-in keeps only
// this part there, in the clear, so that a token rotation reaches every
// server: each one's supervisor watches the key.
const clusterPasswdKey = "/k3s-standin/bootstrap/passwd"

// errTokenMismatch is k3s's refusal to start a server whose --token is not
// the cluster's (e.g. the old one after `k3s token rotate`); k3s
// pkg/cluster/bootstrap.go.
var errTokenMismatch = errors.New("bootstrap data already found and encrypted with different token")

// formatPasswd is server/cred/passwd with the server and node users.
func formatPasswd(serverPW, agentPW string) []byte {
	return fmt.Appendf(nil, "%s,server,server,k3s:server\n%s,node,node,k3s:agent\n", serverPW, agentPW)
}

// reconcilePasswd runs once etcd is up: the first server of a cluster
// stores its passwd file in etcd; a later start (or a joiner) compares
// its own with the cluster's. A different server password given by
// --token is refused; otherwise the cluster's passwords are taken (they
// were rotated while this server was down) and server/cred/passwd and
// server/token rewritten.
func reconcilePasswd(ctx context.Context, kv *clientv3.Client, serverDir, token string, caPEM []byte) error {
	local, err := os.ReadFile(filepath.Join(serverDir, "cred", "passwd"))
	if err != nil {
		return fmt.Errorf("standin: passwd: %w", err)
	}
	resp, err := kv.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(clusterPasswdKey), "=", 0)).
		Then(clientv3.OpPut(clusterPasswdKey, string(local))).
		Else(clientv3.OpGet(clusterPasswdKey)).
		Commit()
	if err != nil {
		return fmt.Errorf("standin: cluster passwd: %w", err)
	}
	if resp.Succeeded {
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return errors.New("standin: cluster passwd: key vanished")
	}
	cluster := kvs[0].Value
	if bytes.Equal(cluster, local) {
		return nil
	}
	clusterPW, err := passwdEntryFrom(cluster, "server")
	if err != nil {
		return fmt.Errorf("standin: cluster passwd: %w", err)
	}
	if token != "" {
		pw, err := pickPassword(token, "", "server", "")
		if err != nil {
			return err
		}
		if pw != clusterPW {
			return fmt.Errorf("failed to bootstrap cluster data: failed to reconcile with local datastore: %w", errTokenMismatch)
		}
	}
	return writeClusterPasswd(serverDir, cluster, caPEM)
}

// writeClusterPasswd writes the cluster's passwd file and server/token
// from it (the agent-token file or link is left as it is).
func writeClusterPasswd(serverDir string, passwd, caPEM []byte) error {
	serverPW, err := passwdEntryFrom(passwd, "server")
	if err != nil {
		return fmt.Errorf("standin: cluster passwd: %w", err)
	}
	if err := writeFile(filepath.Join(serverDir, "cred", "passwd"), passwd, 0o600); err != nil {
		return err
	}
	return writeFile(filepath.Join(serverDir, "token"), []byte(FormatToken(caPEM, "server", serverPW)+"\n"), 0o600)
}

// applyPasswd makes passwd this server's: what its supervisor accepts and
// serves to joiners, and its files.
func (s *supervisor) applyPasswd(passwd []byte) error {
	serverPW, err := passwdEntryFrom(passwd, "server")
	if err != nil {
		return fmt.Errorf("standin: cluster passwd: %w", err)
	}
	nodePW, err := passwdEntryFrom(passwd, "node")
	if err != nil {
		return fmt.Errorf("standin: cluster passwd: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serverPW == serverPW && s.nodePW == nodePW {
		return nil
	}
	s.serverPW, s.nodePW = serverPW, nodePW
	s.bootstrap["cred/passwd"] = passwd
	return writeClusterPasswd(s.serverDir, passwd, s.caPEM)
}

// watchPasswd applies every change of the cluster's passwd (a token
// rotation through any server) until ctx ends.
func (s *supervisor) watchPasswd(ctx context.Context) {
	for wr := range s.kv.Watch(ctx, clusterPasswdKey) {
		for _, ev := range wr.Events {
			if ev.Type != clientv3.EventTypePut {
				continue
			}
			if err := s.applyPasswd(ev.Kv.Value); err != nil {
				s.log.Error("Failed to apply the rotated token", "err", err)
			} else {
				s.log.Info("Server token updated from the cluster's bootstrap data")
			}
		}
	}
}

// tokenRotateRequest is the body of PUT /v1-k3s/token (k3s
// pkg/server/handlers: TokenRotateRequest).
type tokenRotateRequest struct {
	NewToken *string `json:"newToken,omitempty"`
}

// rotateToken replaces the server password as k3s's token handler does:
// the server user's password becomes the new token (random if empty), and
// the node user's too when it was the same; the new passwd goes to etcd,
// from where every server applies it.
func (s *supervisor) rotateToken(w http.ResponseWriter, r *http.Request) {
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
		if _, err := rand.Read(b); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		newPW = hex.EncodeToString(b)
	}
	if err := checkServerToken(newPW); err != nil {
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
	passwd := formatPasswd(newPW, nodePW)
	if _, err := s.kv.Put(r.Context(), clusterPasswdKey, string(passwd)); err != nil {
		s.log.Error("token rotation failed", "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if err := s.applyPasswd(passwd); err != nil {
		s.log.Error("token rotation failed", "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.log.Info("Server token rotated")
	w.WriteHeader(http.StatusOK)
}
