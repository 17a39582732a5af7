package standin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openctl/openctl/internal/k3semu"
)

// RunServer runs `k3s server` until ctx ends: it writes the k3s files,
// starts an embedded etcd member (a new cluster with --cluster-init or
// alone, a learner of an existing one with --server, or the existing data
// on a restart) and the real kube-apiserver behind the supervisor routes,
// registers this node, signals READY=1 on $NOTIFY_SOCKET and keeps the
// node's heartbeat and pods. It returns ctx's error after a clean
// shutdown; any other error is fatal, as in k3s.
func RunServer(ctx context.Context, cfg k3semu.ServerConfig, log *slog.Logger) error {
	v := cfg.Version
	// The embedded kube-apiserver sends READY=1 itself as soon as it
	// listens, before /readyz is ok and before the node is registered;
	// keep the socket for ourselves, as k3s signals only when all is up.
	notifySocket := os.Getenv("NOTIFY_SOCKET")
	os.Unsetenv("NOTIFY_SOCKET")
	log.Info(fmt.Sprintf("Starting k3s %s (%s)", v.K3s, v.Short()))
	for _, f := range cfg.Ignored {
		log.Warn("flag not implemented by the k3s stand-in; ignored", "flag", "--"+f)
	}
	nodeIP, err := pickNodeIP(cfg.NodeIP, cfg.BindAddress)
	if err != nil {
		return err
	}
	prep, err := k3semu.PrepareServer(ctx, osFS, cfg, nodeIP, etcdDataExists(filepath.Join(cfg.DataDir, "server")), log)
	if err != nil {
		return err
	}
	serverDir, tlsDir, serverCA, clientCA, joining, sc := prep.Dir, prep.TLSDir, prep.ServerCA, prep.ClientCA, prep.Joining, prep.Supervisor
	adminKubeconfig := filepath.Join(serverDir, "cred", "admin.kubeconfig")
	nodePW, err := nodePassword(cfg.NodePasswordFile)
	if err != nil {
		return err
	}

	// etcd.
	var etcd *embed.Etcd
	if joining {
		j, err := joinEtcd(ctx, sc, cfg, serverDir, nodeIP, log)
		if err != nil {
			return fmt.Errorf("starting kubernetes: preparing server: start managed database: joining etcd cluster: %w", err)
		}
		defer j.client.Close()
		if etcd, err = startEtcd(ctx, cfg, serverDir, nodeIP, j.initialCluster, log); err != nil {
			return err
		}
		defer etcd.Close()
		log.Info("Waiting for the etcd learner to be promoted to a voting member")
		if err := j.waitPromoted(ctx, etcd.Err()); err != nil {
			return err
		}
		j.client.Close()
	} else {
		if etcd, err = startEtcd(ctx, cfg, serverDir, nodeIP, "", log); err != nil {
			return err
		}
		defer etcd.Close()
	}
	log.Info("ETCD server is now running")
	kv := v3client.New(etcd.Server)
	defer kv.Close()
	if err := reconcilePasswd(ctx, kv, serverDir, cfg.Token, serverCA.CertPEM); err != nil {
		return fmt.Errorf("starting kubernetes: preparing server: %w", err)
	}
	go manageLearners(ctx, etcd, log)

	// kube-apiserver, behind the supervisor.
	restCfg, err := clientcmd.BuildConfigFromFlags("", adminKubeconfig)
	if err != nil {
		return fmt.Errorf("standin: admin kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("standin: client: %w", err)
	}
	sup, err := k3semu.NewSupervisor(osFS, serverDir, serverCA.CertPEM, clientCA, log)
	if err != nil {
		return err
	}
	sup.Client, sup.HTTPSPort, sup.Critical = client, strconv.Itoa(cfg.HTTPSListenPort), cfg.Critical
	sup.Members = func() ([]k3semu.DBMember, error) { return etcdMembers(etcd), nil }
	sup.PublishPasswd = func(ctx context.Context, passwd []byte) error {
		_, err := kv.Put(ctx, clusterPasswdKey, string(passwd))
		return err
	}
	go watchPasswd(ctx, kv, sup)
	apiCtx, stopAPI := context.WithCancel(ctx)
	defer stopAPI()
	apiDone := make(chan error, 1)
	args := apiServerArgs(cfg, tlsDir, nodeIP)
	log.Info("Running kube-apiserver " + fmt.Sprint(args))
	go func() { apiDone <- runAPIServer(apiCtx, args, cfg.NodeName, sup.Wrap) }()

	if err := waitReady(ctx, client, apiDone, etcd.Err()); err != nil {
		return err
	}
	log.Info("Kube API server is now running")
	if err := ensureDefaultServiceAccounts(ctx, client, apiDone); err != nil {
		return err
	}
	n, err := k3semu.RegisterServer(ctx, client, cfg, nodeIP, nodePW, log)
	if err != nil {
		return err
	}
	if err := notifyReady(notifySocket); err != nil {
		log.Warn("systemd notify failed", "err", err)
	}
	go n.RunPods(ctx, time.Second)
	go watchNodes(ctx, client, etcd, log)
	// kube-vip: while server/manifests holds it, this server takes part
	// in its election (kubevip_run.go). It stops before the API does,
	// whatever ends the server, so the VIP and the Lease are released.
	vipCtx, stopVIP := context.WithCancel(ctx)
	vipDone := make(chan struct{})
	go func() {
		defer close(vipDone)
		watchManifests(vipCtx, filepath.Join(serverDir, "manifests"), cfg.NodeName, nodeIP, client, log)
	}()
	stopKubeVIP := func() {
		stopVIP()
		select {
		case <-vipDone:
		case <-time.After(shutdownWait):
			log.Warn("kube-vip emulation did not stop within " + shutdownWait.String())
		}
	}
	defer stopKubeVIP()

	heartbeat := time.NewTicker(10 * time.Second)
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Info("Shutting down k3s")
			stopKubeVIP()
			stopAPI()
			select {
			case <-apiDone:
			case <-time.After(shutdownWait):
				log.Warn("kube-apiserver did not stop within " + shutdownWait.String())
			}
			return ctx.Err()
		case err := <-apiDone:
			return fmt.Errorf("standin: kube-apiserver exited: %w", err)
		case err := <-etcd.Err():
			return fmt.Errorf("standin: etcd: %w", err)
		case <-etcd.Server.StopNotify():
			return errEtcdStopped
		case <-heartbeat.C:
			if err := n.Heartbeat(ctx); err != nil && ctx.Err() == nil {
				log.Warn("node heartbeat failed", "err", err)
			}
			if err := k3semu.NodeLifecycle(ctx, client, cfg.NodeMonitorGracePeriod); err != nil && ctx.Err() == nil {
				log.Warn("node lifecycle failed", "err", err)
			}
		}
	}
}

// shutdownWait bounds each wait of a stopping server: for kube-vip to
// release its Lease, then for kube-apiserver to stop. Both take
// milliseconds while etcd has a quorum; without one (the other servers
// gone) they cannot finish, and the apiserver's watches retry "etcdserver:
// no leader" in a tight loop meanwhile, so the server exits after the
// bound instead, as k3s exits on SIGTERM without draining its apiserver.
const shutdownWait = 3 * time.Second

// errEtcdStopped: etcd stops its member when the member is removed from
// the cluster (and refuses it on every later start until its data dir is
// deleted).
var errEtcdStopped = errors.New("etcd member stopped: it was removed from the etcd cluster; delete " +
	"server/db to rejoin")

// pickNodeIP returns --node-ip, else the bind address, else the first
// non-loopback IPv4 address, else 127.0.0.1.
func pickNodeIP(nodeIP, bindAddress string) (net.IP, error) {
	if ip, err := k3semu.NodeIPFlag(nodeIP, bindAddress); ip != nil || err != nil {
		return ip, err
	}
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
				return ipn.IP.To4(), nil
			}
		}
	}
	return net.IPv4(127, 0, 0, 1).To4(), nil
}

// waitReady polls /readyz with backoff until it answers ok.
func waitReady(ctx context.Context, client kubernetes.Interface, apiDone <-chan error, etcdErr <-chan error) error {
	delay := 100 * time.Millisecond
	for {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-apiDone:
			return fmt.Errorf("standin: kube-apiserver exited before ready: %w", err)
		case err := <-etcdErr:
			return fmt.Errorf("standin: etcd: %w", err)
		case <-time.After(delay):
		}
		delay = min(delay*2, time.Second)
	}
}

// notifyReady sends READY=1 to systemd (or the test hosts' stand-in) on
// sock, the value of $NOTIFY_SOCKET; nothing when it is empty.
func notifyReady(sock string) error {
	if sock == "" {
		return nil
	}
	if sock[0] == '@' {
		sock = "\x00" + sock[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("standin: notify: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("READY=1")); err != nil {
		return fmt.Errorf("standin: notify: %w", err)
	}
	return nil
}
