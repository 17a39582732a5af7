package k3s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/k3s/kubeconfig"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/remote"
)

// vmAPIVersion is the apiVersion of the Proxmox VMs a cluster creates.
const vmAPIVersion = "proxmox.openctl.io/v1"

// member is one node of a cluster, as Plan lays it out.
type member struct {
	name, role string
	address    any // a literal or a $ref marker
	hostKey    any // a literal, a $ref marker, or nil
	vm         *manifest.Resource
}

// Plan expands a Cluster into its nodes — and, on Proxmox, their VMs —
// with the $refs that order them: every node refers to its VM's address
// and host key; the first server starts the cluster; every other server
// joins it with the first server's token, after the server before it
// (etcd admits one learner at a time); agents join after the last
// server, in parallel.
func (p *Provider) Plan(_ context.Context, r *manifest.Resource) ([]*manifest.Resource, error) {
	if r.Kind != KindCluster {
		return nil, nil
	}
	s, err := p.clusterSpec(r)
	if err != nil {
		return nil, err
	}
	members, err := layout(r.Metadata.Name, s)
	if err != nil {
		return nil, err
	}
	var out []*manifest.Resource
	var first, lastServer string
	for _, m := range members {
		if m.vm != nil {
			out = append(out, m.vm)
		}
		if m.role == RoleServer {
			lastServer = m.name
			if first == "" {
				first = m.name
			}
		}
	}
	nodeRef := func(name, field string) map[string]any {
		return refs.Marker(manifest.ID{APIVersion: APIVersion, Kind: KindNode, Name: name}, field)
	}
	prevServer := ""
	for _, m := range members {
		spec := map[string]any{
			"cluster": r.Metadata.Name,
			"role":    m.role,
			"address": m.address,
			"ssh":     sshStatus(s.SSH),
			"k3s":     k3sSpecMap(s.K3s),
		}
		if m.hostKey != nil {
			spec["sshHostKey"] = m.hostKey
		}
		if s.Drain != nil {
			spec["drain"] = drainMap(s.Drain)
		}
		if m.role == RoleAgent && s.Upgrade.concurrency() > 1 {
			spec["upgrade"] = map[string]any{"concurrency": int64(s.Upgrade.concurrency())}
		}
		if m.role == RoleServer {
			if len(s.TLSSANs) > 0 {
				spec["tlsSANs"] = toAny(s.TLSSANs)
			}
			if s.VIP != nil {
				spec["vip"] = map[string]any{"address": s.VIP.Address, "interface": s.VIP.Interface}
			}
		}
		switch {
		case m.name == first:
			spec["init"] = true
		default:
			// Through the VIP when there is one: the first server is
			// applied only once the VIP answers for it.
			spec["server"] = nodeRef(first, "status.url")
			if s.VIP != nil {
				spec["server"] = apiURL(s.VIP.Address)
			}
			spec["agentToken"] = nodeRef(first, "status.agentToken")
			spec["kubeconfig"] = nodeRef(first, "status.kubeconfig")
			if p.cfg.Agent != nil {
				spec["agentPKI"] = nodeRef(first, "status.agentPKI")
			}
			if m.role == RoleServer {
				spec["token"] = nodeRef(first, "status.token")
				spec["after"] = []any{nodeRef(prevServer, "status.phase")}
			} else {
				spec["after"] = []any{nodeRef(lastServer, "status.phase")}
			}
		}
		if m.role == RoleServer {
			prevServer = m.name
		}
		out = append(out, &manifest.Resource{APIVersion: APIVersion, Kind: KindNode, Metadata: manifest.Metadata{Name: m.name}, Spec: spec})
	}
	return out, nil
}

// layout lists a cluster's members in order: servers first.
func layout(cluster string, s *ClusterSpec) ([]member, error) {
	var out []member
	if len(s.Hosts) > 0 {
		for _, role := range []string{RoleServer, RoleAgent} {
			for _, h := range s.Hosts {
				if h.Role != role {
					continue
				}
				m := member{name: h.Name, role: h.Role, address: h.Address}
				if h.SSHHostKey != "" {
					m.hostKey = h.SSHHostKey
				}
				out = append(out, m)
			}
		}
		return out, nil
	}
	ips, err := staticIPs(s)
	if err != nil {
		return nil, err
	}
	add := func(name, role string, pool PoolSpec, spread []string) {
		vm := vmManifest(cluster, name, s, pool, spread, ips)
		vmID := vm.ID()
		out = append(out, member{
			name: name, role: role, vm: vm,
			address: refs.Marker(vmID, "status.ip"),
			hostKey: refs.Marker(vmID, "status.sshHostKey"),
		})
	}
	cp := s.Nodes.ControlPlane
	for i := range cp.Count {
		// Control planes go round the allowed Proxmox nodes, so that one
		// host failing takes at most one etcd member with it.
		var spread []string
		if nodes := firstNonEmpty(cp.Nodes, s.Compute.Nodes); len(nodes) > 0 {
			spread = []string{nodes[i%len(nodes)]}
		}
		add(fmt.Sprintf("%s-cp-%d", cluster, i), RoleServer, cp, spread)
	}
	for _, w := range s.Nodes.Workers {
		name := w.Name
		if name == "" {
			name = "worker"
		}
		for i := range w.Count {
			add(fmt.Sprintf("%s-%s-%d", cluster, name, i), RoleAgent, w, firstNonEmpty(w.Nodes, s.Compute.Nodes))
		}
	}
	return out, nil
}

// staticIPs returns the addresses handed out in order, or nil with DHCP.
func staticIPs(s *ClusterSpec) (*ipPlan, error) {
	n := s.Network
	if n == nil || n.StaticIPs == nil {
		return nil, nil
	}
	start, err := netip.ParseAddr(n.StaticIPs.StartIP)
	if err != nil {
		return nil, manifest.FieldErrorf("spec.network.staticIPs.startIP", "not an IP address")
	}
	bits, err := maskBits(n.StaticIPs.Netmask)
	if err != nil {
		return nil, manifest.FieldErrorf("spec.network.staticIPs.netmask", "%v", err)
	}
	return &ipPlan{next: start, bits: bits, gateway: n.StaticIPs.Gateway}, nil
}

// ipPlan hands out consecutive static addresses.
type ipPlan struct {
	next    netip.Addr
	bits    int
	gateway string
}

// take returns the next address, as a CIDR.
func (p *ipPlan) take() string {
	a := p.next
	p.next = p.next.Next()
	return fmt.Sprintf("%s/%d", a, p.bits)
}

// maskBits accepts a netmask as 255.255.255.0, 24 or /24.
func maskBits(m string) (int, error) {
	m = strings.TrimPrefix(m, "/")
	if m == "" {
		return 24, nil
	}
	if bits, err := strconv.Atoi(m); err == nil {
		if bits < 1 || bits > 32 {
			return 0, fmt.Errorf("prefix length %d out of range", bits)
		}
		return bits, nil
	}
	a, err := netip.ParseAddr(m)
	if err != nil || !a.Is4() {
		return 0, fmt.Errorf("not a netmask: %q", m)
	}
	b := a.As4()
	ones, size := net.IPv4Mask(b[0], b[1], b[2], b[3]).Size()
	if size == 0 {
		return 0, fmt.Errorf("not a contiguous netmask: %q", m)
	}
	return ones, nil
}

// vmManifest is a node's Proxmox VM.
func vmManifest(cluster, name string, s *ClusterSpec, pool PoolSpec, nodes []string, ips *ipPlan) *manifest.Resource {
	size := SizeSpec{CPUs: 2, MemoryMB: 2048}
	if d := s.Compute.Default; d != nil {
		size = overlay(size, *d)
	}
	if pool.Size != nil {
		size = overlay(size, *pool.Size)
	}
	spec := map[string]any{
		"template": map[string]any{"name": s.Compute.Image.Template},
		"cpu":      map[string]any{"cores": int64(size.CPUs)},
		"memory":   map[string]any{"size": int64(size.MemoryMB)},
		"agent":    map[string]any{"enabled": true},
		"tags":     []any{"k3s", cluster},
		// A cluster's machines are meant to run: apply starts one that
		// was stopped.
		"state": "running",
	}
	if s.Compute.Context != "" {
		spec["context"] = s.Compute.Context
	}
	if size.DiskGB > 0 {
		spec["disks"] = []any{map[string]any{"name": "scsi0", "size": fmt.Sprintf("%dG", size.DiskGB)}}
	}
	switch len(nodes) {
	case 0:
	case 1:
		spec["node"] = nodes[0]
	default:
		spec["nodes"] = toAny(nodes)
	}
	ci := map[string]any{}
	user := s.SSH.User
	if user == "" {
		user = "root"
	}
	ci["user"] = user
	if len(s.SSH.PublicKeys) > 0 {
		ci["sshKeys"] = toAny(s.SSH.PublicKeys)
	}
	ipc := map[string]any{"ip": "dhcp"}
	if ips != nil {
		ipc = map[string]any{"ip": ips.take()}
		if ips.gateway != "" {
			ipc["gateway"] = ips.gateway
		}
	}
	ci["ipConfig"] = map[string]any{"net0": ipc}
	spec["cloudInit"] = ci
	if n := s.Network; n != nil && n.Bridge != "" {
		spec["networks"] = []any{map[string]any{"name": "net0", "bridge": n.Bridge}}
	}
	return &manifest.Resource{APIVersion: vmAPIVersion, Kind: "VirtualMachine", Metadata: manifest.Metadata{Name: name}, Spec: spec}
}

func overlay(a, b SizeSpec) SizeSpec {
	if b.CPUs > 0 {
		a.CPUs = b.CPUs
	}
	if b.MemoryMB > 0 {
		a.MemoryMB = b.MemoryMB
	}
	if b.DiskGB > 0 {
		a.DiskGB = b.DiskGB
	}
	return a
}

func firstNonEmpty(ls ...[]string) []string {
	for _, l := range ls {
		if len(l) > 0 {
			return l
		}
	}
	return nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func k3sSpecMap(k K3sSpec) map[string]any {
	m := map[string]any{"version": k.Version}
	if k.ClusterCIDR != "" {
		m["clusterCIDR"] = k.ClusterCIDR
	}
	if k.ServiceCIDR != "" {
		m["serviceCIDR"] = k.ServiceCIDR
	}
	if f := k.Flannel; f != nil {
		fm := map[string]any{}
		if f.Backend != "" {
			fm["backend"] = f.Backend
		}
		if f.Iface != "" {
			fm["iface"] = f.Iface
		}
		m["flannel"] = fm
	}
	if len(k.Disable) > 0 {
		m["disable"] = toAny(k.Disable)
	}
	if len(k.ExtraArgs) > 0 {
		m["extraArgs"] = toAny(k.ExtraArgs)
	}
	if in := k.Install; in != nil {
		im := map[string]any{}
		if in.Method != "" {
			im["method"] = in.Method
		}
		if in.ScriptURL != "" {
			im["scriptURL"] = in.ScriptURL
		}
		m["install"] = im
	}
	return m
}

// clusterStatus gathers a cluster's status from its nodes' live states.
// With the cluster's agent PKI (a, nil when agents are off), a node is
// ready only when its agent answers too.
//
// onVMs says the nodes run on the cluster's own VMs (named as the nodes),
// which tell a node that is off from one that does not answer.
func (p *Provider) clusterStatus(ctx context.Context, members []nodeRef, ssh SSHSpec, a *agentPKI, onVMs bool) (map[string]any, error) {
	// One node after the other, so that what each host is sent comes in
	// a stable order; a node that does not answer costs at most
	// machineCheckAfter when its VM is down.
	var nodes []any
	ready := 0
	st := map[string]any{}
	version := ""
	for _, m := range members {
		var machines []manifest.ID
		if onVMs {
			machines = []manifest.ID{{APIVersion: vmAPIVersion, Kind: "VirtualMachine", Name: m.Name}}
		}
		ns, answered, err := p.reachableStatus(ctx, m.Name, m.location(ssh), machines)
		if err != nil {
			return nil, err
		}
		var agentVersion any
		if a != nil && answered {
			as, why := p.agentStatus(ctx, m.Address, a)
			if why != "" && ns["phase"] == PhaseReady {
				ns["phase"], ns["message"] = PhaseNotReady, why
			}
			if as != nil {
				agentVersion = as["version"]
			}
		}
		if ns["phase"] == PhaseReady {
			ready++
		}
		v, _ := ns["version"].(string)
		switch {
		case version == "":
			version = v
		case v != version:
			version = "mixed"
		}
		n := map[string]any{"name": m.Name, "role": m.Role, "phase": ns["phase"], "version": v, "address": m.Address}
		if m.SSHHostKey != "" {
			n["sshHostKey"] = m.SSHHostKey
		}
		if agentVersion != nil {
			n["agentVersion"] = agentVersion
		}
		if msg, ok := ns["message"]; ok && ns["phase"] != PhaseReady {
			n["message"] = msg
		}
		nodes = append(nodes, n)
		// The cluster's tokens, kubeconfig and endpoint: the first server
		// that answers.
		if _, ok := st["kubeconfig"]; !ok && ns["kubeconfig"] != nil {
			for _, k := range []string{"token", "agentToken", "kubeconfig"} {
				if v, ok := ns[k]; ok {
					st[k] = v
				}
			}
			st["endpoint"] = ns["url"]
		}
	}
	st["nodes"] = nodes
	st["version"] = version
	if a != nil {
		enc, err := a.encode()
		if err != nil {
			return nil, err
		}
		st["agentPKI"] = enc
	}
	st["readyNodes"] = fmt.Sprintf("%d/%d", ready, len(members))
	if s := sshStatus(ssh); len(s) > 0 {
		st["ssh"] = s
	}
	st["phase"] = PhaseReady
	if ready < len(members) {
		st["phase"] = PhaseNotReady
		st["message"] = fmt.Sprintf("%d of %d nodes are ready", ready, len(members))
	}
	return st, nil
}

// memberHost is where a cluster's node is and its (pooled) SSH
// connection.
func (p *Provider) memberHost(ctx context.Context, m nodeRef, ssh SSHSpec) (*location, *remote.Host, error) {
	loc := m.location(ssh)
	h, err := p.pool.Host(ctx, loc.target())
	if err != nil {
		return nil, nil, p.nodeErr(m.Name, "connect", err)
	}
	return loc, h, nil
}

// location is where m is and how to log in to it.
func (m nodeRef) location(ssh SSHSpec) *location {
	return &location{Role: m.Role, Address: m.Address, SSHHostKey: m.SSHHostKey, SSH: ssh}
}

// nodeRef locates one node of a cluster.
type nodeRef struct {
	Name       string `json:"name"`
	Role       string `json:"role"`
	Address    string `json:"address"`
	SSHHostKey string `json:"sshHostKey,omitempty"`
}

// applyCluster runs once the engine applied the cluster's nodes: it
// gathers their state into the cluster's status.
func (p *Provider) applyCluster(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	s, err := p.clusterSpec(r)
	if err != nil {
		return nil, err
	}
	members, err := layout(r.Metadata.Name, s)
	if err != nil {
		return nil, err
	}
	var refs []nodeRef
	for _, m := range members {
		loc, ok := p.located(m.name)
		if !ok {
			return nil, errcode.New(errcode.Internal, fmt.Sprintf("k3s: cluster %s: node %s was not applied first", r.Metadata.Name, m.name))
		}
		refs = append(refs, nodeRef{Name: m.name, Role: m.role, Address: loc.Address, SSHHostKey: loc.SSHHostKey})
	}
	a, err := p.clusterPKI(ctx, r.Metadata.Name)
	if err != nil {
		return nil, err
	}
	read := func() (map[string]any, error) {
		st, err := p.clusterStatus(ctx, refs, s.SSH, a, len(s.Hosts) == 0)
		if err == nil && s.VIP != nil {
			st["endpoint"] = apiURL(s.VIP.Address)
		}
		return st, err
	}
	st, err := read()
	if err != nil {
		return nil, err
	}
	name := r.Metadata.Name
	// The API, through the endpoint users get: wait for it (the VIP may
	// take a moment to come up), then every node must be Ready there.
	wctx, cancel := context.WithTimeout(ctx, p.cfg.ReadyTimeout)
	defer cancel()
	b := backoff.Policy{Initial: 200 * time.Millisecond, Max: 3 * time.Second, Jitter: 0.1}.Start()
	for {
		err := p.apiStatus(wctx, st, contextName(name, s))
		if err == nil && st["phase"] == PhaseReady {
			break
		}
		why, _ := st["message"].(string)
		if err != nil {
			why = err.Error()
		}
		if werr := b.Wait(wctx); werr != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// Not Transient: the wait already was the retry.
			return nil, errcode.New(errcode.Internal, fmt.Sprintf("k3s: cluster %s: not ready after %s: %s", name, p.cfg.ReadyTimeout, why))
		}
		if st, err = read(); err != nil {
			return nil, err
		}
	}
	if s.VIP == nil {
		st["message"] = "no VIP: the API endpoint is the first server, a single point of failure"
	}
	if err := p.writeKubeconfig(ctx, name, s, st); err != nil {
		return nil, err
	}
	return &manifest.Resource{APIVersion: r.APIVersion, Kind: r.Kind, Metadata: r.Metadata, Spec: r.Spec, Status: st}, nil
}

// contextName is the kubeconfig context of a cluster.
func contextName(cluster string, s *ClusterSpec) string {
	if s.Kubeconfig != nil && s.Kubeconfig.Context != "" {
		return s.Kubeconfig.Context
	}
	return cluster
}

// apiStatus reads the cluster through its API at st["endpoint"] with the
// first server's kubeconfig (st["kubeconfig"], replaced by the one users
// get: pointed at the endpoint, named ctxName), and sets each node's
// phase from the API: Ready only when the host runs k3s and the API has
// the node Ready. A cluster whose API does not answer is Down, one whose
// nodes are not all Ready is Degraded, each message saying why and
// whether etcd keeps its quorum; only a kubeconfig that cannot be used is
// an error.
func (p *Provider) apiStatus(ctx context.Context, st map[string]any, ctxName string) error {
	raw, _ := st["kubeconfig"].(string)
	endpoint, _ := st["endpoint"].(string)
	if raw == "" || endpoint == "" {
		st["phase"] = PhaseNotReady
		st["message"] = "the first server has written no kubeconfig yet"
		return nil
	}
	kc, err := kubeconfig.Rewrite([]byte(raw), endpoint, ctxName)
	if err != nil {
		return err
	}
	st["kubeconfig"] = string(kc)
	cl, err := kubeconfig.Client(kc)
	if err != nil {
		return err
	}
	var nodes []kubeconfig.Node
	rctx, cancel := context.WithTimeout(ctx, readyzTimeout)
	err = cl.Ready(rctx)
	cancel()
	if err == nil {
		nodes, err = cl.Nodes(ctx)
	}
	if err != nil {
		if errcode.Is(err, errcode.Transient) || errcode.Is(err, errcode.Invalid) {
			st["phase"] = PhaseDown
			st["message"] = "the API at " + endpoint + " does not answer: " + err.Error() + quorumNote(st)
			return nil
		}
		return err
	}
	inAPI := map[string]kubeconfig.Node{}
	for _, n := range nodes {
		inAPI[n.Name] = n
	}
	ready, total := 0, 0
	var notReady []string
	list, _ := st["nodes"].([]any)
	for _, e := range list {
		m := e.(map[string]any)
		total++
		name, _ := m["name"].(string)
		n, ok := inAPI[name]
		switch {
		case !ok:
			m["phase"] = "Missing"
			notReady = append(notReady, name+" is not in the API")
		case m["phase"] != PhaseReady:
			why := "on its host"
			if msg, ok := m["message"].(string); ok && msg != "" {
				why = "(" + msg + ")"
			}
			notReady = append(notReady, name+" is "+fmt.Sprint(m["phase"])+" "+why)
		case !n.Ready:
			m["phase"] = PhaseNotReady
			notReady = append(notReady, name+" is not Ready in the API")
		default:
			ready++
		}
		if ok {
			m["roles"] = toAny(n.Roles)
			m["kubeletVersion"] = n.KubeletVersion
		}
	}
	st["readyNodes"] = fmt.Sprintf("%d/%d", ready, total)
	if ready == total {
		st["phase"] = PhaseReady
		delete(st, "message")
		return nil
	}
	st["phase"] = PhaseDegraded
	st["message"] = strings.Join(notReady, "; ") + quorumNote(st)
	return nil
}

// quorumNote says whether etcd keeps its quorum: how many of the servers
// in st["nodes"] have k3s running (their host answers and the service
// is up).
func quorumNote(st map[string]any) string {
	list, _ := st["nodes"].([]any)
	servers, up := 0, 0
	for _, e := range list {
		m, _ := e.(map[string]any)
		if m["role"] != RoleServer {
			continue
		}
		servers++
		if ph := m["phase"]; ph != PhaseUnreachable && ph != PhaseStopped {
			up++
		}
	}
	if servers == 0 {
		return ""
	}
	if up >= servers/2+1 {
		return fmt.Sprintf("; etcd keeps its quorum: %d of %d servers up", up, servers)
	}
	return fmt.Sprintf("; etcd has lost its quorum: %d of %d servers up, %d needed", up, servers, servers/2+1)
}

// writeKubeconfig writes the cluster's kubeconfig (st["kubeconfig"]) to
// KubeconfigDir/<name>.yaml and, when the spec asks, merges it into the
// user's kubeconfig file.
func (p *Provider) writeKubeconfig(ctx context.Context, name string, s *ClusterSpec, st map[string]any) error {
	kc, _ := st["kubeconfig"].(string)
	if kc == "" {
		return nil
	}
	outputs := map[string]any{"context": contextName(name, s)}
	if path := p.kubeconfigPath(name); path != "" {
		if err := kubeconfig.Write(path, []byte(kc)); err != nil {
			return err
		}
		outputs["kubeconfigPath"] = path
	}
	if s.Kubeconfig != nil && s.Kubeconfig.Merge {
		if p.cfg.KubeConfig == "" {
			return errcode.New(errcode.Invalid, fmt.Sprintf("k3s: cluster %s: kubeconfig.merge is set and the provider has no kubeconfig file to merge into (providers.k3s.kubeconfig)", name))
		}
		if err := kubeconfig.Merge(ctx, p.cfg.KubeConfig, []byte(kc)); err != nil {
			return err
		}
		outputs["mergedInto"] = p.cfg.KubeConfig
	}
	st["outputs"] = outputs
	return nil
}

// getCluster reads a cluster from the nodes its record lists.
func (p *Provider) getCluster(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	prior, rec, err := recordedCluster(ctx, id)
	if err != nil {
		return nil, err
	}
	a, err := p.clusterPKI(ctx, id.Name)
	if err != nil {
		return nil, err
	}
	cs, err := p.clusterSpec(prior)
	if err != nil {
		return nil, err
	}
	st, err := p.clusterStatus(ctx, rec.Nodes, rec.SSH, a, len(cs.Hosts) == 0)
	if err != nil {
		return nil, err
	}
	if e, ok := prior.Status["endpoint"]; ok {
		st["endpoint"] = e
	}
	// No server answered over SSH: the API is read with what was
	// recorded, to tell a cluster that serves (Degraded) from one that
	// does not (Down).
	if _, ok := st["kubeconfig"]; !ok {
		for _, k := range []string{"token", "agentToken", "kubeconfig"} {
			if v, ok := prior.Status[k]; ok {
				st[k] = v
			}
		}
	}
	actx, cancel := context.WithTimeout(ctx, apiReadTimeout)
	defer cancel()
	if err := p.apiStatus(actx, st, contextName(id.Name, cs)); err != nil {
		return nil, err
	}
	if cs.VIP == nil && st["phase"] == PhaseReady {
		st["message"] = "no VIP: the API endpoint is the first server, a single point of failure"
	}
	if o, ok := prior.Status["outputs"]; ok {
		st["outputs"] = o
	}
	return &manifest.Resource{APIVersion: id.APIVersion, Kind: id.Kind, Metadata: manifest.Metadata{Name: id.Name, Labels: prior.Metadata.Labels}, Spec: prior.Spec, Status: st}, nil
}

// recordedCluster is a cluster's record (registry.Call.Prior) and the nodes
// it lists; NOT_FOUND when there is none or it lists no nodes.
func recordedCluster(ctx context.Context, id manifest.ID) (*manifest.Resource, *clusterNodes, error) {
	prior := registry.CallOf(ctx).Prior
	if prior == nil {
		return nil, nil, errcode.New(errcode.NotFound, fmt.Sprintf("k3s: %s: not recorded, so its nodes are unknown", id.Short()))
	}
	rec, err := recordedNodes(prior.Status)
	if err != nil || len(rec.Nodes) == 0 {
		return nil, nil, errcode.New(errcode.NotFound, fmt.Sprintf("k3s: %s: its record lists no nodes (never applied?)", id.Short()))
	}
	return prior, rec, nil
}

// clusterNodes are the nodes a cluster's status records, and how to
// reach them.
type clusterNodes struct {
	Nodes []nodeRef `json:"nodes"`
	SSH   SSHSpec   `json:"ssh"`
}

// recordedNodes reads the nodes a cluster's recorded status lists.
func recordedNodes(status map[string]any) (*clusterNodes, error) {
	var c clusterNodes
	return &c, fromMap(status, &c)
}

// fromMap decodes the fields of m that v has (a recorded status, which
// holds more) into v.
func fromMap(m map[string]any, v any) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// apiReadTimeout bounds reading a cluster's API for its status.
const apiReadTimeout = 15 * time.Second

// readyzTimeout bounds the API's /readyz, which a kube-apiserver whose
// etcd lost its quorum leaves unanswered: longer is Down.
const readyzTimeout = 5 * time.Second

// deleteCluster removes the kubeconfig of a cluster whose nodes the engine
// deleted: its file, and its entries in the user's kubeconfig when they
// were merged there.
func (p *Provider) deleteCluster(ctx context.Context, id manifest.ID) error {
	prior := registry.CallOf(ctx).Prior
	if prior == nil {
		return nil
	}
	cs, err := p.clusterSpec(prior)
	if err != nil {
		return nil // not one this provider could have written
	}
	if cs.Kubeconfig != nil && cs.Kubeconfig.Merge && p.cfg.KubeConfig != "" {
		if err := kubeconfig.Remove(ctx, p.cfg.KubeConfig, contextName(id.Name, cs)); err != nil {
			return err
		}
	}
	if path := p.kubeconfigPath(id.Name); path != "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return errcode.Wrap(errcode.Internal, "k3s: removing "+path, err)
		}
	}
	return nil
}
