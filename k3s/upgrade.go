package k3s

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/internal/drain"
	"github.com/openctl/openctl/k3s/kubeconfig"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/remote"
)

// k3sVersion is a k3s release, v1.<minor>.<patch>+k3s<rev>.
type k3sVersion struct{ minor, patch, rev int }

func parseK3sVersion(v string) (k3sVersion, bool) {
	m := versionRe.FindStringSubmatch(v)
	if m == nil {
		return k3sVersion{}, false
	}
	var out k3sVersion
	for i, p := range []*int{&out.minor, &out.patch, &out.rev} {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return k3sVersion{}, false
		}
		*p = n
	}
	return out, true
}

// less orders releases.
func (a k3sVersion) less(b k3sVersion) bool {
	if a.minor != b.minor {
		return a.minor < b.minor
	}
	if a.patch != b.patch {
		return a.patch < b.patch
	}
	return a.rev < b.rev
}

// checkUpgrade refuses what Kubernetes' version-skew policy and k3s's
// upgrade rules forbid (internal/k3semu/CONTRACT.md §5): a downgrade, and skipping a
// minor version.
func checkUpgrade(name, have, want string) error {
	h, ok1 := parseK3sVersion(have)
	w, ok2 := parseK3sVersion(want)
	switch {
	case !ok1 || !ok2:
		return nil // the spec's version is validated; an odd installed one is replaced
	case w.less(h):
		return errcode.New(errcode.Invalid, fmt.Sprintf("k3s: node %s runs %s: %s would be a downgrade, which k3s does not support", name, have, want))
	case w.minor > h.minor+1:
		return errcode.New(errcode.Invalid, fmt.Sprintf("k3s: node %s runs %s: %s skips a minor version; upgrade to v1.%d first (Kubernetes supports one minor version at a time)", name, have, want, h.minor+1))
	}
	return nil
}

// rollout is the state of one cluster's upgrades in this provider: agents
// are upgraded so many at a time (spec.upgrade.concurrency), and a failure
// stops those waiting.
type rollout struct {
	agents chan struct{} // held while an agent node upgrades

	mu      sync.Mutex
	gen     int    // counts failures
	stopped string // why the last failure stopped the rollout
}

func (p *Provider) rollout(cluster string, concurrency int) *rollout {
	key := fmt.Sprintf("%s/%d", cluster, concurrency)
	r, _ := p.rollouts.LoadOrStore(key, &rollout{agents: make(chan struct{}, concurrency)})
	return r.(*rollout)
}

func (r *rollout) generation() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen, r.stopped
}

func (r *rollout) fail(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	r.stopped = why
}

// upgradeNode upgrades a node's k3s from have to s.K3s.Version through its
// agent, as internal/k3semu/CONTRACT.md §5 orders it: an agent only once every server
// runs the new version, spec.upgrade.concurrency agents at a time; cordon and drain (the spec's
// policy), POST /v1/upgrade/k3s — the agent swaps the binary, restarts k3s
// and rolls back when its health gate fails — then the Node Ready in the
// API with the new kubelet version, and uncordon. A rolled-back upgrade
// fails the node, and agents of the cluster waiting for their turn are not
// upgraded.
func (p *Provider) upgradeNode(ctx context.Context, cs kubernetes.Interface, h *remote.Host, name string, loc *location, s *NodeSpec, a *agentPKI, have string) error {
	want := s.K3s.Version
	ro := p.rollout(firstOf(s.Cluster, name), s.Upgrade.concurrency())
	if s.Role == RoleAgent {
		gen, _ := ro.generation()
		select {
		case ro.agents <- struct{}{}:
			defer func() { <-ro.agents }()
		case <-ctx.Done():
			return ctx.Err()
		}
		if now, why := ro.generation(); now != gen {
			return errcode.New(errcode.Conflict, fmt.Sprintf("k3s: node %s: not upgraded: the rollout stopped (%s)", name, why))
		}
		if err := serversAt(ctx, cs, want); err != nil {
			return p.nodeErr(name, "upgrade", errcode.New(errcode.Conflict, fmt.Sprintf("agents are upgraded after the servers (Kubernetes version-skew policy): %v", err)))
		}
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return errcode.Wrap(errcode.Transient, fmt.Sprintf("k3s: node %s: reading it in the API", name), err)
	}
	if err := cordonAndDrain(ctx, cs, node, s.Drain); err != nil {
		_ = drain.Uncordon(ctx, cs, name)
		return errcode.New(errcode.Conflict, fmt.Sprintf("k3s: node %s: not upgraded: %v", name, err))
	}
	if s.Role == RoleServer && s.VIP != nil {
		if err := p.handOverVIP(ctx, cs, h, name, s.VIP.Address); err != nil {
			_ = drain.Uncordon(ctx, cs, name)
			return p.nodeErr(name, "move the VIP away before the upgrade", err)
		}
	}
	registry.CallOf(ctx).ReportStep(fmt.Sprintf("upgrading %s from %s to %s through its agent", name, have, want))
	c, err := p.agentClient(loc.Address, a)
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := c.Upgrade(ctx, want)
	if err != nil && !errors.Is(err, agent.ErrRolledBack) {
		_ = drain.Uncordon(ctx, cs, name)
		return p.nodeErr(name, "upgrade through the agent", err)
	}
	if res.Status == agent.UpgradeRolledBack {
		why := fmt.Sprintf("node %s: the upgrade to %s failed its health gate and was rolled back to %s by the node's agent: %s", name, want, res.From, res.Reason)
		ro.fail(why)
		_ = drain.Uncordon(ctx, cs, name)
		return errcode.New(errcode.Conflict, "k3s: "+why+"; the rollout stops here: nodes after it are not upgraded")
	}
	registry.CallOf(ctx).ReportStep("waiting for " + name + " to be Ready at " + want)
	if err := waitKubelet(ctx, cs, name, want, p.cfg.ReadyTimeout); err != nil {
		ro.fail(err.Error())
		return errcode.New(errcode.Conflict, fmt.Sprintf("k3s: node %s: upgraded to %s, but %v; it stays cordoned and the rollout stops here", name, want, err))
	}
	if err := drain.Uncordon(ctx, cs, name); err != nil {
		return errcode.Wrap(errcode.Transient, fmt.Sprintf("k3s: node %s: uncordon", name), err)
	}
	p.log.Info("node upgraded", "node", name, "from", have, "to", want, "took", time.Since(start))
	return nil
}

// nodeAPI is the cluster's API as a node reaches it: a joining node
// through the server it joined, with the cluster's kubeconfig; the first
// server through its own.
func (p *Provider) nodeAPI(ctx context.Context, h *remote.Host, name string, loc *location, s *NodeSpec) (*kubeconfig.Cluster, error) {
	raw, server := s.Kubeconfig, s.Server
	if s.Init || raw == "" {
		st, err := p.nodeStatus(ctx, h, name, loc)
		if err != nil {
			return nil, err
		}
		raw, _ = st["kubeconfig"].(string)
		server, _ = st["url"].(string)
	}
	return clusterAPI(raw, server, firstOf(s.Cluster, name))
}

// clusterAPI is a client of the API at server with k3s's kubeconfig raw,
// its names made ctxName's.
func clusterAPI(raw, server, ctxName string) (*kubeconfig.Cluster, error) {
	kc, err := kubeconfig.Rewrite([]byte(raw), server, ctxName)
	if err != nil {
		return nil, err
	}
	return kubeconfig.Client(kc)
}

// serversAt checks that every server of the cluster runs version or a
// newer one.
func serversAt(ctx context.Context, cs kubernetes.Interface, version string) error {
	want, _ := parseK3sVersion(version)
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !isServer(n) {
			continue
		}
		have, ok := parseK3sVersion(n.Status.NodeInfo.KubeletVersion)
		if ok && have.less(want) {
			return fmt.Errorf("server %s runs %s, not yet %s", n.Name, n.Status.NodeInfo.KubeletVersion, version)
		}
	}
	return nil
}

// waitKubelet waits until node name is Ready with kubelet version.
func waitKubelet(ctx context.Context, cs kubernetes.Interface, name, version string, timeout time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b := backoff.Policy{Initial: 200 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.1}.Start()
	why := "not seen yet"
	for {
		n, err := cs.CoreV1().Nodes().Get(wctx, name, metav1.GetOptions{})
		switch {
		case err != nil:
			why = err.Error()
		case n.Status.NodeInfo.KubeletVersion != version:
			why = "its kubelet reports " + n.Status.NodeInfo.KubeletVersion
		case !nodeReady(n):
			why = "it is not Ready"
		default:
			return nil
		}
		if werr := b.Wait(wctx); werr != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("not Ready at %s after %s: %s", version, timeout, why)
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// upgradeCluster is the upgrade action: the rolling upgrade a change of
// spec.k3s.version makes, on a recorded cluster, to version. Every node's
// version is read through its agent and the whole upgrade checked (no
// downgrade, no skipped minor version) before anything changes; nodes
// already at version are skipped, so a re-run after a stop resumes. The
// recorded spec keeps its version: the manifest must then say version
// too, or the next apply refuses it as a downgrade.
func (p *Provider) upgradeCluster(ctx context.Context, req registry.ActionRequest) (*registry.ActionResult, error) {
	id := req.ID
	version, _ := req.Args["version"].(string)
	if !versionRe.MatchString(version) {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("k3s: --version must be a k3s release such as v1.37.2+k3s1, got %q", version))
	}
	prior, rec, err := recordedCluster(ctx, id)
	if err != nil {
		return nil, err
	}
	spec, err := p.clusterSpec(prior)
	if err != nil {
		return nil, err
	}
	a, err := p.actionPKI(ctx, req)
	if err != nil {
		return nil, err
	}
	raw, _ := prior.Status["kubeconfig"].(string)
	endpoint, _ := prior.Status["endpoint"].(string)
	api, err := clusterAPI(raw, endpoint, contextName(id.Name, spec))
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, fmt.Sprintf("k3s: %s: its recorded kubeconfig", id.Short()), err)
	}
	type step struct {
		m    nodeRef
		h    *remote.Host
		loc  *location
		have string
	}
	var servers, agents []step
	for _, m := range rec.Nodes {
		loc, h, err := p.memberHost(ctx, m, rec.SSH)
		if err != nil {
			return nil, err
		}
		c, err := p.agentClient(m.Address, a)
		if err != nil {
			return nil, err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return nil, p.nodeErr(m.Name, "ask its agent for its version", err)
		}
		if err := checkUpgrade(m.Name, info.K3sVersion, version); err != nil {
			return nil, err
		}
		if info.K3sVersion == version {
			continue
		}
		st := step{m: m, h: h, loc: loc, have: info.K3sVersion}
		if m.Role == RoleServer {
			servers = append(servers, st)
		} else {
			agents = append(agents, st)
		}
	}
	nodeSpec := func(m nodeRef) *NodeSpec {
		s := &NodeSpec{Role: m.Role, Cluster: id.Name, K3s: K3sSpec{Version: version}, Drain: spec.Drain, Upgrade: spec.Upgrade}
		if m.Role == RoleServer {
			s.VIP = spec.VIP
		}
		return s
	}
	cs := api.Kubernetes()
	for _, st := range servers {
		if err := p.upgradeNode(ctx, cs, st.h, st.m.Name, st.loc, nodeSpec(st.m), a, st.have); err != nil {
			return nil, err
		}
	}
	errs := make([]error, len(agents))
	var wg sync.WaitGroup
	for i, st := range agents {
		wg.Go(func() { errs[i] = p.upgradeNode(ctx, cs, st.h, st.m.Name, st.loc, nodeSpec(st.m), a, st.have) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// What the cluster and its nodes now run is recorded as their spec
	// too: once the manifest says the same, there is nothing to apply.
	updates := []registry.StatusUpdate{{ID: id, Status: map[string]any{"version": version}, Spec: map[string]any{"spec.k3s.version": version}}}
	for _, m := range rec.Nodes {
		updates = append(updates, registry.StatusUpdate{ID: manifest.ID{APIVersion: APIVersion, Kind: KindNode, Name: m.Name},
			Status: map[string]any{"version": version}, Spec: map[string]any{"spec.k3s.version": version}})
	}
	if err := req.Record(ctx, updates...); err != nil {
		return nil, err
	}
	n := len(servers) + len(agents)
	msg := fmt.Sprintf("%s: %d of %d nodes upgraded to %s", id.Name, n, len(rec.Nodes), version)
	if spec.K3s.Version != version {
		msg += fmt.Sprintf("; its manifest still says %s: set spec.k3s.version to %s, or the next apply refuses it as a downgrade", spec.K3s.Version, version)
	}
	return &registry.ActionResult{Message: msg}, nil
}
