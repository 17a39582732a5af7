package k3slite

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/openctl/openctl/internal/k3semu"
	"github.com/openctl/openctl/sandbox/kubelite"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// dbMarker is what server/db holds in the sandbox: which of the
// Network's datastores this server's member belongs to (k3s: etcd's
// data directory).
type dbMarker struct {
	Cluster string `json:"cluster"`
	Member  uint64 `json:"member"`
}

const dbMarkerFile = "db/etcd/data/member/k3slite.json"

// etcdDataExists reports whether server/db/etcd holds a member's data:
// then k3s ignores --cluster-init and --server and restarts that member.
func etcdDataExists(f hostFS, serverDir string) bool {
	return f.Exists(path.Join(serverDir, "db", "etcd", "data", "member"))
}

// memberName returns the member name kept in server/db/etcd/name, or
// makes one: <node>-<8 hex>.
func memberName(f hostFS, serverDir, node string) (string, error) {
	p := path.Join(serverDir, "db", "etcd", "name")
	if b, err := f.ReadFile(p); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	name := node + "-" + k3semu.CommitFor(fmt.Sprint(node, time.Now().UnixNano()))
	return name, f.WriteFile(p, []byte(name+"\n"), 0o600)
}

// pickNodeIP returns --node-ip, else the bind address, else the host's
// first address not on lo, else 127.0.0.1.
func pickNodeIP(h *vmhost.Host, nodeIP, bindAddress string) (net.IP, error) {
	if ip, err := k3semu.NodeIPFlag(nodeIP, bindAddress); ip != nil || err != nil {
		return ip, err
	}
	if a, ok := primaryAddr(h); ok {
		return net.IP(a.AsSlice()), nil
	}
	return net.IPv4(127, 0, 0, 1).To4(), nil
}

// primaryAddr is the host's first IPv4 address on an interface other
// than lo.
func primaryAddr(h *vmhost.Host) (netip.Addr, bool) {
	for _, a := range h.Addresses() {
		if a.Interface != "lo" && a.Prefix.Addr().Is4() {
			return a.Prefix.Addr(), true
		}
	}
	return netip.Addr{}, false
}

// runServer runs `k3s server` until ctx ends, as the stand-in's RunServer
// does, with the Network's datastore in place of etcd and kubelite in
// place of the kube-apiserver. It returns ctx's error after a clean
// shutdown; any other error is fatal.
func (n *Network) runServer(ctx context.Context, c *vmhost.Call, cfg k3semu.ServerConfig, log *slog.Logger) error {
	f := callFS(c)
	v := cfg.Version
	log.Info(fmt.Sprintf("Starting k3s %s (%s)", v.K3s, v.Short()))
	for _, fl := range cfg.Ignored {
		log.Warn("flag not implemented by the k3s stand-in; ignored", "flag", "--"+fl)
	}
	nodeIP, err := pickNodeIP(c.Host, cfg.NodeIP, cfg.BindAddress)
	if err != nil {
		return err
	}
	listenHost := nodeIP.String()
	if ip := net.ParseIP(cfg.BindAddress); ip != nil && !ip.IsUnspecified() {
		listenHost = cfg.BindAddress
	}
	port := strconv.Itoa(cfg.HTTPSListenPort)
	prep, err := k3semu.PrepareServer(ctx, f, cfg, nodeIP, etcdDataExists(f, path.Join(cfg.DataDir, "server")), log)
	if err != nil {
		return err
	}
	serverDir, serverCA, clientCA, serving, admin, joining, sc := prep.Dir, prep.ServerCA, prep.ClientCA, prep.Serving, prep.Admin, prep.Joining, prep.Supervisor
	nodePW, err := nodePassword(f, cfg.NodePasswordFile)
	if err != nil {
		return err
	}

	// The datastore: the Network's stand-in for etcd.
	cl, m, err := n.datastore(ctx, f, cfg, serverDir, nodeIP, joining, sc, log)
	if sc != nil {
		sc.CloseIdleConnections()
	}
	if err != nil {
		return err
	}
	defer n.stop(m)
	log.Info("ETCD server is now running")
	if err := n.reconcilePasswd(f, cl, serverDir, cfg.Token, serverCA.CertPEM); err != nil {
		return fmt.Errorf("starting kubernetes: preparing server: %w", err)
	}

	// The API, behind the supervisor, on <node-ip>:<port>.
	sup, err := k3semu.NewSupervisor(f, serverDir, serverCA.CertPEM, clientCA, log)
	if err != nil {
		return err
	}
	sup.HTTPSPort, sup.Critical, sup.DBCluster = port, cfg.Critical, cl.id
	sup.Members = func() ([]k3semu.DBMember, error) { return n.dbMembers(cl), nil }
	sup.PublishPasswd = func(_ context.Context, passwd []byte) error {
		n.setClusterPasswd(cl, passwd)
		return nil
	}
	clientPool := x509.NewCertPool()
	clientPool.AddCert(clientCA.Cert)
	api := kubelite.NewHandler(cl.store, kubelite.Options{
		ClientCAs: clientPool,
		Token:     func(string) (string, []string, bool) { return "", nil, false },
		Version:   v.K3s,
	})
	servingKey := serving.TLSCertificate()
	// The server's own client of its API (admin), made before it serves:
	// the supervisor checks bootstrap tokens and node passwords with it.
	apiHost := net.JoinHostPort(listenHost, port)
	keyPEM, err := admin.KeyPEM()
	if err != nil {
		return err
	}
	restCfg := &rest.Config{Host: "https://" + apiHost, QPS: 200, Burst: 400, Timeout: 10 * time.Second,
		TLSClientConfig: rest.TLSClientConfig{CAData: serverCA.CertPEM, CertData: admin.CertPEM, KeyData: keyPEM}}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("standin: client: %w", err)
	}
	sup.Client = client
	ln, err := net.Listen("tcp", apiHost)
	if err != nil {
		return fmt.Errorf("standin: kube-apiserver: %w", err)
	}
	srv := &http.Server{
		Handler: sup.Wrap(n.quorumGuard(cl, api)),
		// Client certificates are checked by kubelite, as the apiserver's
		// authenticator does: one from another CA is a 401, not a failed
		// handshake.
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{servingKey},
			ClientAuth:   tls.RequestClientCert,
			MinVersion:   tls.VersionTLS12,
		},
		ReadHeaderTimeout: 10 * time.Second,
	}
	srv.ErrorLog = discardLogger()
	served := make(chan struct{})
	go func() { defer close(served); srv.ServeTLS(ln, "", "") }()
	n.listening(c.Host, ln.Addr().String(), true)
	defer n.listening(c.Host, ln.Addr().String(), false)
	// On the way out the loops stop first — kube-vip lets the VIP go and
	// releases its Lease through this API — then the API.
	var wg sync.WaitGroup
	sctx, stopAll := context.WithCancel(ctx)
	defer func() {
		stopAll()
		wg.Wait()
		srv.Close()
		<-served
	}()
	log.Info("Running kube-apiserver " + fmt.Sprint([]string{"--advertise-address=" + nodeIP.String(), "--secure-port=" + port}))

	if err := waitAPIReady(sctx, client, m); err != nil {
		return err
	}
	log.Info("Kube API server is now running")
	if err := ensureSystemObjects(sctx, client); err != nil {
		return err
	}
	na, err := k3semu.RegisterServer(sctx, client, cfg, nodeIP, nodePW, log)
	if err != nil {
		return err
	}
	c.NotifyReady()

	wg.Add(3)
	go func() { defer wg.Done(); na.RunPods(sctx, n.opts.PodSyncInterval) }()
	go func() { defer wg.Done(); n.watchNodes(sctx, client, cl, m, log) }()
	go func() {
		defer wg.Done()
		n.watchManifests(sctx, c.Host, path.Join(serverDir, "manifests"), cfg.NodeName, nodeIP, apiHost, client, log)
	}()

	// --standin-node-monitor-grace-period, when given, wins over the
	// Network's.
	grace := n.opts.NodeMonitorGracePeriod
	if cfg.NodeMonitorGracePeriod != k3semu.DefaultNodeMonitorGracePeriod {
		grace = cfg.NodeMonitorGracePeriod
	}
	heartbeat := time.NewTicker(n.opts.HeartbeatInterval)
	defer heartbeat.Stop()
	syncT := time.NewTicker(n.opts.PodSyncInterval)
	defer syncT.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Info("Shutting down k3s")
			return ctx.Err()
		case <-n.ctx.Done():
			log.Info("Shutting down k3s")
			return context.Canceled
		case <-m.removed:
			log.Error("the member has been permanently removed from the cluster")
			return errEtcdStopped
		case <-syncT.C:
			sup.SyncPasswd(n.clusterPasswd(cl))
		case <-heartbeat.C:
			if err := na.Heartbeat(sctx); err != nil && sctx.Err() == nil {
				log.Warn("node heartbeat failed", "err", err)
			}
			if err := k3semu.NodeLifecycle(sctx, client, grace); err != nil && sctx.Err() == nil {
				log.Warn("node lifecycle failed", "err", err)
			}
		}
	}
}

// datastore finds or makes this server's member: a new cluster (first
// start without --server), the member on disk (a restart), or a learner
// of the cluster it joins, promoted after the Network's PromoteDelay.
func (n *Network) datastore(ctx context.Context, f hostFS, cfg k3semu.ServerConfig, serverDir string, nodeIP net.IP, joining bool, sc *k3semu.SupervisorClient, log *slog.Logger) (*cluster, *member, error) {
	markerPath := path.Join(serverDir, dbMarkerFile)
	var cl *cluster
	var m *member
	switch {
	case etcdDataExists(f, serverDir):
		b, err := f.ReadFile(markerPath)
		if err != nil {
			return nil, nil, fmt.Errorf("standin: etcd: %w", err)
		}
		var mk dbMarker
		if err := json.Unmarshal(b, &mk); err != nil {
			return nil, nil, fmt.Errorf("standin: etcd: %s: %w", markerPath, err)
		}
		if cl, m, err = n.lookup(mk.Cluster, mk.Member); err != nil {
			if errors.Is(err, errEtcdStopped) {
				log.Error("the member has been permanently removed from the cluster")
			}
			return nil, nil, err
		}
		name, _ := memberName(f, serverDir, cfg.NodeName)
		log.Info("Starting etcd", "name", name, "data-dir", path.Join(serverDir, "db", "etcd", "data"))
	case joining:
		members, id, err := sc.DBInfo(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("starting kubernetes: preparing server: start managed database: joining etcd cluster: %w", err)
		}
		if !hasVoter(members) {
			return nil, nil, fmt.Errorf("starting kubernetes: preparing server: start managed database: joining etcd cluster: %s/db/info: no voting etcd member", sc.URL())
		}
		if cl, _, err = n.lookup(id, 0); err != nil {
			return nil, nil, fmt.Errorf("starting kubernetes: preparing server: start managed database: joining etcd cluster: %w", err)
		}
		name, err := memberName(f, serverDir, cfg.NodeName)
		if err != nil {
			return nil, nil, err
		}
		if m, err = n.addLearner(cl, name, cfg.NodeName, nodeIP.String(), log); err != nil {
			return nil, nil, fmt.Errorf("starting kubernetes: preparing server: start managed database: joining etcd cluster: %w", err)
		}
		log.Info("Starting etcd", "name", name, "data-dir", path.Join(serverDir, "db", "etcd", "data"))
	default:
		name, err := memberName(f, serverDir, cfg.NodeName)
		if err != nil {
			return nil, nil, err
		}
		passwd, err := f.ReadFile(path.Join(serverDir, "cred", "passwd"))
		if err != nil {
			return nil, nil, fmt.Errorf("standin: passwd: %w", err)
		}
		if cl, m, err = n.newCluster(name, cfg.NodeName, nodeIP.String(), passwd); err != nil {
			return nil, nil, err
		}
		log.Info("Starting etcd", "name", name, "data-dir", path.Join(serverDir, "db", "etcd", "data"))
	}
	mk, _ := json.Marshal(dbMarker{Cluster: cl.id, Member: m.id})
	if err := f.WriteFile(markerPath, mk, 0o600); err != nil {
		return nil, nil, err
	}
	if err := n.start(cl, m, log); err != nil {
		return nil, nil, err
	}
	if n.isLearner(m) {
		log.Info("Waiting for the etcd learner to be promoted to a voting member")
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for n.isLearner(m) {
			select {
			case <-ctx.Done():
				n.stop(m)
				return nil, nil, ctx.Err()
			case <-n.ctx.Done():
				n.stop(m)
				return nil, nil, context.Canceled
			case <-m.removed:
				n.stop(m)
				return nil, nil, errEtcdStopped
			case <-t.C:
			}
		}
	}
	return cl, m, nil
}

func hasVoter(members []k3semu.DBMember) bool {
	for _, m := range members {
		if !m.IsLearner {
			return true
		}
	}
	return false
}

// quorumGuard fails API requests while the cluster's datastore has no
// quorum, as an apiserver over etcd without one does.
func (n *Network) quorumGuard(c *cluster, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !n.quorum(c) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"etcdserver: request timed out","code":500}`)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// waitAPIReady polls /readyz until it answers ok.
func waitAPIReady(ctx context.Context, client kubernetes.Interface, m *member) error {
	delay := 20 * time.Millisecond
	for {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.removed:
			return errEtcdStopped
		case <-time.After(delay):
		}
		delay = min(delay*2, time.Second)
	}
}

func discardLogger() *stdlog.Logger { return stdlog.New(io.Discard, "", 0) }
