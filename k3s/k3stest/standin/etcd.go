package standin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/openctl/openctl/internal/k3semu"
)

// etcdDataExists reports whether server/db/etcd holds a member's data:
// then k3s ignores --cluster-init and --server and restarts that member.
func etcdDataExists(serverDir string) bool {
	_, err := os.Stat(filepath.Join(serverDir, "db", "etcd", "data", "member"))
	return err == nil
}

// etcdLocalHost is where this server's own clients (its kube-apiserver)
// reach etcd: the node address when it is a loopback one (tests run
// several servers on 127.0.0.x), else 127.0.0.1.
func etcdLocalHost(nodeIP net.IP) string {
	if nodeIP.IsLoopback() {
		return nodeIP.String()
	}
	return "127.0.0.1"
}

// etcdPeerURL is this member's peer URL, on the node address.
func etcdPeerURL(cfg k3semu.ServerConfig, nodeIP net.IP) url.URL {
	return url.URL{Scheme: "http", Host: net.JoinHostPort(nodeIP.String(), strconv.Itoa(cfg.EtcdPeerPort))}
}

// startEtcd starts this server's embedded etcd member in server/db/etcd,
// named <node>-<8 hex> as k3s names members (the name is kept in
// server/db/etcd/name so restarts reuse it), and waits until it serves.
// initialCluster empty starts a new cluster of one (or restarts from
// existing data); otherwise the member joins that existing cluster.
func startEtcd(ctx context.Context, cfg k3semu.ServerConfig, serverDir string, nodeIP net.IP, initialCluster string, log *slog.Logger) (*embed.Etcd, error) {
	dir := filepath.Join(serverDir, "db", "etcd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("standin: etcd: %w", err)
	}
	name, err := memberName(dir, cfg.NodeName)
	if err != nil {
		return nil, err
	}
	ec := embed.NewConfig()
	ec.Name = name
	ec.Dir = filepath.Join(dir, "data")
	ec.Logger = "zap"
	ec.LogLevel = "warn"
	ec.LogOutputs = []string{"stderr"}
	port := strconv.Itoa(cfg.EtcdClientPort)
	ec.ListenClientUrls = []url.URL{{Scheme: "http", Host: net.JoinHostPort(nodeIP.String(), port)}}
	if !nodeIP.IsLoopback() {
		ec.ListenClientUrls = append(ec.ListenClientUrls, url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", port)})
	}
	ec.AdvertiseClientUrls = ec.ListenClientUrls[:1]
	peer := etcdPeerURL(cfg, nodeIP)
	ec.ListenPeerUrls = []url.URL{peer}
	ec.AdvertisePeerUrls = []url.URL{peer}
	ec.InitialClusterToken = "etcd-cluster"
	if initialCluster == "" {
		ec.InitialCluster = ec.InitialClusterFromName(name)
		ec.ClusterState = embed.ClusterStateFlagNew
	} else {
		ec.InitialCluster = initialCluster
		ec.ClusterState = embed.ClusterStateFlagExisting
	}
	log.Info("Starting etcd", "name", name, "data-dir", ec.Dir)
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("standin: etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("standin: etcd: %w", err)
	case <-e.Server.StopNotify():
		e.Close()
		return nil, errEtcdStopped
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, errors.New("standin: etcd did not become ready within 60s")
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
}

// etcdJoin is this server's pending membership in an existing cluster.
type etcdJoin struct {
	client         *clientv3.Client // to the existing members
	id             uint64
	initialCluster string
}

// joinEtcd adds this server to the cluster's etcd as a learner, through
// the existing members' client URLs (from the supervisor's /db/info), as
// k3s does. etcd allows one learner at a time: a second concurrent join
// fails here with etcd's own "too many learner members in cluster".
func joinEtcd(ctx context.Context, sc *k3semu.SupervisorClient, cfg k3semu.ServerConfig, serverDir string, nodeIP net.IP, log *slog.Logger) (*etcdJoin, error) {
	members, _, err := sc.DBInfo(ctx)
	if err != nil {
		return nil, err
	}
	var endpoints []string
	for _, m := range members {
		if !m.IsLearner {
			endpoints = append(endpoints, m.ClientURLs...)
		}
	}
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("%s/db/info: no voting etcd member", sc.URL())
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second, Logger: zap.NewNop(), Context: ctx})
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(serverDir, "db", "etcd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		cli.Close()
		return nil, fmt.Errorf("standin: etcd: %w", err)
	}
	name, err := memberName(dir, cfg.NodeName)
	if err != nil {
		cli.Close()
		return nil, err
	}
	peer := etcdPeerURL(cfg, nodeIP)
	opCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := cli.MemberList(opCtx)
	if err != nil {
		cli.Close()
		return nil, err
	}
	// As k3s: a member that has never started (no name yet) at our peer
	// URL is us, added before a crash, and is reused; another server's
	// member named after this node is a duplicate node name.
	var id uint64
	current := list.Members
	for _, m := range current {
		switch {
		case m.Name == "" && slices.Contains(m.PeerURLs, peer.String()):
			id = m.ID
		case m.Name != name && memberNode(m.Name) == cfg.NodeName:
			cli.Close()
			return nil, errors.New("Failed to join etcd cluster due to duplicate node names, please use unique node name for the server")
		}
	}
	if id == 0 {
		log.Info("Adding member " + name + "=" + peer.String() + " to etcd cluster as a learner")
		resp, err := cli.MemberAddAsLearner(opCtx, []string{peer.String()})
		if err != nil {
			cli.Close()
			return nil, err
		}
		id, current = resp.Member.ID, resp.Members
	} else {
		log.Info("Member " + name + "=" + peer.String() + " is already in the etcd cluster as a learner; starting it")
	}
	var parts []string
	for _, m := range current {
		n := m.Name
		if m.ID == id {
			n = name
		}
		for _, u := range m.PeerURLs {
			parts = append(parts, n+"="+u)
		}
	}
	return &etcdJoin{client: cli, id: id, initialCluster: strings.Join(parts, ",")}, nil
}

// memberNode is the node part of a member name <node>-<8 hex>.
func memberNode(member string) string {
	i := strings.LastIndexByte(member, '-')
	if i < 0 || len(member)-i-1 != 8 {
		return member
	}
	return member[:i]
}

// waitPromoted waits until the existing members have promoted this
// learner to a voting member.
func (j *etcdJoin) waitPromoted(ctx context.Context, etcdErr <-chan error) error {
	for {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := j.client.MemberList(lctx)
		cancel()
		if err == nil {
			for _, m := range resp.Members {
				if m.ID == j.id && !m.IsLearner {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-etcdErr:
			return fmt.Errorf("standin: etcd: %w", err)
		case <-time.After(time.Second):
		}
	}
}

// learnerTick is how often servers look at learners to promote.
const learnerTick = 5 * time.Second

// manageLearners promotes learners from a periodic loop on whichever
// server is etcd's leader, as k3s's servers do rather than the joiner
// itself. A learner is promoted once it has been seen on two ticks in a
// row (so a learner exists for 5–10 s, the window in which a second
// concurrent join is refused) and etcd agrees it is in sync (otherwise
// etcd refuses and the next tick tries again).
func manageLearners(ctx context.Context, e *embed.Etcd, log *slog.Logger) {
	t := time.NewTicker(learnerTick)
	defer t.Stop()
	seen := map[uint64]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.Server.StopNotify():
			return
		case <-t.C:
		}
		if e.Server.Leader() != e.Server.MemberID() {
			clear(seen)
			continue
		}
		now := map[uint64]bool{}
		for _, m := range e.Server.Cluster().Members() {
			if !m.IsLearner {
				continue
			}
			id := uint64(m.ID)
			now[id] = true
			if !seen[id] {
				continue
			}
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := e.Server.PromoteMember(pctx, id)
			cancel()
			if err == nil {
				log.Info("Promoted etcd learner " + m.Name + " to a voting member")
			} else {
				log.Info("etcd learner "+m.Name+" not promoted yet", "err", err)
			}
		}
		seen = now
	}
}

func memberName(dir, node string) (string, error) {
	p := filepath.Join(dir, "name")
	if b, err := os.ReadFile(p); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("standin: etcd name: %w", err)
	}
	name := node + "-" + hex.EncodeToString(b)
	return name, osFS.WriteFile(p, []byte(name+"\n"), 0o600)
}

// etcdMembers is e's members as the supervisor's /db/info reports them.
func etcdMembers(e *embed.Etcd) []k3semu.DBMember {
	var out []k3semu.DBMember
	for _, m := range e.Server.Cluster().Members() {
		out = append(out, k3semu.DBMember{ID: uint64(m.ID), Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner})
	}
	return out
}
