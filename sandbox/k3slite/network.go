package k3slite

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openctl/openctl/internal/k3semu"
	"github.com/openctl/openctl/sandbox/kubelite"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// NetworkOptions configure a Network. The zero value is k3s's timing,
// except for the learner promotion, which is quicker than the stand-in's.
type NetworkOptions struct {
	// Logger receives the network's own records (clusters made, members
	// added, promoted, removed); nil discards them. The k3s programs log
	// to their standard error, as k3s does.
	Logger *slog.Logger
	// PromoteDelay is how long a joining server stays an etcd learner
	// once its member runs (default, 0: 1s; the stand-in's 5–10 s).
	// Another server joining meanwhile is refused with etcd's "too many
	// learner members in cluster". Negative: learners wait for
	// [Network.PromoteLearners].
	PromoteDelay time.Duration
	// HeartbeatInterval is how often a node renews its Lease and Ready
	// condition (default 10s, as the stand-in).
	HeartbeatInterval time.Duration
	// PodSyncInterval is how often the fake kubelet looks at its node's
	// pods and servers look for deleted Nodes (default 1s).
	PodSyncInterval time.Duration
	// NodeMonitorGracePeriod: a node whose Lease is older turns NotReady
	// (default 50s, kube-controller-manager's); a server's
	// --standin-node-monitor-grace-period wins.
	NodeMonitorGracePeriod time.Duration
}

// Network is the sandbox's network of k3s nodes and clusters: the
// datastores (what etcd holds), membership, and who holds which VIP.
// Safe for concurrent use.
type Network struct {
	opts NetworkOptions
	log  *slog.Logger

	mu       sync.Mutex
	clusters map[string]*cluster
	vips     map[string]*vipHold                // VIP address → its holder
	vipFreed chan struct{}                      // closed when a VIP's holder lets it go (vipReleased)
	listens  map[*vmhost.Host]map[string]string // a host's running servers: port → host:port
	closed   bool
	programs sync.WaitGroup // the k3s programs running on the network
	ctx      context.Context
	cancel   context.CancelFunc
}

// NewNetwork returns an empty network.
func NewNetwork(opts NetworkOptions) *Network {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.PromoteDelay == 0 {
		opts.PromoteDelay = time.Second
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = 10 * time.Second
	}
	if opts.PodSyncInterval <= 0 {
		opts.PodSyncInterval = time.Second
	}
	if opts.NodeMonitorGracePeriod <= 0 {
		opts.NodeMonitorGracePeriod = k3semu.DefaultNodeMonitorGracePeriod
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Network{opts: opts, log: opts.Logger, clusters: map[string]*cluster{}, vips: map[string]*vipHold{}, listens: map[*vmhost.Host]map[string]string{}, ctx: ctx, cancel: cancel}
}

// Close ends the network: every k3s program running on it stops (as on a
// service stop), Close waits for them, and the clusters are forgotten.
// The program fails on a closed network.
func (n *Network) Close() error {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	n.cancel()
	n.programs.Wait()
	n.mu.Lock()
	n.clusters = map[string]*cluster{}
	n.mu.Unlock()
	return nil
}

// Program is the k3s program of every host on n: register it in
// vmhost.Options.Programs under ProgramPath.
func (n *Network) Program() vmhost.Program {
	return func(ctx context.Context, c *vmhost.Call) int {
		n.mu.Lock()
		if n.closed {
			n.mu.Unlock()
			fmt.Fprintln(c.Stderr, "k3slite: the sandbox network is closed")
			return 1
		}
		n.programs.Add(1)
		n.mu.Unlock()
		defer n.programs.Done()
		// Close ends every program, whatever it is doing.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(n.ctx, cancel)()
		return n.main(ctx, c)
	}
}

// cluster is one k3s cluster: its datastore (a kubelite Store), its etcd
// membership and the bootstrap data every server shares.
type cluster struct {
	id     string
	store  *kubelite.Store
	passwd []byte // the cluster's server/cred/passwd (k3s: bootstrap data)

	members []*member // guarded by Network.mu
}

// member is one etcd member of a cluster.
type member struct {
	id      uint64
	name    string // <node>-<8 hex>; "" until it first started
	node    string
	host    string // its node IP
	learner bool
	running int           // how many programs run it (0 or 1)
	removed chan struct{} // closed once removed from the cluster
	gone    bool
	promote *time.Timer
	log     *slog.Logger // its server's, for the promotion line
}

func (m *member) peerURL() string {
	return (&url.URL{Scheme: "http", Host: net.JoinHostPort(m.host, "2380")}).String()
}

func (m *member) clientURL() string {
	return (&url.URL{Scheme: "http", Host: net.JoinHostPort(m.host, "2379")}).String()
}

func randomID() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:]) | 1
}

// newCluster makes a cluster whose first member is node's.
func (n *Network) newCluster(name, node, host string, passwd []byte) (*cluster, *member, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, nil, errors.New("k3slite: the sandbox network is closed")
	}
	var b [8]byte
	rand.Read(b[:])
	c := &cluster{id: hex.EncodeToString(b[:]), store: kubelite.NewStore(), passwd: passwd}
	m := &member{id: randomID(), name: name, node: node, host: host, removed: make(chan struct{})}
	c.members = append(c.members, m)
	n.clusters[c.id] = c
	n.log.Info("k3slite: new cluster", "cluster", c.id, "member", name)
	return c, m, nil
}

// EtcdMembers lists the etcd members of each cluster (learners
// included), by the node each belongs to, keyed by the cluster's ID. A
// member added for a join that has not started yet is listed by the name
// it was added under.
func (n *Network) EtcdMembers() map[string][]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string][]string, len(n.clusters))
	for id, c := range n.clusters {
		var names []string
		for _, m := range c.members {
			switch {
			case m.node != "":
				names = append(names, m.node)
			default:
				names = append(names, m.name)
			}
		}
		out[id] = names
	}
	return out
}

// lookup returns cluster id and its member mid; errors say why not.
func (n *Network) lookup(id string, mid uint64) (*cluster, *member, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := n.clusters[id]
	if c == nil {
		return nil, nil, fmt.Errorf("k3slite: etcd: the datastore of cluster %s is not in this sandbox network (it lives in memory only): delete server/db to start afresh", id)
	}
	if mid == 0 {
		return c, nil, nil
	}
	for _, m := range c.members {
		if m.id == mid {
			return c, m, nil
		}
	}
	return c, nil, errEtcdStopped
}

// errEtcdStopped: etcd stops its member when the member is removed from
// the cluster (and refuses it on every later start until its data dir is
// deleted).
var errEtcdStopped = errors.New("etcd member stopped: it was removed from the etcd cluster; delete " +
	"server/db to rejoin")

// errTooManyLearners is etcd's refusal of a second learner.
var errTooManyLearners = errors.New("etcdserver: too many learner members in cluster")

// addLearner adds node's member at host to c as a learner, as
// MemberAddAsLearner does; a never-started member at the same peer URL
// (a join interrupted after the add) is reused.
func (n *Network) addLearner(c *cluster, name, node, host string, log *slog.Logger) (*member, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	peer := (&member{host: host}).peerURL()
	for _, m := range c.members {
		switch {
		case m.name == "" && m.peerURL() == peer:
			m.name = name
			log.Info("Member " + name + "=" + peer + " is already in the etcd cluster as a learner; starting it")
			return m, nil
		case m.name != name && memberNode(m.name) == node:
			return nil, errors.New("Failed to join etcd cluster due to duplicate node names, please use unique node name for the server")
		}
	}
	for _, m := range c.members {
		if m.learner {
			return nil, errTooManyLearners
		}
	}
	log.Info("Adding member " + name + "=" + peer + " to etcd cluster as a learner")
	m := &member{id: randomID(), node: node, host: host, learner: true, removed: make(chan struct{})}
	c.members = append(c.members, m)
	m.name = name
	return m, nil
}

// start marks m running; a learner is promoted PromoteDelay later if it
// still runs then. It fails when m was removed.
func (n *Network) start(c *cluster, m *member, log *slog.Logger) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if m.gone || !slices.Contains(c.members, m) {
		return errEtcdStopped
	}
	m.running++
	m.log = log
	if m.learner && m.promote == nil && n.opts.PromoteDelay > 0 {
		m.promote = time.AfterFunc(n.opts.PromoteDelay, func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			m.promote = nil
			n.promoteLocked(c, m)
		})
	}
	return nil
}

// promoteLocked makes m, a running learner, a voting member. Call with
// n.mu held.
func (n *Network) promoteLocked(c *cluster, m *member) bool {
	if m.gone || m.running == 0 || !m.learner {
		return false
	}
	m.learner = false
	if m.log != nil {
		m.log.Info("Promoted etcd learner " + m.name + " to a voting member")
	}
	n.log.Info("k3slite: learner promoted", "cluster", c.id, "member", m.name)
	return true
}

// PromoteLearners promotes every running learner of every cluster now,
// as etcd's leader does once a learner has caught up, and returns their
// member names. With a negative NetworkOptions.PromoteDelay it is the
// only way learners are promoted, so a test decides how long a join's
// learner window lasts.
func (n *Network) PromoteLearners() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var names []string
	for _, c := range n.clusters {
		for _, m := range c.members {
			if n.promoteLocked(c, m) {
				names = append(names, m.name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// stop marks m no longer running.
func (n *Network) stop(m *member) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if m.running > 0 {
		m.running--
	}
	if m.running == 0 && m.promote != nil {
		m.promote.Stop()
		m.promote = nil
	}
}

// isLearner reports whether m is still a learner.
func (n *Network) isLearner(m *member) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return m.learner
}

// quorum reports whether a majority of c's voting members run.
func (n *Network) quorum(c *cluster) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	voters, up := 0, 0
	for _, m := range c.members {
		if m.learner {
			continue
		}
		voters++
		if m.running > 0 {
			up++
		}
	}
	return up >= voters/2+1
}

// memberList returns a snapshot of c's members.
func (n *Network) memberList(c *cluster) []member {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]member, 0, len(c.members))
	for _, m := range c.members {
		out = append(out, member{id: m.id, name: m.name, node: m.node, host: m.host, learner: m.learner, running: m.running})
	}
	return out
}

// dbMembers is c's members as the supervisor's /db/info reports them.
func (n *Network) dbMembers(c *cluster) []k3semu.DBMember {
	var out []k3semu.DBMember
	for _, m := range n.memberList(c) {
		out = append(out, k3semu.DBMember{ID: m.id, Name: m.name, PeerURLs: []string{m.peerURL()}, ClientURLs: []string{m.clientURL()}, IsLearner: m.learner})
	}
	return out
}

// removeNodeMembers removes the members of node from c, except self's,
// as k3s's etcd controllers do when the Node is deleted; it reports the
// names removed.
func (n *Network) removeNodeMembers(c *cluster, node string, self *member) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var removed []string
	c.members = slices.DeleteFunc(c.members, func(m *member) bool {
		if m == self || memberNode(m.name) != node || m.name == "" {
			return false
		}
		m.gone = true
		close(m.removed)
		if m.promote != nil {
			m.promote.Stop()
		}
		removed = append(removed, m.name)
		return true
	})
	if len(removed) > 0 {
		n.log.Info("k3slite: members removed", "cluster", c.id, "members", removed)
	}
	return removed
}

// memberNode is the node part of a member name <node>-<8 hex>.
func memberNode(member string) string {
	i := strings.LastIndexByte(member, '-')
	if i < 0 || len(member)-i-1 != 8 {
		return member
	}
	return member[:i]
}

// clusterPasswd returns c's passwd.
func (n *Network) clusterPasswd(c *cluster) []byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(c.passwd)
}

// setClusterPasswd replaces c's passwd (a token rotation).
func (n *Network) setClusterPasswd(c *cluster, passwd []byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	c.passwd = slices.Clone(passwd)
}

// listening records that a server on h listens on addr (host:port).
func (n *Network) listening(h *vmhost.Host, addr string, on bool) {
	_, port, _ := net.SplitHostPort(addr)
	n.mu.Lock()
	defer n.mu.Unlock()
	if on {
		if n.listens[h] == nil {
			n.listens[h] = map[string]string{}
		}
		n.listens[h][port] = addr
		return
	}
	delete(n.listens[h], port)
	if len(n.listens[h]) == 0 {
		delete(n.listens, h)
	}
}

// localAddr is where a connection from h to its own loopback port goes:
// the address a server on h listens on with that port, else h's first
// address (or 127.0.0.1) with it. An empty port is any server's.
func (n *Network) localAddr(h *vmhost.Host, port string) string {
	n.mu.Lock()
	for p, addr := range n.listens[h] {
		if port == "" || p == port {
			n.mu.Unlock()
			return addr
		}
	}
	n.mu.Unlock()
	host := "127.0.0.1"
	if a, ok := primaryAddr(h); ok {
		host = a.String()
	}
	return net.JoinHostPort(host, port)
}

// Member is one etcd member of a cluster, as [Network.Members] reports it.
type Member struct {
	Name    string // <node>-<8 hex>
	Node    string // the node's name
	Address string // its node IP
	Learner bool   // not yet promoted to a voting member
	Running bool   // its server runs
}

// Members returns the etcd members of the cluster that has a member of
// node, in the order they were added; nil when no cluster has one.
func (n *Network) Members(node string) []Member {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.clusters {
		if !slices.ContainsFunc(c.members, func(m *member) bool { return m.node == node }) {
			continue
		}
		out := make([]Member, 0, len(c.members))
		for _, m := range c.members {
			out = append(out, Member{Name: m.name, Node: m.node, Address: m.host, Learner: m.learner, Running: m.running > 0})
		}
		return out
	}
	return nil
}
