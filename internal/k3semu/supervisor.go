package k3semu

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
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Supervisor answers k3s's own routes on a server's https port, in front
// of the Kubernetes API (as k3s serves both through one listener,
// pkg/server/handlers/router.go):
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
// Everything else goes to the handler [Supervisor.Wrap] wraps. Make one
// with [NewSupervisor] and set its exported fields before it serves.
type Supervisor struct {
	// HTTPSPort is every server's https port, as /v1-k3s/apiservers
	// reports it.
	HTTPSPort string
	// Critical are this server's critical configuration values.
	Critical map[string]string
	// Client is an admin client of the local API; the supervisor checks
	// bootstrap tokens and node passwords with it.
	Client kubernetes.Interface
	// Members lists the cluster's etcd members (the substrate's: the
	// embedded etcd's or the sandbox's in-memory datastore).
	Members func() ([]DBMember, error)
	// DBCluster, when set, is sent in /db/info's "cluster" field: which
	// datastore of the sandbox a joiner becomes a member of.
	DBCluster string
	// PublishPasswd stores a rotated passwd file where every server of
	// the cluster finds it (k3s: the bootstrap data in the datastore).
	PublishPasswd func(ctx context.Context, passwd []byte) error

	caPEM     []byte
	serverDir string
	fs        FS
	mu        sync.RWMutex // guards serverPW, nodePW and bootstrap["cred/passwd"], which a token rotation changes
	serverPW  string
	nodePW    string
	bootstrap map[string][]byte // file name under server/ → contents
	clientCA  *KeyPair
	log       *slog.Logger
}

// BootstrapFiles are what a joining server takes from the cluster, as
// paths under server/ (k3s: the bootstrap data in the datastore).
var BootstrapFiles = []string{
	"tls/server-ca.crt", "tls/server-ca.key",
	"tls/client-ca.crt", "tls/client-ca.key",
	"tls/service.key", "cred/passwd",
}

// NewSupervisor reads the server's bootstrap files and passwords from
// serverDir; clientCA signs the kubelets' client certificates.
func NewSupervisor(f FS, serverDir string, caPEM []byte, clientCA *KeyPair, log *slog.Logger) (*Supervisor, error) {
	passwd := path.Join(serverDir, "cred", "passwd")
	serverPW, err := PasswdEntry(f, passwd, "server")
	if err != nil {
		return nil, err
	}
	nodePW, err := PasswdEntry(f, passwd, "node")
	if err != nil {
		return nil, err
	}
	s := &Supervisor{caPEM: caPEM, serverDir: serverDir, fs: f, serverPW: serverPW, nodePW: nodePW, clientCA: clientCA, log: log,
		bootstrap: map[string][]byte{}}
	for _, name := range BootstrapFiles {
		b, err := f.ReadFile(path.Join(serverDir, name))
		if err != nil {
			return nil, fmt.Errorf("standin: bootstrap data: %w", err)
		}
		s.bootstrap[name] = b
	}
	return s, nil
}

// Wrap puts the supervisor's routes in front of the API's handler.
func (s *Supervisor) Wrap(next http.Handler) http.Handler {
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
				json.NewEncoder(w).Encode(map[string]any{"critical": s.Critical})
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
// the passwd users, or a bootstrap token as Bearer, which acts as the
// node user — and the user against roles; it answers 401 or 403 itself.
func (s *Supervisor) authenticate(w http.ResponseWriter, r *http.Request, roles ...string) (string, bool) {
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

func (s *Supervisor) credentials(r *http.Request) (string, bool) {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if s.Client != nil && validBootstrapToken(r.Context(), s.Client, strings.TrimSpace(tok), time.Now()) {
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
func (s *Supervisor) clientKubeletCert(w http.ResponseWriter, r *http.Request) {
	name, pw := r.Header.Get("k3s-Node-Name"), r.Header.Get("k3s-Node-Password")
	if !nodeNameRE.MatchString(name) || pw == "" {
		http.Error(w, "header k3s-Node-Name or k3s-Node-Password missing or invalid", http.StatusBadRequest)
		return
	}
	if err := CheckNodePassword(r.Context(), s.Client, name, pw); err != nil {
		if errors.Is(err, errNodePassword) {
			s.log.Error(fmt.Sprintf("Node password validation failed for '%s'", name))
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		s.log.Error("node password check failed", "node", name, "err", err)
		http.Error(w, "node password check failed", http.StatusServiceUnavailable)
		return
	}
	kp, err := s.clientCA.Issue("system:node:"+name, []string{"system:nodes"}, nil, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	key, err := kp.KeyPEM()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(append(append([]byte{}, kp.CertPEM...), key...))
}

// DBMember is one etcd member as /db/info reports it.
type DBMember struct {
	ID         uint64   `json:"id"`
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
	IsLearner  bool     `json:"isLearner,omitempty"`
}

// apiServers lists the servers' https addresses: the host of each voting
// etcd member's peer URL (its node IP) with this server's https port (k3s
// reads the kubernetes Endpoints instead; with the loopback addresses of
// tests those are empty). A member not started yet has no name.
func (s *Supervisor) apiServers(w http.ResponseWriter) {
	members, err := s.Members()
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	list := []string{}
	for _, m := range members {
		if m.IsLearner || m.Name == "" || len(m.PeerURLs) == 0 {
			continue
		}
		if u, err := url.Parse(m.PeerURLs[0]); err == nil {
			list = append(list, net.JoinHostPort(u.Hostname(), s.HTTPSPort))
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(list)
}

func (s *Supervisor) dbInfo(w http.ResponseWriter) {
	members, err := s.Members()
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	info := map[string]any{"members": members}
	if s.DBCluster != "" {
		// the sandbox's own: which of its datastores a joiner becomes a
		// member of (k3s's joiner dials the members' etcd instead).
		info["cluster"] = s.DBCluster
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(info)
}

// NodePasswordSecret names the Secret k3s keeps a node's password hash in.
func NodePasswordSecret(node string) string { return node + ".node-password.k3s" }

// CheckNodePassword records the hash of a new node's password in
// kube-system/<node>.node-password.k3s, or checks pw against the recorded
// one; errNodePassword on a mismatch.
func CheckNodePassword(ctx context.Context, client kubernetes.Interface, node, pw string) error {
	secrets := client.CoreV1().Secrets(metav1.NamespaceSystem)
	sec, err := secrets.Get(ctx, NodePasswordSecret(node), metav1.GetOptions{})
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
	rand.Read(salt)
	sec = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: NodePasswordSecret(node), Namespace: metav1.NamespaceSystem},
		Type:       "k3s.cattle.io/node-password",
		Data:       map[string][]byte{"salt": []byte(hex.EncodeToString(salt)), "hash": []byte(hashPassword(salt, pw))},
	}
	_, err = secrets.Create(ctx, sec, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return CheckNodePassword(ctx, client, node, pw)
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
