package standin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The supervisor answers k3s's own routes on the https port, in front of
// the kube-apiserver's handler chain (as k3s serves both through one
// listener, pkg/server/handlers/router.go):
//
//	/ping                          open, "pong"
//	/cacerts                       open, the server CA PEM
//	/v1-k3s/readyz                 Basic auth (server or node user), "ok"
//	/v1-k3s/client-kubelet.crt     Basic auth + node name and password headers
//	/v1-k3s/server-bootstrap       Basic auth, user server only
//	/v1-k3s/apiservers             Basic auth: the servers' host:port list
//	/v1-k3s/config                 Basic auth, user server only: critical values
//	/v1-k3s/token                  Basic auth, user server only: PUT rotates the server token
//	/db/info                       Basic auth, user server only: etcd members
//
// Everything else goes to the kube-apiserver.
type supervisor struct {
	caPEM     []byte
	serverDir string
	mu        sync.RWMutex // guards serverPW, nodePW and bootstrap["cred/passwd"], which a token rotation changes
	serverPW  string
	nodePW    string
	bootstrap map[string][]byte // file name under server/ → contents
	clientCA  *keyPair
	httpsPort string            // every server's https port is taken to be this one
	critical  map[string]string // this server's critical configuration values
	etcd      atomic.Pointer[embed.Etcd]
	client    kubernetes.Interface // admin client of the local apiserver
	kv        *clientv3.Client     // in-process client of the local etcd member
	log       *slog.Logger
}

// bootstrapFiles are what a joining server takes from the cluster, as
// paths under server/ (k3s: the bootstrap data in the datastore).
var bootstrapFiles = []string{
	"tls/server-ca.crt", "tls/server-ca.key",
	"tls/client-ca.crt", "tls/client-ca.key",
	"tls/service.key", "cred/passwd",
}

func newSupervisor(serverDir string, caPEM []byte, clientCA *keyPair, client kubernetes.Interface, log *slog.Logger) (*supervisor, error) {
	passwd := filepath.Join(serverDir, "cred", "passwd")
	serverPW, err := passwdEntry(passwd, "server")
	if err != nil {
		return nil, err
	}
	nodePW, err := passwdEntry(passwd, "node")
	if err != nil {
		return nil, err
	}
	s := &supervisor{caPEM: caPEM, serverDir: serverDir, serverPW: serverPW, nodePW: nodePW, clientCA: clientCA, client: client, log: log,
		bootstrap: map[string][]byte{}}
	for _, f := range bootstrapFiles {
		b, err := os.ReadFile(filepath.Join(serverDir, f))
		if err != nil {
			return nil, fmt.Errorf("standin: bootstrap data: %w", err)
		}
		s.bootstrap[f] = b
	}
	return s, nil
}

// wrap puts the supervisor's routes in front of the apiserver's handler.
func (s *supervisor) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ping":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "pong")
		case "/cacerts":
			w.Header().Set("Content-Type", "text/plain")
			w.Write(s.caPEM)
		case "/v1-k3s/readyz":
			if _, ok := s.authenticate(w, r, "server", "node"); ok {
				w.Header().Set("Content-Type", "text/plain")
				fmt.Fprint(w, "ok")
			}
		case "/v1-k3s/client-kubelet.crt":
			if _, ok := s.authenticate(w, r, "server", "node"); ok {
				s.clientKubeletCert(w, r)
			}
		case "/v1-k3s/server-bootstrap":
			if _, ok := s.authenticate(w, r, "server"); ok {
				w.Header().Set("Content-Type", "application/json")
				s.mu.RLock()
				b, err := json.Marshal(s.bootstrap)
				s.mu.RUnlock()
				if err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				w.Write(b)
			}
		case "/v1-k3s/token":
			if _, ok := s.authenticate(w, r, "server"); ok {
				s.rotateToken(w, r)
			}
		case "/v1-k3s/apiservers":
			if _, ok := s.authenticate(w, r, "server", "node"); ok {
				s.apiServers(w)
			}
		case "/v1-k3s/config":
			if _, ok := s.authenticate(w, r, "server"); ok {
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(map[string]any{"critical": s.critical})
			}
		case "/db/info":
			if _, ok := s.authenticate(w, r, "server"); ok {
				s.dbInfo(w)
			}
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// authenticate checks the request's credentials — HTTP Basic against
// server/cred/passwd, or a bootstrap token as Bearer (k3s token create),
// which acts as the node user — and the user against roles; it answers
// 401 or 403 itself.
func (s *supervisor) authenticate(w http.ResponseWriter, r *http.Request, roles ...string) (string, bool) {
	user, ok := s.credentials(r)
	if !ok {
		s.log.Error(fmt.Sprintf("Failed to authenticate request from %s: invalid username/password combination", r.RemoteAddr))
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return "", false
	}
	for _, role := range roles {
		if role == user {
			return user, true
		}
	}
	http.Error(w, "Forbidden", http.StatusForbidden)
	return "", false
}

// credentials returns the authenticated user of r, if any.
func (s *supervisor) credentials(r *http.Request) (string, bool) {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if s.client != nil && validBootstrapToken(r.Context(), s.client, strings.TrimSpace(tok), time.Now()) {
			return "node", true
		}
		return "", false
	}
	user, pw, ok := r.BasicAuth()
	s.mu.RLock()
	want := map[string]string{"server": s.serverPW, "node": s.nodePW}[user]
	s.mu.RUnlock()
	if !ok || want == "" || subtle.ConstantTimeCompare([]byte(pw), []byte(want)) != 1 {
		return "", false
	}
	return user, true
}

// errNodePassword is k3s's refusal of a node name already registered with
// another node password.
var errNodePassword = errors.New("Node password rejected, duplicate hostname or contents of '/etc/rancher/node/password' may not match server node-passwd entry, try enabling a unique node name with the --with-node-id flag")

var nodeNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// clientKubeletCert checks the node password and issues the kubelet's
// client certificate (system:node:<name> in system:nodes), cert and key
// PEM in one answer.
func (s *supervisor) clientKubeletCert(w http.ResponseWriter, r *http.Request) {
	name, pw := r.Header.Get("k3s-Node-Name"), r.Header.Get("k3s-Node-Password")
	if !nodeNameRE.MatchString(name) || pw == "" {
		http.Error(w, "header k3s-Node-Name or k3s-Node-Password missing or invalid", http.StatusBadRequest)
		return
	}
	if err := checkNodePassword(r.Context(), s.client, name, pw); err != nil {
		if errors.Is(err, errNodePassword) {
			s.log.Error(fmt.Sprintf("Node password validation failed for '%s'", name))
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		s.log.Error("node password check failed", "node", name, "err", err)
		http.Error(w, "node password check failed", http.StatusServiceUnavailable)
		return
	}
	kp, err := s.clientCA.issue("system:node:"+name, []string{"system:nodes"}, nil, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	key, err := kp.keyPEM()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(append(append([]byte{}, kp.certPEM...), key...))
}

// dbMember is one etcd member as /db/info reports it.
type dbMember struct {
	ID         uint64   `json:"id"`
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
	IsLearner  bool     `json:"isLearner,omitempty"`
}

// apiServers lists the servers' https addresses: the host of each voting
// etcd member's peer URL (its node IP) with this server's https port (k3s
// reads the kubernetes Endpoints instead; with the loopback addresses of
// tests those are empty).
func (s *supervisor) apiServers(w http.ResponseWriter) {
	e := s.etcd.Load()
	if e == nil {
		http.Error(w, "etcd is not running", http.StatusServiceUnavailable)
		return
	}
	list := []string{}
	for _, m := range e.Server.Cluster().Members() {
		if m.IsLearner {
			continue
		}
		for _, p := range m.PeerURLs {
			if u, err := url.Parse(p); err == nil {
				list = append(list, net.JoinHostPort(u.Hostname(), s.httpsPort))
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(list)
}

func (s *supervisor) dbInfo(w http.ResponseWriter) {
	e := s.etcd.Load()
	if e == nil {
		http.Error(w, "etcd is not running", http.StatusServiceUnavailable)
		return
	}
	var members []dbMember
	for _, m := range e.Server.Cluster().Members() {
		members = append(members, dbMember{ID: uint64(m.ID), Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"members": members})
}

// nodePasswordSecret is the secret k3s keeps a node's password hash in.
func nodePasswordSecret(node string) string { return node + ".node-password.k3s" }

// checkNodePassword records the hash of a new node's password in
// kube-system/<node>.node-password.k3s, or checks pw against the recorded
// one; errNodePassword on a mismatch.
func checkNodePassword(ctx context.Context, client kubernetes.Interface, node, pw string) error {
	secrets := client.CoreV1().Secrets(metav1.NamespaceSystem)
	sec, err := secrets.Get(ctx, nodePasswordSecret(node), metav1.GetOptions{})
	if err == nil {
		salt, _ := hex.DecodeString(string(sec.Data["salt"]))
		if subtle.ConstantTimeCompare([]byte(hashPassword(salt, pw)), sec.Data["hash"]) != 1 {
			return errNodePassword
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return err
	}
	sec = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: nodePasswordSecret(node), Namespace: metav1.NamespaceSystem},
		Type:       "k3s.cattle.io/node-password",
		Data:       map[string][]byte{"salt": []byte(hex.EncodeToString(salt)), "hash": []byte(hashPassword(salt, pw))},
	}
	_, err = secrets.Create(ctx, sec, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return checkNodePassword(ctx, client, node, pw)
	}
	return err
}

func hashPassword(salt []byte, pw string) string {
	h := sha256.New()
	h.Write(salt)
	h.Write([]byte(pw))
	return hex.EncodeToString(h.Sum(nil))
}

// DefaultNodePasswordFile is where every k3s node keeps its node password.
const DefaultNodePasswordFile = "/etc/rancher/node/password"

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
