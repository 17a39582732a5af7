package k3s

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/remote"
)

// Name is the provider's name: it serves the API group k3s.openctl.io.
const Name = "k3s"

// The kinds the provider serves. A Node may also be written "K3sNode"
// (the original openctl's name): the engine reads that as a Node.
const (
	KindCluster = "Cluster"
	KindNode    = "Node"
)

// APIVersion is the apiVersion of the provider's kinds.
const APIVersion = "k3s.openctl.io/v1"

// Config configures the provider.
type Config struct {
	// BinaryDir holds k3s binaries as the release page lays them out:
	// <dir>/<version>/k3s[-arm64…] and sha256sum-<arch>.txt. Missing
	// ones are downloaded there from ReleaseURL. Required.
	BinaryDir string
	// ReleaseURL is where binaries are downloaded from
	// (DefaultReleaseURL when empty); Offline turns downloads off.
	ReleaseURL string
	Offline    bool
	// HTTPClient downloads binaries; nil: http.DefaultClient.
	HTTPClient *http.Client
	// ReadyTimeout bounds the wait for a node to be ready after a change
	// (default 10m).
	ReadyTimeout time.Duration
	// KubeconfigDir receives <cluster>.yaml, each cluster's kubeconfig
	// (0600); empty: none is written.
	KubeconfigDir string
	// KubeConfig is the file kubeconfig.merge merges into (normally
	// ~/.kube/config); empty: merging is refused.
	KubeConfig string
	// SSH tunes the SSH connections (dial timeout, agent socket).
	SSH remote.Options
	// Logger receives the provider's log; nil discards it.
	Logger *slog.Logger
	// Agent installs openctl's node agent on every node; nil: none, and
	// the actions that need it are refused.
	Agent *AgentConfig
	// AddressMap, when set, rewrites the IP addresses manifests write
	// literally — a Cluster's spec.vip.address and spec.hosts[].address,
	// a Node's spec.address, spec.vip.address and the host of
	// spec.server — before anything uses them. A sandbox moves a LAN onto
	// loopback addresses with it, so that nothing needs root; addresses
	// read from VMs are the VMs' own. Nil: as written.
	AddressMap func(netip.Addr) netip.Addr
}

// Provider is the K3s provider. It is safe for concurrent use; Close
// closes its SSH connections.
type Provider struct {
	cfg  Config
	log  *slog.Logger
	pool *remote.Pool
	bins *binaryStore

	// locs are where the nodes this provider applied or read are, by
	// name: a cluster's Apply, which runs after its nodes', finds them
	// there.
	locs sync.Map // string → *location
	// pkis are the clusters' agent PKIs met while applying or reading
	// their nodes, by cluster name: a cluster's Apply and Get use them.
	pkis     sync.Map // string → *agentPKI
	agents   agentClients
	rollouts sync.Map // "cluster/concurrency" → *rollout
}

var (
	_ registry.Provider  = (*Provider)(nil)
	_ registry.Planner   = (*Provider)(nil)
	_ registry.Validator = (*Provider)(nil)
	_ registry.Differ    = (*Provider)(nil)
	_ registry.Actioner  = (*Provider)(nil)
	_ io.Closer          = (*Provider)(nil)
)

// New returns a provider. It connects to nothing.
func New(cfg Config) (*Provider, error) {
	if cfg.BinaryDir == "" {
		return nil, errcode.New(errcode.Invalid, "k3s: Config.BinaryDir is required: where k3s binaries are kept")
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 10 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	sshOpts := cfg.SSH
	if sshOpts.Logger == nil {
		sshOpts.Logger = cfg.Logger
	}
	rel := cfg.ReleaseURL
	if rel == "" {
		rel = DefaultReleaseURL
	}
	if cfg.Offline {
		rel = ""
	}
	return &Provider{
		cfg:  cfg,
		log:  cfg.Logger,
		pool: remote.NewPool(sshOpts),
		bins: &binaryStore{dir: cfg.BinaryDir, releaseURL: rel, client: cfg.HTTPClient},
	}, nil
}

// located returns where node name is, if this provider applied or read
// it.
func (p *Provider) located(name string) (*location, bool) {
	v, ok := p.locs.Load(name)
	if !ok {
		return nil, false
	}
	return v.(*location), true
}

// Close closes the provider's SSH and agent connections.
func (p *Provider) Close() error {
	p.closeAgents()
	return p.pool.Close()
}

// Name returns "k3s".
func (p *Provider) Name() string { return Name }

// nodeSecrets are the secret fields of a Node.
var nodeSecrets = []string{"spec.token", "spec.agentToken", "spec.kubeconfig", "spec.agentPKI", "status.token", "status.agentToken", "status.kubeconfig", "status.agentPKI"}

// Kinds returns Cluster and Node (also called K3sNode).
func (p *Provider) Kinds() []registry.Kind {
	return []registry.Kind{
		{
			Kind: KindCluster, Plural: "clusters", Composite: true, ReadsPrior: true,
			SecretFields: []string{"status.token", "status.agentToken", "status.kubeconfig", "status.agentPKI"},
			Columns: []registry.Column{
				{Name: "PHASE", Field: "status.phase"}, {Name: "VERSION", Field: "status.version"},
				{Name: "ENDPOINT", Field: "status.endpoint"}, {Name: "NODES", Field: "status.readyNodes"},
			},
			Hint: "kubectl --kubeconfig {status.outputs.kubeconfigPath} get nodes -o wide",
		},
		{
			// "nodes" is Proxmox's: a K3s node is a k3snode.
			Kind: KindNode, Plural: "k3snodes", Aliases: []string{"K3sNode"}, ReadsPrior: true, SecretFields: nodeSecrets,
			Columns: []registry.Column{
				{Name: "ROLE", Field: "status.role"}, {Name: "PHASE", Field: "status.phase"},
				{Name: "VERSION", Field: "status.version"}, {Name: "ADDRESS", Field: "status.address"},
				{Name: "CLUSTER", Field: "spec.cluster", Wide: true},
			},
		},
	}
}

// Get reads a resource live: a node from its host (located through its
// recorded status), a cluster from its nodes.
func (p *Provider) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	switch id.Kind {
	case KindNode:
		return p.getNode(ctx, id)
	case KindCluster:
		return p.getCluster(ctx, id)
	}
	return nil, unknownKind(id.Kind)
}

// Apply installs (or checks) a node, or gathers a cluster whose nodes the
// engine applied.
func (p *Provider) Apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	switch r.Kind {
	case KindNode:
		return p.applyNode(ctx, r)
	case KindCluster:
		return p.applyCluster(ctx, r)
	}
	return nil, unknownKind(r.Kind)
}

// Delete uninstalls a node; a cluster's nodes are deleted by the engine
// before it, and deleting the cluster itself removes its kubeconfig.
func (p *Provider) Delete(ctx context.Context, id manifest.ID) error {
	switch id.Kind {
	case KindNode:
		return p.deleteNode(ctx, id)
	case KindCluster:
		return p.deleteCluster(ctx, id)
	}
	return unknownKind(id.Kind)
}

func unknownKind(kind string) error {
	return errcode.New(errcode.Invalid, fmt.Sprintf("k3s: kind %q is not served (Cluster, Node)", kind))
}

// kubeconfigPath is where a cluster's kubeconfig goes; "" when none is
// written.
func (p *Provider) kubeconfigPath(cluster string) string {
	if p.cfg.KubeconfigDir == "" {
		return ""
	}
	return filepath.Join(p.cfg.KubeconfigDir, cluster+".yaml")
}

// Validate checks a Cluster's or a Node's spec without contacting
// anything. A Node whose spec holds $ref markers is checked when they
// are resolved, right before it is applied.
func (p *Provider) Validate(_ context.Context, r *manifest.Resource) error {
	if r.APIVersion != APIVersion {
		return errcode.New(errcode.Invalid, fmt.Sprintf("k3s: apiVersion %q is not served (%s)", r.APIVersion, APIVersion))
	}
	switch r.Kind {
	case KindCluster:
		_, err := DecodeClusterSpec(r)
		return err
	case KindNode:
		if deps, err := refs.Dependencies(r); err != nil || len(deps) > 0 {
			return err
		}
		_, err := DecodeNodeSpec(r)
		return err
	}
	return unknownKind(r.Kind)
}

// Actions returns the provider's actions: kubeconfig, status, upgrade
// and rotate-agent-ca on a Cluster; logs and restart on a Node, through its
// agent.
func (p *Provider) Actions() []registry.ActionSpec {
	return []registry.ActionSpec{{
		Name: "kubeconfig", Kind: KindCluster,
		Short: "Print the cluster's kubeconfig (admin credentials: keep it private)",
		Long: "Print the kubeconfig of a cluster, read live from its first server and pointed at its endpoint, " +
			"with its cluster, user and context named after the cluster (or spec.kubeconfig.context). " +
			"It holds the cluster's admin credentials.",
	}, {
		Name: "status", Kind: KindCluster,
		Short: "Print the cluster's nodes: role, readiness, k3s and agent versions, address",
		Long:  "Read the cluster live — every node's host, its agent and the Kubernetes API — and print one line per node.",
	}, {
		Name: "upgrade", Kind: KindCluster, Records: true,
		Short: "Upgrade the cluster's k3s, servers one at a time, then agents, through their agents",
		Long: "Upgrade every node to --version as a change of spec.k3s.version does: servers one at a time, then " +
			"agents spec.upgrade.concurrency at a time, each cordoned, drained, upgraded by its agent (rolled back " +
			"when its health gate fails, which stops the rollout there), Ready at the new version and uncordoned. " +
			"Downgrades and skipped minor versions are refused before anything changes; nodes already at --version " +
			"are skipped, so a re-run resumes. Set spec.k3s.version in the manifest to match afterwards.",
		Args: []registry.ArgSpec{{Name: "version", Type: registry.ArgString, Required: true, Help: "the k3s release, e.g. v1.37.3+k3s1"}},
	}, {
		Name: "rotate-agent-ca", Kind: KindCluster, Records: true,
		Short: "Replace the cluster's agent CA and reissue every agent and controller certificate",
		Long: "Make a new agent CA and move every node to it without a moment where openctl cannot reach a node: " +
			"each agent first accepts both CAs and gets a certificate from the new one, then the controller's " +
			"certificate is reissued, then the old CA is dropped everywhere. Credentials go over each node's " +
			"verified SSH connection; agents reload them without a restart. Every step is recorded: a run " +
			"interrupted half-way is finished by the next one.",
	}, {
		Name: "logs", Kind: KindNode,
		Short: "Print the last lines of a node's k3s log, through its agent",
		Long:  "Print the last lines of a node's k3s log (the journal, or OpenRC's log file), through its agent; with --follow, then every line logged after them, until interrupted.",
		Args: []registry.ArgSpec{
			{Name: "lines", Short: "n", Type: registry.ArgInt, Default: int64(100), Help: "how many lines (1-5000)"},
			{Name: "follow", Short: "f", Type: registry.ArgBool, Help: "keep printing new lines until interrupted"},
		},
	}, {
		Name: "restart", Kind: KindNode,
		Short: "Restart a node's k3s service, through its agent",
	}}
}

// Do runs an action.
func (p *Provider) Do(ctx context.Context, req registry.ActionRequest) (*registry.ActionResult, error) {
	switch {
	case req.ID.Kind == KindCluster && req.Action == "kubeconfig":
		c, err := p.getCluster(ctx, req.ID)
		if err != nil {
			return nil, err
		}
		kc, _ := c.Status["kubeconfig"].(string)
		if kc == "" {
			return nil, errcode.New(errcode.NotFound, fmt.Sprintf("k3s: cluster %s has no kubeconfig yet", req.ID.Name))
		}
		if _, err := io.WriteString(req.Out, kc); err != nil {
			return nil, err
		}
		return &registry.ActionResult{}, nil
	case req.ID.Kind == KindCluster && req.Action == "status":
		c, err := p.getCluster(ctx, req.ID)
		if err != nil {
			return nil, err
		}
		return &registry.ActionResult{Resource: c}, writeNodeTable(req.Out, c.Status)
	case req.ID.Kind == KindCluster && req.Action == "upgrade":
		return p.upgradeCluster(ctx, req)
	case req.ID.Kind == KindCluster && req.Action == "rotate-agent-ca":
		return p.rotateAgentCA(ctx, req)
	case req.ID.Kind == KindNode && (req.Action == "logs" || req.Action == "restart"):
		c, err := p.nodeAgent(ctx, req.ID)
		if err != nil {
			return nil, err
		}
		if req.Action == "restart" {
			if err := c.Restart(ctx); err != nil {
				return nil, err
			}
			return &registry.ActionResult{Message: req.ID.Name + ": k3s restarted"}, nil
		}
		lines, _ := req.Args["lines"].(int64)
		if lines == 0 {
			lines = 100
		}
		if follow, _ := req.Args["follow"].(bool); follow {
			return &registry.ActionResult{}, c.FollowLogs(ctx, int(lines), req.Out)
		}
		return &registry.ActionResult{}, c.Logs(ctx, int(lines), req.Out)
	}
	return nil, errcode.New(errcode.Invalid, fmt.Sprintf("k3s: no action %q on %s", req.Action, req.ID.Kind))
}

// clusterSpec decodes a Cluster's spec (DecodeClusterSpec) with
// Config.AddressMap applied.
func (p *Provider) clusterSpec(r *manifest.Resource) (*ClusterSpec, error) {
	s, err := DecodeClusterSpec(r)
	if err != nil || p.cfg.AddressMap == nil {
		return s, err
	}
	if s.VIP != nil {
		s.VIP.Address = p.mapAddr(s.VIP.Address)
	}
	for i := range s.Hosts {
		s.Hosts[i].Address = p.mapAddr(s.Hosts[i].Address)
	}
	return s, nil
}

// nodeSpec decodes a Node's spec (DecodeNodeSpec) with Config.AddressMap
// applied.
func (p *Provider) nodeSpec(r *manifest.Resource) (*NodeSpec, error) {
	s, err := DecodeNodeSpec(r)
	if err != nil || p.cfg.AddressMap == nil {
		return s, err
	}
	s.Address = p.mapAddr(s.Address)
	if s.VIP != nil {
		s.VIP.Address = p.mapAddr(s.VIP.Address)
	}
	if u, err := url.Parse(s.Server); err == nil && u.Host != "" {
		if host, port, err := net.SplitHostPort(u.Host); err == nil {
			u.Host = net.JoinHostPort(p.mapAddr(host), port)
			s.Server = u.String()
		}
	}
	return s, nil
}

// mapAddr applies Config.AddressMap to an IP address; anything else (a
// DNS name) is returned as it is.
func (p *Provider) mapAddr(s string) string {
	a, err := netip.ParseAddr(s)
	if err != nil || p.cfg.AddressMap == nil {
		return s
	}
	return p.cfg.AddressMap(a).String()
}
