package k3s

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/k3s/kubeconfig"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/remote"
)

// The phases of a node and of a cluster. A node is Ready, NotReady
// (its k3s runs but the API does not have it Ready), Stopped (its VM is
// off, or its k3s service is not running: the message says which) or
// Unreachable (its host does not answer; the message says how it
// failed). A cluster is Ready, Degraded (its API
// answers but not every node is Ready: the message names them and says
// whether etcd keeps its quorum), Down (no server answers) or NotReady
// (still being made: no kubeconfig yet).
const (
	PhaseReady       = "Ready"
	PhaseNotReady    = "NotReady"
	PhaseStopped     = "Stopped"
	PhaseUnreachable = "Unreachable"
	PhaseDegraded    = "Degraded"
	PhaseDown        = "Down"
)

// target is how to reach a node.
func target(address string, sshHostKey string, s SSHSpec) remote.Target {
	t := remote.Target{Host: address, Port: s.Port, User: s.User, PrivateKeyPath: s.PrivateKeyPath}
	if sshHostKey != "" {
		t.HostKeys.Pinned = []string{sshHostKey}
	}
	t.HostKeys.KnownHosts = remote.DefaultKnownHosts()
	if len(s.KnownHosts) > 0 {
		t.HostKeys.KnownHosts = s.KnownHosts
	}
	t.HostKeys.TrustOnFirstUse = s.TrustOnFirstUse
	return t
}

// location is where a node is, as its status records it.
type location struct {
	Role       string  `json:"role"`
	Address    string  `json:"address"`
	SSHHostKey string  `json:"sshHostKey,omitempty"`
	SSH        SSHSpec `json:"ssh"`
}

func (l *location) target() remote.Target { return target(l.Address, l.SSHHostKey, l.SSH) }

// priorLocation reads a node's location from the state's record.
func priorLocation(ctx context.Context, id manifest.ID) (*location, error) {
	prior := registry.CallOf(ctx).Prior
	if prior == nil {
		return nil, errcode.New(errcode.NotFound, fmt.Sprintf("k3s: %s: not recorded, so its host is unknown", id.Short()))
	}
	l := &location{}
	if err := fromMap(prior.Status, l); err != nil {
		return nil, errcode.Wrap(errcode.Internal, "k3s: "+id.Short()+": its recorded status", err)
	}
	if l.Address == "" || (l.Role != RoleServer && l.Role != RoleAgent) {
		return nil, errcode.New(errcode.NotFound, fmt.Sprintf("k3s: %s: its record says nothing of its host (never applied?)", id.Short()))
	}
	return l, nil
}

// applyNode installs k3s on the node's host, or leaves it alone when what
// is there already matches, and waits until it is ready: the steps of a
// nodeApply, in order.
func (p *Provider) applyNode(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	s, err := p.nodeSpec(r)
	if err != nil {
		return nil, err
	}
	name := r.Metadata.Name
	// Which cluster to join is settled before anything touches the host.
	if err := p.joinInfo(ctx, name, s); err != nil {
		return nil, err
	}
	n, err := p.inspectNode(ctx, name, s)
	if err != nil {
		return nil, err
	}
	for _, step := range []func(context.Context) error{n.upgradeThroughAgent, n.settleConfig, n.forgetReplaced, n.install, n.rejoinIfMissing, n.start} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	st, err := n.finish(ctx)
	if err != nil {
		return nil, err
	}
	return &manifest.Resource{APIVersion: r.APIVersion, Kind: r.Kind, Metadata: r.Metadata, Spec: r.Spec, Status: st}, nil
}

// nodeApply is one Apply of a Node: what its steps learn and share.
type nodeApply struct {
	p    *Provider
	name string
	s    *NodeSpec
	loc  *location
	h    *remote.Host
	pr   *probe // what the host has, read again after an upgrade
	a    *agentPKI
	// withAgent: the node gets openctl's agent; agentUp: it answers now,
	// so day-2 steps go through it.
	withAgent, agentUp bool
	// env and args are the service's environment file and flags.
	env  []byte
	args []string
	// changed: something the service reads was written, so it starts
	// (or restarts).
	changed bool
}

// inspectNode connects to the node's host and reads what it has and
// whether its agent answers.
func (p *Provider) inspectNode(ctx context.Context, name string, s *NodeSpec) (*nodeApply, error) {
	n := &nodeApply{p: p, name: name, s: s, loc: &location{Role: s.Role, Address: s.Address, SSHHostKey: s.SSHHostKey, SSH: s.SSH}}
	h, err := p.pool.Host(ctx, n.loc.target())
	if err != nil {
		return nil, p.nodeErr(name, "connect", err)
	}
	n.h = h
	registry.CallOf(ctx).ReportStep("inspecting " + h.Addr())
	if n.pr, err = probeHost(ctx, h, service(s.Role), s.Address); err != nil {
		return nil, p.nodeErr(name, "inspect", err)
	}
	if n.a, n.withAgent, err = p.nodePKI(ctx, firstOf(s.Cluster, name), s); err != nil {
		return nil, p.nodeErr(name, "read the agent PKI", err)
	}
	if n.withAgent && n.pr.binary != "" {
		_, why := p.agentStatus(ctx, s.Address, n.a)
		n.agentUp = why == ""
	}
	return n, nil
}

// upgradeThroughAgent upgrades a running node at another version through
// its agent (drained, upgraded, uncordoned); without an agent, install
// writes the new binary and start restarts k3s.
func (n *nodeApply) upgradeThroughAgent(ctx context.Context) error {
	s, pr := n.s, n.pr
	if pr.version == "" || pr.version == s.K3s.Version {
		return nil
	}
	if err := checkUpgrade(n.name, pr.version, s.K3s.Version); err != nil {
		return err
	}
	if !n.agentUp || !pr.active || s.K3s.method() != InstallUpload {
		return nil
	}
	api, err := n.p.nodeAPI(ctx, n.h, n.name, n.loc, s)
	if err != nil {
		return n.p.nodeErr(n.name, "reach the cluster's API", err)
	}
	if err := n.p.upgradeNode(ctx, api.Kubernetes(), n.h, n.name, n.loc, s, n.a, pr.version); err != nil {
		return err
	}
	if n.pr, err = probeHost(ctx, n.h, service(s.Role), s.Address); err != nil {
		return n.p.nodeErr(n.name, "inspect", err)
	}
	return nil
}

// settleConfig decides the service's environment and flags. The first
// server's tokens are what it has, else what the spec says, else new
// ones — never changed once set.
func (n *nodeApply) settleConfig(ctx context.Context) error {
	s := n.s
	token, agentToken := s.Token, s.AgentToken
	if s.Init {
		have, haveAgent, err := existingTokens(ctx, n.h, envPath(n.pr.init, s.Role))
		if err != nil {
			return n.p.nodeErr(n.name, "read its environment file", err)
		}
		token = firstOf(have, password(token), newPassword())
		agentToken = firstOf(haveAgent, password(agentToken), newPassword())
	}
	n.env = envFile(s.Role, token, agentToken)
	n.args = nodeArgs(n.name, s)
	return nil
}

// start starts k3s when something changed or it is not running: a node
// only stopped through its agent, anything else over SSH (restarting a
// running one whose configuration changed).
func (n *nodeApply) start(ctx context.Context) error {
	pr := n.pr
	switch {
	case !n.changed && !pr.active && n.agentUp:
		registry.CallOf(ctx).ReportStep("starting k3s through its agent")
		c, err := n.p.agentClient(n.s.Address, n.a)
		if err == nil {
			err = c.Start(ctx)
		}
		if err != nil {
			return n.p.nodeErr(n.name, "start k3s through the agent", err)
		}
	case n.changed || !pr.active:
		registry.CallOf(ctx).ReportStep("starting k3s")
		if _, err := n.h.Run(ctx, remote.Command{Step: "start k3s", Script: startScript(pr.init, n.s.Role, n.changed && pr.active)}); err != nil {
			return n.p.nodeErr(n.name, "start k3s", err)
		}
	}
	return nil
}

// finish waits for the node to be ready (and the first server's VIP to
// answer), installs the agent, and returns the node's status.
func (n *nodeApply) finish(ctx context.Context) (map[string]any, error) {
	p, s := n.p, n.s
	registry.CallOf(ctx).ReportStep("waiting for the node to be ready")
	st, err := p.waitReady(ctx, n.h, n.name, n.loc, s)
	if err != nil {
		return nil, err
	}
	if s.Init && s.VIP != nil {
		registry.CallOf(ctx).ReportStep("waiting for the VIP " + s.VIP.Address + " to answer")
		if err := p.waitVIP(ctx, n.name, st, s.VIP.Address); err != nil {
			return nil, err
		}
	}
	if n.withAgent {
		registry.CallOf(ctx).ReportStep("installing the agent")
		info, err := p.installAgent(ctx, n.h, n.pr.init, n.pr.uname, n.name, s.Address, n.a)
		if err != nil {
			return nil, p.nodeErr(n.name, "install the agent", err)
		}
		st["agent"] = map[string]any{"version": info.AgentVersion, "address": net.JoinHostPort(s.Address, strconv.Itoa(p.agentPort()))}
		enc, err := n.a.encode()
		if err != nil {
			return nil, p.nodeErr(n.name, "keep the agent PKI", err)
		}
		st["agentPKI"] = enc
		if s.Cluster != "" {
			p.pkis.Store(s.Cluster, n.a)
		}
	}
	p.locs.Store(n.name, n.loc)
	if s.Cluster != "" {
		st["cluster"] = s.Cluster // the one it joined, even when its spec named none
	}
	return st, nil
}

// waitVIP waits until the cluster's API answers on the VIP with a
// certificate the cluster's CA signed for it: kube-vip runs and holds it.
func (p *Provider) waitVIP(ctx context.Context, name string, st map[string]any, vip string) error {
	raw, _ := st["kubeconfig"].(string)
	api, err := clusterAPI(raw, apiURL(vip), "vip")
	if err != nil {
		return p.nodeErr(name, "read its kubeconfig", err)
	}
	wctx, cancel := context.WithTimeout(ctx, p.cfg.ReadyTimeout)
	defer cancel()
	b := backoff.Policy{Initial: 200 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.1}.Start()
	for {
		err := api.Ready(wctx)
		if err == nil {
			return nil
		}
		if werr := b.Wait(wctx); werr != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return errcode.New(errcode.Internal, fmt.Sprintf("k3s: node %s: the VIP %s does not serve the API after %s (is kube-vip running? spec.vip.interface?): %v", name, vip, p.cfg.ReadyTimeout, err))
		}
	}
}

// firstOf returns the first non-empty string.
func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// password returns the password part of a token ("K10…::server:pw" or
// a bare password).
func password(token string) string {
	if i := strings.LastIndex(token, ":"); i >= 0 && strings.HasPrefix(token, "K10") {
		return token[i+1:]
	}
	return token
}

// waitReady polls the node's status until it is Ready or the ready
// timeout passes. A joining node must also show up Ready in the API of
// the cluster it joins (s.Kubeconfig, through s.Server) — the proof it
// joined that cluster and did not start one of its own — and a joining
// server's CA must be the cluster's: a different one fails at once.
func (p *Provider) waitReady(ctx context.Context, h *remote.Host, name string, loc *location, s *NodeSpec) (map[string]any, error) {
	wctx, cancel := context.WithTimeout(ctx, p.cfg.ReadyTimeout)
	defer cancel()
	var api *kubeconfig.Cluster
	if !s.Init && s.Kubeconfig != "" {
		var err error
		if api, err = clusterAPI(s.Kubeconfig, s.Server, "join"); err != nil {
			return nil, p.nodeErr(name, "read the cluster's kubeconfig", err)
		}
	}
	// The first read is a whole one: a node that is already Ready (a
	// no-op apply) costs one command. While it is not, the polls read
	// less — no k3s --version, no files, and for a joining node, whose
	// readiness this checks in the cluster's API, no kubectl on the node
	// either — and a whole read follows the poll that finds it Ready.
	b := backoff.Policy{Initial: 200 * time.Millisecond, Max: 3 * time.Second, Jitter: 0.1}.Start()
	poll := readPoll
	if api != nil {
		poll = readService
	}
	read := readWhole
	for {
		st, err := p.readNode(wctx, h, name, loc, read)
		why := ""
		switch {
		case err != nil:
			why = err.Error()
		case st["phase"] != PhaseReady:
			why = fmt.Sprint(st["message"])
		case read == readWhole && s.Role == RoleServer && !s.Init && caHash(st["token"]) != caHash(s.Token):
			return nil, errcode.New(errcode.Internal, fmt.Sprintf("k3s: node %s (%s): it runs a cluster of its own (CA hash %s), not the one it was to join (%s): delete it and its data (/var/lib/rancher/k3s) before joining it again",
				name, h.Addr(), caHash(st["token"]), caHash(s.Token)))
		case api != nil:
			why = inAPI(wctx, api, name)
		}
		switch {
		case why == "" && read == readWhole:
			return st, nil
		case why == "":
			read = readWhole // Ready: now the whole status, at once
			continue
		}
		read = poll
		if werr := b.Wait(wctx); werr != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// Not Transient: the wait already was the retry.
			return nil, errcode.New(errcode.Internal, fmt.Sprintf("k3s: node %s (%s): not ready after %s: %s%s", name, h.Addr(), p.cfg.ReadyTimeout, why, lastLogged(ctx, h, loc.Role)))
		}
	}
}

// lastLogScript prints the last lines the node's k3s service logged: its
// journal under systemd, its log file under OpenRC.
const lastLogScript = `svc=$1
if [ -d /run/systemd/system ] && command -v journalctl >/dev/null 2>&1; then
  journalctl -u "$svc" -n 20 --no-pager -o cat 2>/dev/null
else
  tail -n 20 /var/log/$svc.log 2>/dev/null
fi
exit 0`

// lastLogged is "; k3s last logged: <line>" — the last fatal or error
// line of the node's k3s log, else its last line — or "" when there is
// none to read: what a node that does not become ready says about why.
func lastLogged(ctx context.Context, h *remote.Host, role string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := h.Run(ctx, remote.Command{Step: "read k3s's last log lines", Script: "set -- " + service(role) + "\n" + lastLogScript})
	if err != nil {
		return ""
	}
	if line := lastLogLine(string(res.Stdout)); line != "" {
		return "; k3s last logged: " + line
	}
	return ""
}

// lastLogLine is the last fatal or error line of log, else its last
// line.
func lastLogLine(log string) string {
	var last, bad string
	for line := range strings.Lines(log) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		last = line
		if strings.Contains(line, "level=fatal") || strings.Contains(line, "level=error") {
			bad = line
		}
	}
	if bad != "" {
		return bad
	}
	return last
}

// inAPI returns why node name is not Ready in the cluster's API, or "".
func inAPI(ctx context.Context, api *kubeconfig.Cluster, name string) string {
	nodes, err := api.Nodes(ctx)
	if err != nil {
		return err.Error()
	}
	for _, n := range nodes {
		if n.Name == name {
			if n.Ready {
				return ""
			}
			return "the Node is not Ready in the cluster's API yet"
		}
	}
	return "the Node has not registered with the cluster's API at " + api.Server() + " yet"
}

// caHash is the CA hash of a K10 token, or "" for any other value.
func caHash(token any) string {
	t, _ := token.(string)
	h, _, ok := strings.Cut(strings.TrimPrefix(t, "K10"), "::")
	if !ok || !strings.HasPrefix(t, "K10") {
		return ""
	}
	return h
}

// nodeStatusScript prints the node's state as key=value lines and, for a
// server, its token files and kubeconfig between markers. Its third
// argument is a nodeRead: what to leave out.
const nodeStatusScript = `svc=$1 name=$2 read=$3
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  [ -e /etc/systemd/system/$svc.service ] && echo installed=1
  echo "state=$(systemctl is-active "$svc")"
else
  [ -e /etc/init.d/$svc ] && echo installed=1
  rc-service "$svc" status >/dev/null 2>&1 && echo state=active || echo state=inactive
fi
[ "$read" = service ] && exit 0
[ "$read" = whole ] && [ -x ` + binPath + ` ] && echo "version=$(` + binPath + ` --version 2>/dev/null | head -n1 | cut -d' ' -f3)"
ready() { ` + binPath + ` kubectl --kubeconfig="$1" --request-timeout=5s get node "$name" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null; }
if [ "$svc" = k3s-agent ] && [ -e ` + kubeletKubeconfig + ` ]; then
  echo "ready=$(ready ` + kubeletKubeconfig + `)"
fi
if [ "$svc" = k3s ] && [ -e ` + kubeconfigOut + ` ]; then
  echo "ready=$(ready ` + kubeconfigOut + `)"
  [ "$read" = whole ] && for f in ` + tokenPath + ` ` + agentTokPath + ` ` + kubeconfigOut + `; do
    echo "--- $f"; cat "$f" 2>/dev/null; echo
  done
fi
exit 0`

// nodeRead is how much of a node's state a read takes.
type nodeRead string

const (
	// readWhole is the whole status: the service, the version, readiness
	// in the API (kubectl on the node) and a server's tokens and
	// kubeconfig.
	readWhole nodeRead = "whole"
	// readPoll is the service and readiness in the API, for a wait.
	readPoll nodeRead = "poll"
	// readService is the service alone, for a wait that checks the
	// node's readiness in the cluster's API itself: a Ready phase then
	// only says the service runs.
	readService nodeRead = "service"
)

// reachableStatus reads a node's status over SSH (nodeStatus); answered
// says its host answered. A node whose host does not answer is a status,
// not an error: as its machine says (machineDown: Stopped, or Unreachable
// for a VM that does not exist) — asked once the host has taken
// machineCheckAfter to answer, so a powered-off node reads at once, not
// after a connect timeout — else Unreachable with how the host failed.
// Only the end of ctx is an error.
func (p *Provider) reachableStatus(ctx context.Context, name string, loc *location, machines []manifest.ID) (st map[string]any, answered bool, err error) {
	// A host that does not answer at once may be one whose machine is
	// off, which its VM tells sooner than a connect timeout (or a pooled
	// connection to a host that is gone) does.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type read struct {
		st  map[string]any
		err error
	}
	ch := make(chan read, 1)
	go func() {
		h, err := p.pool.Host(rctx, loc.target())
		if err != nil {
			ch <- read{err: p.nodeErr(name, "connect", err)}
			return
		}
		st, err := p.nodeStatus(rctx, h, name, loc)
		ch <- read{st, err}
	}()
	var r read
	asked := false // the machines were asked already, and were not down
	select {
	case r = <-ch:
	case <-time.After(machineCheckAfter):
		if m, gone, down := machineDown(ctx, machines); down {
			return downStatus(m, gone), false, nil
		}
		asked = true
		r = <-ch
	}
	st, err = r.st, r.err
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		if !asked {
			if m, gone, down := machineDown(ctx, machines); down {
				return downStatus(m, gone), false, nil
			}
		}
		return map[string]any{"phase": PhaseUnreachable, "message": err.Error()}, false, nil
	}
	return st, true, nil
}

// machineCheckAfter is how long reachableStatus lets a host take to
// answer before it asks the host's machine whether it is off.
const machineCheckAfter = time.Second

// machineDown says, through registry.Call.Read, whether one of machines
// (the VM a node runs on) is down: stopped, or gone (it does not exist).
// A machine that cannot be read otherwise is not taken for down.
func machineDown(ctx context.Context, machines []manifest.ID) (id manifest.ID, gone, down bool) {
	read := registry.CallOf(ctx).Read
	if read == nil {
		return manifest.ID{}, false, false
	}
	for _, id := range machines {
		r, err := read(ctx, id)
		switch {
		case errcode.Is(err, errcode.NotFound):
			return id, true, true
		case err != nil:
			continue
		}
		if state, _ := r.Status["state"].(string); state == "stopped" {
			return id, false, true
		}
	}
	return manifest.ID{}, false, false
}

// machinesOf lists what a node's recorded spec refers to outside this
// provider: the VM it runs on (its address and host key are $refs to
// it), not the other nodes it takes tokens from.
func machinesOf(prior *manifest.Resource) []manifest.ID {
	deps, _ := refs.Dependencies(prior)
	return slices.DeleteFunc(deps, func(id manifest.ID) bool { return id.APIVersion == APIVersion })
}

// downStatus is the status of a node whose machine is down: Stopped, or
// Unreachable when it is gone.
func downStatus(id manifest.ID, gone bool) map[string]any {
	if gone {
		return map[string]any{"phase": PhaseUnreachable, "message": "its " + id.Kind + " " + id.Name + " does not exist (destroyed outside openctl?): apply creates it again"}
	}
	return map[string]any{"phase": PhaseStopped, "message": "its " + id.Kind + " " + id.Name + " is stopped"}
}

// nodeStatus reads the node's whole status from its host.
func (p *Provider) nodeStatus(ctx context.Context, h *remote.Host, name string, loc *location) (map[string]any, error) {
	return p.readNode(ctx, h, name, loc, readWhole)
}

// readNode reads the node's status from its host, as much as read says;
// the statuses of the lighter reads are only for waiting on.
func (p *Provider) readNode(ctx context.Context, h *remote.Host, name string, loc *location, read nodeRead) (map[string]any, error) {
	res, err := h.Run(ctx, remote.Command{Step: "read the node's state", Script: "set -- " + service(loc.Role) + " " + remote.Quote(name) + " " + string(read) + "\n" + nodeStatusScript})
	if err != nil {
		return nil, err
	}
	kv := map[string]string{}
	files := map[string]string{}
	cur := ""
	for _, line := range strings.SplitAfter(string(res.Stdout), "\n") {
		switch {
		case strings.HasPrefix(line, "--- "):
			cur = strings.TrimSpace(strings.TrimPrefix(line, "--- "))
		case cur != "":
			files[cur] += line
		default:
			k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
			kv[k] = v
		}
	}
	if kv["installed"] != "1" {
		return nil, errcode.New(errcode.NotFound, fmt.Sprintf("k3s: node %s: k3s is not installed on %s", name, h.Addr()))
	}
	st := map[string]any{
		"role":    loc.Role,
		"address": loc.Address,
		"version": kv["version"],
		"service": kv["state"],
	}
	if loc.SSHHostKey != "" {
		st["sshHostKey"] = loc.SSHHostKey
	}
	if ssh := sshStatus(loc.SSH); len(ssh) > 0 {
		st["ssh"] = ssh
	}
	switch {
	case kv["state"] != "active":
		st["phase"] = PhaseStopped
		st["message"] = "the " + service(loc.Role) + " service is " + kv["state"]
	case read == readService:
		st["phase"] = PhaseReady // the service runs: the caller checks the API
	case kv["ready"] == "":
		st["phase"] = PhaseNotReady
		st["message"] = "the Node is not in the cluster's API (or the API does not answer)"
	case kv["ready"] != "True":
		st["phase"] = PhaseNotReady
		st["message"] = "the Node is not Ready in the API yet"
	default:
		st["phase"] = PhaseReady
	}
	if loc.Role == RoleServer {
		st["url"] = apiURL(loc.Address)
		if t := strings.TrimSpace(files[tokenPath]); t != "" {
			st["token"] = t
		}
		if t := strings.TrimSpace(files[agentTokPath]); t != "" {
			st["agentToken"] = t
		}
		if k := strings.TrimSpace(files[kubeconfigOut]); k != "" {
			st["kubeconfig"] = k + "\n"
		}
	}
	return st, nil
}

// sshStatus is the SSH settings recorded in a node's status, so that a
// later Get can reach it.
func sshStatus(s SSHSpec) map[string]any {
	m := map[string]any{}
	if s.User != "" {
		m["user"] = s.User
	}
	if s.Port != 0 {
		m["port"] = int64(s.Port)
	}
	if s.PrivateKeyPath != "" {
		m["privateKeyPath"] = s.PrivateKeyPath
	}
	if len(s.KnownHosts) > 0 {
		l := make([]any, len(s.KnownHosts))
		for i, f := range s.KnownHosts {
			l[i] = f
		}
		m["knownHosts"] = l
	}
	if s.TrustOnFirstUse {
		m["trustOnFirstUse"] = true
	}
	return m
}

// getNode reads a node from its host.
func (p *Provider) getNode(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	loc, err := priorLocation(ctx, id)
	if err != nil {
		return nil, err
	}
	prior := registry.CallOf(ctx).Prior
	st, answered, err := p.reachableStatus(ctx, id.Name, loc, machinesOf(prior))
	if err != nil {
		return nil, err
	}
	if !answered {
		// What was recorded of it (its cluster, address, tokens) with the
		// phase and why its host did not answer.
		ph, why := st["phase"], st["message"]
		st = maps.Clone(prior.Status)
		st["phase"], st["message"] = ph, why
		return &manifest.Resource{APIVersion: id.APIVersion, Kind: id.Kind, Metadata: manifest.Metadata{Name: id.Name, Labels: prior.Metadata.Labels}, Spec: prior.Spec, Status: st}, nil
	}
	p.locs.Store(id.Name, loc)
	if c, ok := prior.Status["cluster"]; ok {
		st["cluster"] = c
	}
	if a, ok := priorPKI(ctx); ok {
		st["agentPKI"] = prior.Status["agentPKI"]
		if c, ok := prior.Status["cluster"].(string); ok {
			p.pkis.Store(c, a)
		}
		as, why := p.agentStatus(ctx, loc.Address, a)
		if why != "" && st["phase"] == PhaseReady {
			st["phase"], st["message"] = PhaseNotReady, why
		}
		if as != nil {
			st["agent"] = as
		}
	}
	return &manifest.Resource{APIVersion: id.APIVersion, Kind: id.Kind, Metadata: manifest.Metadata{Name: id.Name, Labels: prior.Metadata.Labels}, Spec: prior.Spec, Status: st}, nil
}

// uninstallScript stops and removes k3s as the installer's uninstall
// script does, keeping /etc/rancher/node (the node password), and the
// node's agent.
const uninstallScript = `svc=$1
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  for s in "$svc" ` + agent.ServiceName + `; do
    systemctl disable --now "$s" >/dev/null 2>&1 || true
    rm -f /etc/systemd/system/$s.service /etc/systemd/system/$s.service.env
  done
  systemctl daemon-reload
else
  for s in "$svc" ` + agent.ServiceName + `; do
    rc-service "$s" stop >/dev/null 2>&1 || true
    rc-update del "$s" default >/dev/null 2>&1 || true
    rm -f /etc/init.d/$s /var/log/$s.log
  done
fi
rm -rf ` + agent.DefaultConfigDir + ` ` + agent.DefaultBinaryPath + `
pkill -KILL -x k3s-server 2>/dev/null || true
for l in kubectl crictl ctr; do
  case $(readlink /usr/local/bin/$l 2>/dev/null) in k3s|*/k3s) rm -f /usr/local/bin/$l ;; esac
done
rm -f /usr/local/bin/k3s-killall.sh /usr/local/bin/$svc-uninstall.sh
rm -rf /etc/rancher/k3s /run/k3s /run/flannel ` + dataDir + ` /var/lib/kubelet ` + binPath + `
exit 0`

// deleteNode uninstalls k3s from the node's host.
func (p *Provider) deleteNode(ctx context.Context, id manifest.ID) error {
	loc, err := priorLocation(ctx, id)
	if errcode.Is(err, errcode.NotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	// Deleted with its whole cluster, a node needs no draining: the
	// cluster goes.
	if !registry.CallOf(ctx).Cascade {
		if err := p.removeFromCluster(ctx, id.Name, registry.CallOf(ctx).Prior); err != nil {
			return err
		}
	}
	call := registry.CallOf(ctx)
	h, err := p.pool.Host(ctx, loc.target())
	if err != nil {
		m, gone, down := machineDown(ctx, machinesOf(call.Prior))
		switch {
		case !down:
			return p.nodeErr(id.Name, "connect", err)
		case gone || call.Cascade || call.Parent != nil:
			// Its VM is gone, or off and going in the same operation
			// (the cluster is deleted, or shrinks by this node): nothing
			// runs there to uninstall.
			call.ReportStep(fmt.Sprint(downStatus(m, gone)["message"]) + ": nothing to uninstall")
			if !call.Cascade {
				return p.forgetNode(ctx, id.Name, call.Prior)
			}
			return nil
		}
		return errcode.New(errcode.Invalid, fmt.Sprintf("k3s: node %s: its %s %s is stopped, so k3s cannot be uninstalled from it: start it (openctl proxmox start vm %s) and delete the node again, or delete the VM with it", id.Name, m.Kind, m.Name, m.Name))
	}
	call.ReportStep("uninstalling k3s")
	_, err = h.Run(ctx, remote.Command{Step: "uninstall k3s", Script: "set -- " + service(loc.Role) + "\n" + uninstallScript})
	if err != nil {
		return p.nodeErr(id.Name, "uninstall", err)
	}
	if !call.Cascade {
		return p.forgetNode(ctx, id.Name, call.Prior)
	}
	return nil
}

// nodeErr names the node and the step in err (nil stays nil).
func (p *Provider) nodeErr(name, step string, err error) error {
	if err == nil {
		return nil
	}
	return errcode.Wrap(errcode.Of(err), fmt.Sprintf("k3s: node %s: %s", name, step), err)
}

// apiURL is the URL of the API (and supervisor) a server or VIP at host
// serves.
func apiURL(host string) string { return "https://" + net.JoinHostPort(host, "6443") }

// Diff reports what a plan and a drift check see: a node whose host runs
// another k3s version than the spec, or whose service is not running, is
// updated (reinstalled or restarted); changes of the spec itself are the
// engine's to see. A cluster's own changes are its nodes'. A version
// apply would refuse (a downgrade, a skipped minor) is refused here with
// apply's error, so that plan says it first.
func (p *Provider) Diff(_ context.Context, desired, live *manifest.Resource) (registry.Diff, error) {
	// A cluster's nodes do the work; the cluster says what is wrong as a
	// whole: a node missing from the API or not Ready, versions that
	// differ from the spec.
	what, runner := "node", "host"
	if desired.Kind == KindCluster {
		what, runner = "cluster", "cluster"
	}
	d := registry.Diff{Action: registry.DiffNone}
	str := func(m map[string]any, k string) string { v, _ := m[k].(string); return v }
	want, _ := desired.Spec["k3s"].(map[string]any)
	if v, have := str(want, "version"), str(live.Status, "version"); v != "" && have != v {
		if what == "node" {
			// What apply would refuse, plan refuses the same way.
			if err := checkUpgrade(desired.Metadata.Name, have, v); err != nil {
				return registry.Diff{}, err
			}
		}
		d.Action = registry.DiffUpdate
		d.Reasons = append(d.Reasons, fmt.Sprintf("the %s runs k3s %s, the spec says %s", runner, orNone([]string{have}), v))
		if what == "node" {
			d.Fields = append(d.Fields, manifest.FieldChange{Path: "status.version", Old: have, New: v})
		}
	}
	if phase := str(live.Status, "phase"); phase != PhaseReady {
		d.Action = registry.DiffUpdate
		d.Reasons = append(d.Reasons, fmt.Sprintf("the %s is %s: %s", what, phase, str(live.Status, "message")))
	}
	return d, nil
}
