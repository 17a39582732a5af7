package proxmox

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	pve "github.com/luthermonson/go-proxmox"
	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
)

// vmRef locates a VM.
type vmRef struct {
	c    *conn
	node string
	vmid int
}

func (v vmRef) path(suffix string) string {
	return fmt.Sprintf("/nodes/%s/qemu/%d%s", v.node, v.vmid, suffix)
}

// namedVMs lists the (non-template) QEMU VMs named name.
func namedVMs(rs []clusterResource, name string) []*clusterResource {
	var found []*clusterResource
	for i := range rs {
		r := &rs[i]
		if r.Type == "qemu" && r.Template == 0 && r.Name == name {
			found = append(found, r)
		}
	}
	return found
}

// pickVM finds the VM named name for the caller (registry.Call.Owner); nil if
// there is none. Several VMs of one name (two openctl installations with
// different state stores created it at once) are told apart by the owner
// their markers name: the caller's, else the one no owner claims. When
// every one belongs to another owner, the first is returned (and refused
// by planChanges or deleteVM as ALREADY_EXISTS). Only then are configs
// read.
func (p *Provider) pickVM(ctx context.Context, c *conn, rs []clusterResource, name string) (*clusterResource, error) {
	found := namedVMs(rs, name)
	if len(found) <= 1 {
		if len(found) == 0 {
			return nil, nil
		}
		return found[0], nil
	}
	owner := registry.CallOf(ctx).Owner
	var mine, free, all []*clusterResource
	var desc []string
	for _, r := range found {
		conf, err := c.vmConfig(ctx, r.Node, r.VMID)
		if errcode.Is(err, errcode.NotFound) {
			continue // destroyed meanwhile
		}
		if err != nil {
			return nil, err
		}
		all = append(all, r)
		_, m, managed := splitDescription(conf["description"])
		switch {
		case !managed:
			free = append(free, r)
			desc = append(desc, fmt.Sprintf("%d on %s, not created by openctl", r.VMID, r.Node))
		case m.owner == "":
			free = append(free, r)
			desc = append(desc, fmt.Sprintf("%d on %s, no owner", r.VMID, r.Node))
		default:
			if m.owner == owner {
				mine = append(mine, r)
			}
			desc = append(desc, fmt.Sprintf("%d on %s, owner %s", r.VMID, r.Node, m.owner))
		}
	}
	switch {
	case len(all) <= 1:
		if len(all) == 0 {
			return nil, nil
		}
		return all[0], nil
	case len(mine) == 1:
		return mine[0], nil
	case len(mine) == 0 && len(free) == 1:
		return free[0], nil
	case len(mine) == 0 && len(free) == 0:
		return all[0], nil
	}
	return nil, errcode.New(errcode.AlreadyExists, fmt.Sprintf("several VMs are named %s (%s) and openctl cannot tell which one is this state's: "+
		"openctl needs VM names to be unique; remove or rename the ones not wanted", name, strings.Join(desc, "; ")))
}

// locate finds the context and cluster entry of the VM named name. It
// tries the context Validate/Apply saw it in first, then every context.
func (p *Provider) locate(ctx context.Context, name string) (*conn, *clusterResource, error) {
	p.mu.Lock()
	known, ok := p.where[name]
	p.mu.Unlock()
	order := p.order
	if ok {
		order = append([]string{known}, without(p.order, known)...)
	}
	for _, cn := range order {
		c := p.conns[cn]
		if c == nil {
			return nil, nil, p.broken[cn]
		}
		rs, err := c.resources(ctx)
		if err != nil {
			return nil, nil, err
		}
		r, err := p.pickVM(ctx, c, rs, name)
		if err != nil {
			return nil, nil, err
		}
		if r != nil {
			return c, r, nil
		}
		if ok {
			break // the spec names its context: do not look elsewhere
		}
	}
	return nil, nil, nil
}

// locateSettled is locate, after waiting for the tasks running on the VM
// (awaitVMTasks) and looking again: Delete and actions never act on a VM
// a destroy, start or shutdown started elsewhere is still changing.
func (p *Provider) locateSettled(ctx context.Context, name string) (*conn, *clusterResource, error) {
	const rounds = 5
	for range rounds {
		c, r, err := p.locate(ctx, name)
		if err != nil || r == nil {
			return c, r, err
		}
		waited, err := p.awaitVMTasks(ctx, c, r.Node, r.VMID)
		if err != nil {
			return nil, nil, err
		}
		if !waited {
			return c, r, nil
		}
	}
	return nil, nil, errcode.New(errcode.Transient, fmt.Sprintf("the VM named %s kept getting new tasks from another client", name))
}

// settledVM finds the VM named name once the tasks running on it have
// settled (locateSettled) and reads its config. It is NOT_FOUND
// (notFound) when there is no such VM, or it went meanwhile.
func (p *Provider) settledVM(ctx context.Context, name string) (*clusterResource, vmRef, vmConfig, error) {
	c, r, err := p.locateSettled(ctx, name)
	if err != nil {
		return nil, vmRef{}, nil, err
	}
	if r == nil {
		return nil, vmRef{}, nil, notFound(name)
	}
	v := vmRef{c: c, node: r.Node, vmid: r.VMID}
	conf, err := v.readConfig(ctx)
	if errcode.Is(err, errcode.NotFound) {
		return nil, vmRef{}, nil, notFound(name)
	}
	if err != nil {
		return nil, vmRef{}, nil, err
	}
	return r, v, conf, nil
}

func notFound(name string) error {
	return errcode.Wrap(errcode.NotFound, "", fmt.Errorf("proxmox: VirtualMachine %s not found", name))
}

// getVM reads a VM by name.
func (p *Provider) getVM(ctx context.Context, name string) (*manifest.Resource, error) {
	c, r, err := p.locate(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("proxmox: get VirtualMachine %s: %w", name, err)
	}
	if r == nil {
		return nil, notFound(name)
	}
	v := vmRef{c: c, node: r.Node, vmid: r.VMID}
	conf, err := v.readConfig(ctx)
	if err != nil {
		if errcode.Is(err, errcode.NotFound) {
			return nil, notFound(name)
		}
		return nil, fmt.Errorf("proxmox: get VirtualMachine %s: %w", name, err)
	}
	st, err := p.observe(ctx, v, conf, r.Status, int64(r.Uptime), nil, false, true)
	if errcode.Is(err, errcode.NotFound) {
		return nil, notFound(name) // destroyed while it was read
	}
	if err != nil {
		return nil, fmt.Errorf("proxmox: get VirtualMachine %s: %w", name, err)
	}
	return vmResource(name, c, r.Node, conf, st), nil
}

// listVMs lists the QEMU VMs of one context (not templates).
func (p *Provider) listVMs(ctx context.Context, c *conn) ([]*manifest.Resource, error) {
	rs, err := c.resources(ctx)
	if err != nil {
		return nil, err
	}
	var out []*manifest.Resource
	for _, r := range rs {
		if r.Type != "qemu" || r.Template != 0 || r.Name == "" {
			continue
		}
		v := vmRef{c: c, node: r.Node, vmid: r.VMID}
		conf, err := v.readConfig(ctx)
		if errcode.Is(err, errcode.NotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		st := vmStatus{VMID: r.VMID, Node: r.Node, State: r.Status, Uptime: int64(r.Uptime)}
		st.Managed = isManaged(conf)
		st.MACs = macsOf(conf)
		st.IPs = staticIPs(conf)
		if len(st.IPs) > 0 {
			st.IP = st.IPs[0]
		}
		out = append(out, vmResource(r.Name, c, r.Node, conf, st))
	}
	return out, nil
}

func isManaged(conf vmConfig) bool {
	_, _, ok := splitDescription(conf["description"])
	return ok
}

// vmStatus is what status reports.
type vmStatus struct {
	VMID           int
	Node           string
	State          string
	IP             string
	IPs            []string
	MACs           map[string]string
	SSHHostKey     string
	Uptime         int64
	Managed        bool
	PendingRestart []string
	// IPError says why a running VM's address is unknown ("" when it is
	// known or the VM is not running).
	IPError string
}

// vmResource builds the manifest of a live VM: a spec reconstructed from
// its config, and its status.
func vmResource(name string, c *conn, node string, conf vmConfig, st vmStatus) *manifest.Resource {
	spec := readSpec(liveVM{context: c.name, node: node, state: st.State, conf: conf})

	status := map[string]any{
		"vmid":    int64(st.VMID),
		"node":    st.Node,
		"state":   st.State,
		"managed": st.Managed,
		"uptime":  st.Uptime,
	}
	if st.IP != "" {
		status["ip"] = st.IP
	} else if st.IPError != "" {
		status["ipError"] = st.IPError
	}
	if o := ownerOf(conf); o != "" {
		status["owner"] = o
	}
	if isProvisioning(conf) {
		status["provisioning"] = true
	}
	if len(st.IPs) > 0 {
		l := make([]any, len(st.IPs))
		for i, ip := range st.IPs {
			l[i] = ip
		}
		status["ips"] = l
	}
	if len(st.MACs) > 0 {
		m := map[string]any{}
		for k, v := range st.MACs {
			m[k] = v
		}
		status["macAddresses"] = m
	}
	if st.SSHHostKey != "" {
		status["sshHostKey"] = st.SSHHostKey
	}
	if len(st.PendingRestart) > 0 {
		l := make([]any, len(st.PendingRestart))
		for i, s := range st.PendingRestart {
			l[i] = s
		}
		status["pendingRestart"] = l
	}
	return &manifest.Resource{
		APIVersion: APIVersion, Kind: KindVirtualMachine,
		Metadata: manifest.Metadata{Name: name},
		Spec:     spec,
		Status:   status,
	}
}

func sortedNetKeys(conf vmConfig) []string {
	var keys []string
	for k := range conf {
		if netNameRe.MatchString(k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return atoi(a[3:]) - atoi(b[3:]) })
	return keys
}

func macsOf(conf vmConfig) map[string]string {
	out := map[string]string{}
	for _, k := range sortedNetKeys(conf) {
		if d := parseNet(conf[k]); d.MAC != "" {
			out[k] = d.MAC
		}
	}
	return out
}

// staticIPs lists the addresses of static ipconfigN entries, net0 first.
func staticIPs(conf vmConfig) []string {
	var out []string
	for i := range 32 {
		c := parseIPConfig(conf["ipconfig"+strconv.Itoa(i)])
		for _, cidr := range []string{c.IP, c.IP6} {
			if ip, _, ok := strings.Cut(cidr, "/"); ok {
				out = append(out, ip)
			}
		}
	}
	return out
}

// observe builds a VM's status. With wait, it polls the guest agent for
// the VM's address until it has one or Timeouts.GuestAgent passes;
// without, it asks once when the VM is running.
func (p *Provider) observe(ctx context.Context, v vmRef, conf vmConfig, state string, uptime int64, s *VMSpec, wait, checkPending bool) (st vmStatus, err error) {
	st = vmStatus{VMID: v.vmid, Node: v.node, State: state, Uptime: uptime, Managed: isManaged(conf), MACs: macsOf(conf)}
	st.IPs = staticIPs(conf)
	// Only a static address on the VM's first network makes waiting
	// unnecessary; another network's is no substitute for it.
	st.IP = primaryStaticIP(conf, s)
	defer func() {
		if st.IP == "" && len(st.IPs) > 0 {
			st.IP = st.IPs[0] // another network's, better than none
		}
	}()
	if state != StateRunning {
		return st, nil
	}
	if checkPending {
		pend, err := p.pending(ctx, v)
		if err != nil && !errcode.Is(err, errcode.NotFound) {
			return st, err
		}
		st.PendingRestart = pend
	}
	if !agentEnabled(conf["agent"]) {
		if st.IP == "" {
			st.IPError = "no QEMU guest agent is enabled (spec.agent.enabled) and no static address is set, so the address cannot be discovered"
		}
		return st, nil
	}
	if st.IP != "" {
		// Static addresses are known without waiting; the agent is asked
		// once, best effort, for the rest.
		if ips, ip, err := p.agentIPs(ctx, v, conf, s); err == nil {
			st.IPs, st.IP = mergeIPs(st.IPs, ips), orDefault(st.IP, ip)
			st.SSHHostKey = p.hostKey(ctx, v)
		}
		return st, nil
	}
	if !wait {
		return p.askAgent(ctx, v, conf, s, st)
	}
	ips, ip, err := p.waitForIP(ctx, v, conf, s)
	if err != nil {
		return st, err
	}
	st.IPs, st.IP = mergeIPs(ips, st.IPs), ip
	st.SSHHostKey = p.hostKey(ctx, v)
	return st, nil
}

// askAgent asks the guest agent once for a running VM's address, for a
// read (Get): like every read the engine calls, it is not retried here. A
// transient failure (a 5xx, a network error) is returned, so that the
// engine retries the whole Get, and a VM destroyed meanwhile is NOT_FOUND;
// when the agent answers but cannot tell the address (not running yet,
// only loopback or link-local addresses, a token that may not ask), the
// address is unknown and status.ipError says why — never a silent blank.
func (p *Provider) askAgent(ctx context.Context, v vmRef, conf vmConfig, s *VMSpec, st vmStatus) (vmStatus, error) {
	ips, ip, err := p.agentIPs(ctx, v, conf, s)
	switch classifyAgentErr(err) {
	case agentOK:
		st.IPs, st.IP = mergeIPs(ips, st.IPs), ip
		if ip == "" {
			st.IPError = "the guest reported only loopback or link-local addresses (still booting?)"
			return st, nil
		}
		st.SSHHostKey = p.hostKey(ctx, v)
	case agentNotConfigured:
		st.IPError = "no QEMU guest agent is configured, so the address cannot be discovered"
	case agentVMNotRunning:
		st.IPError = "the VM stopped while openctl read it"
	case agentNotRunning:
		st.IPError = "the QEMU guest agent is not running (the guest is booting, or qemu-guest-agent is not installed)"
	default:
		cerr := classify(err)
		if isTransient(cerr) || errcode.Is(cerr, errcode.NotFound) {
			return st, fmt.Errorf("asking the guest agent for the address: %w", cerr)
		}
		st.IPError = "asking the guest agent failed: " + cerr.Error()
	}
	return st, nil
}

// primaryStaticIP is the static address (IPv4, else IPv6) of the VM's
// first network — the spec's first, else net0 — or "".
func primaryStaticIP(conf vmConfig, s *VMSpec) string {
	key := "net0"
	if s != nil && len(s.Networks) > 0 {
		key = s.Networks[0].Name
	}
	c := parseIPConfig(conf["ipconfig"+strings.TrimPrefix(key, "net")])
	for _, cidr := range []string{c.IP, c.IP6} {
		if ip, _, ok := strings.Cut(cidr, "/"); ok {
			return ip
		}
	}
	return ""
}

func mergeIPs(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// pending lists config keys whose change waits for a reboot.
func (p *Provider) pending(ctx context.Context, v vmRef) ([]string, error) {
	var items []struct {
		Key     string `json:"key"`
		Pending any    `json:"pending"`
		Delete  int    `json:"delete"`
	}
	if err := v.c.client.Get(ctx, v.path("/pending"), &items); err != nil {
		return nil, classify(err)
	}
	var out []string
	for _, it := range items {
		if it.Pending != nil || it.Delete != 0 {
			out = append(out, it.Key)
		}
	}
	slices.Sort(out)
	return out, nil
}

// applyVM creates or converges a VM.
func (p *Provider) applyVM(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	name := r.Metadata.Name
	fail := func(err error) (*manifest.Resource, error) {
		return nil, fmt.Errorf("proxmox: apply VirtualMachine %s: %w", name, classify(err))
	}
	s, err := DecodeVMSpec(r)
	if err != nil {
		return nil, err
	}
	c, err := p.conn(s.Context)
	if err != nil {
		return nil, r.Locate(manifest.FieldErrorf("spec.context", "%v", err))
	}
	p.mu.Lock()
	p.where[name] = c.name
	p.mu.Unlock()
	u, unfinished, err := p.settleUnfinished(ctx, c, name)
	if err != nil {
		return fail(err)
	}

	rs, existing, err := p.findSettled(ctx, c, name)
	if err != nil {
		return fail(err)
	}
	if existing == nil {
		p.clearUnfinished(c.name, name)
		return p.createVM(ctx, c, r, s, rs)
	}
	v := vmRef{c: c, node: existing.Node, vmid: existing.VMID}
	conf, err := v.readConfig(ctx)
	if errcode.Is(err, errcode.NotFound) {
		// Destroyed by someone else since it was listed: the engine's
		// retry creates it.
		return fail(errcode.Wrap(errcode.Transient, fmt.Sprintf("VM %d disappeared while it was read", v.vmid), err))
	}
	if err != nil {
		return fail(err)
	}
	// A VM an interrupted Apply (this process's or another's) created is
	// finished as a new one: started unless startOnCreate says otherwise.
	created := unfinished && existing.VMID == u.vmid || isProvisioning(conf)
	owner := registry.CallOf(ctx).Owner
	pl, err := planChanges(s, name, v.node, conf, existing.Status == StateRunning, c.cfg.Defaults, marking{owner: owner, provisioning: created})
	if err != nil {
		return fail(err)
	}
	if created {
		// Its creator may have lost a race for the name and been
		// interrupted before removing it.
		if err := p.settleNameRace(ctx, c, name, v); err != nil {
			if errcode.Is(err, errcode.AlreadyExists) {
				if derr := p.destroyAfterFailure(ctx, v); derr != nil {
					err = fmt.Errorf("%w; and removing VM %d failed: %v", err, v.vmid, derr)
				}
			}
			return fail(err)
		}
	}
	if len(pl.replace) > 0 {
		if s.ReplacePolicy != ReplaceAllow {
			return fail(errcode.New(errcode.Invalid, strings.Join(pl.replace, "; ")+" — set spec.replacePolicy: allow to let openctl destroy and re-create it"))
		}
		registry.CallOf(ctx).ReportStep("replacing: destroying the old VM")
		if err := p.destroy(ctx, v, existing.Status); err != nil {
			return fail(err)
		}
		p.clearUnfinished(c.name, name)
		return p.createVM(ctx, c, r, s, without2(rs, existing.VMID))
	}
	out, err := p.converge(ctx, r, s, v, conf, existing.Status, int64(existing.Uptime), pl, created)
	if err != nil {
		return fail(err)
	}
	p.clearUnfinished(c.name, name)
	return out, nil
}

// findSettled reads the cluster and finds the VM named name (pickVM),
// waiting first for clones in progress elsewhere when there is none
// (awaitForeignClones) and for the tasks running on it when there is one
// (awaitVMTasks), then looking again: a destroy in flight ends with no
// VM to adopt, a start in flight with a running one.
func (p *Provider) findSettled(ctx context.Context, c *conn, name string) ([]clusterResource, *clusterResource, error) {
	const rounds = 5
	for range rounds {
		rs, err := c.resources(ctx)
		if err != nil {
			return nil, nil, err
		}
		existing, err := p.pickVM(ctx, c, rs, name)
		if err != nil {
			return nil, nil, err
		}
		if existing == nil {
			if rs, err = p.awaitForeignClones(ctx, c, rs); err != nil {
				return nil, nil, err
			}
			if existing, err = p.pickVM(ctx, c, rs, name); err != nil {
				return nil, nil, err
			}
		}
		if existing == nil {
			return rs, nil, nil
		}
		waited, err := p.awaitVMTasks(ctx, c, existing.Node, existing.VMID)
		if err != nil {
			return nil, nil, err
		}
		if !waited {
			return rs, existing, nil
		}
	}
	return nil, nil, errcode.New(errcode.Transient, fmt.Sprintf("the VM named %s kept getting new tasks from another client", name))
}

// settleNameRace resolves a race for a name between openctl processes
// that do not share state: each found no VM named name and cloned one.
// Once v (this call's clone) carries the name, the VMs of that name are
// listed; the one with the lowest VMID wins. Clones still running
// elsewhere into a lower VMID (unnamed until they finish) are waited for
// first, so that two racers never both see themselves alone. A loser gets
// ALREADY_EXISTS naming the winner; removing its clone is the caller's.
func (p *Provider) settleNameRace(ctx context.Context, c *conn, name string, v vmRef) error {
	deadline := time.Now().Add(p.cfg.Timeouts.Clone)
	b := pollPolicy(p.tune.PollMin, p.tune.PollMax).Start()
	for {
		// Retried here: failing would remove the clone just made.
		var rs []clusterResource
		if err := p.retryStep(ctx, func() (err error) { rs, err = c.resources(ctx); return err }); err != nil {
			return err
		}
		cloning := false
		p.mu.Lock()
		for _, r := range rs {
			if r.Type == "qemu" && r.Lock == "clone" && r.VMID < v.vmid && !p.cloning[c.name+"/"+strconv.Itoa(r.VMID)] {
				cloning = true
			}
		}
		p.mu.Unlock()
		for _, r := range namedVMs(rs, name) {
			if r.VMID < v.vmid {
				who := "another client"
				if conf, err := c.vmConfig(ctx, r.Node, r.VMID); err == nil {
					if o := ownerOf(conf); o != "" {
						who = "another openctl state (owner " + o + ")"
					} else if isManaged(conf) {
						who = "another openctl"
					}
				}
				return errcode.New(errcode.AlreadyExists, fmt.Sprintf("%s created a VM named %s at the same time (VMID %d on %s); "+
					"this apply removes its own clone (VMID %d)", who, name, r.VMID, r.Node, v.vmid))
			}
		}
		if !cloning || time.Now().After(deadline) {
			return nil
		}
		if err := b.Wait(ctx); err != nil {
			return err
		}
	}
}

// settleUnfinished waits for the clone task of a VM named name that an
// interrupted Apply left running, so that the VM (named once its clone
// finishes) is found rather than cloned again.
func (p *Provider) settleUnfinished(ctx context.Context, c *conn, name string) (unfinishedVM, bool, error) {
	p.mu.Lock()
	u, ok := p.unfinished[c.name+"/"+name]
	p.mu.Unlock()
	if !ok || !u.cloning {
		return u, ok, nil
	}
	registry.CallOf(ctx).ReportStep("waiting for the clone an interrupted apply started")
	if u.upid != "" {
		if err := p.await(ctx, c, u.upid, p.cfg.Timeouts.Clone); err != nil && !taskFinished(err) {
			return u, ok, err
		}
	} else if err := p.waitCloneTarget(ctx, c, u.vmid); err != nil {
		return u, ok, err
	}
	u.cloning, u.upid = false, ""
	p.setUnfinished(c.name, name, u)
	return u, ok, nil
}

// waitCloneTarget waits until VM vmid is no longer a clone target in
// progress (config locked "clone") — it is then named, or gone if the
// clone failed or never started.
func (p *Provider) waitCloneTarget(ctx context.Context, c *conn, vmid int) error {
	wctx, cancel := context.WithTimeout(ctx, p.cfg.Timeouts.Clone)
	defer cancel()
	b := pollPolicy(p.tune.PollMin, p.tune.PollMax).Start()
	for {
		rs, err := c.resources(wctx)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(rs, func(r clusterResource) bool { return r.Type == "qemu" && r.VMID == vmid })
		if i < 0 || rs[i].Lock != "clone" {
			return nil
		}
		if err := b.Wait(wctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return errcode.Wrap(errcode.Transient, fmt.Sprintf("VM %d is still being cloned", vmid), err)
		}
	}
}

func (p *Provider) setUnfinished(ctxName, name string, u unfinishedVM) {
	p.mu.Lock()
	p.unfinished[ctxName+"/"+name] = u
	p.mu.Unlock()
}

func (p *Provider) clearUnfinished(ctxName, name string) {
	p.mu.Lock()
	delete(p.unfinished, ctxName+"/"+name)
	p.mu.Unlock()
}

// taskFinished reports whether err says a task ended (and failed), as
// opposed to it possibly still running.
func taskFinished(err error) bool {
	te, ok := errors.AsType[*TaskError](err)
	return ok && te.Timeout == 0
}

func without2(rs []clusterResource, vmid int) []clusterResource {
	return slices.DeleteFunc(slices.Clone(rs), func(r clusterResource) bool { return r.Type == "qemu" && r.VMID == vmid })
}

// createVM clones the template, converges the clone to the spec and, on
// any failure after the clone, destroys it again (unless ctx was
// cancelled: a re-run adopts the VM by name and converges it).
func (p *Provider) createVM(ctx context.Context, c *conn, r *manifest.Resource, s *VMSpec, rs []clusterResource) (*manifest.Resource, error) {
	name := r.Metadata.Name
	fail := func(err error) (*manifest.Resource, error) {
		return nil, fmt.Errorf("proxmox: create VirtualMachine %s: %w", name, classify(err))
	}
	mem := 0
	if s.Memory != nil {
		mem = s.Memory.Size
	}
	// Choosing the node and reserving memory on it are one step, so that
	// VMs created at once see each other's reservations and spread.
	p.placeMu.Lock()
	node, err := p.chooseNode(c, s, rs)
	var release func()
	if err == nil {
		release = p.reserve(c.name, node, mem)
	}
	p.placeMu.Unlock()
	if err != nil {
		return fail(err)
	}
	defer release()
	tmpl, err := p.template(ctx, c, s, node, rs)
	if err != nil {
		return fail(err)
	}
	if !s.Template.full() && !tmpl.Template {
		// Proxmox refuses with a 500, which would be retried as transient.
		return fail(manifest.FieldErrorf("spec.template.linked", "VM %d is not a template: only a template can be cloned linked; make a full clone", tmpl.VMID))
	}
	tconf, err := p.templateConfig(ctx, c, tmpl)
	if err != nil {
		return fail(err)
	}
	// Fail before creating anything when the spec cannot work with this
	// template: a shrinking disk, or no way to learn the VM's address.
	mark := marking{owner: registry.CallOf(ctx).Owner, provisioning: true}
	if _, err := planChanges(s, name, node, withMarker(tconf, s, mark), false, c.cfg.Defaults, mark); err != nil {
		return fail(err)
	}
	if err := p.checkAddressable(s, tconf); err != nil {
		return fail(err)
	}

	v, err := p.clone(ctx, c, s, name, node, tmpl)
	if err != nil {
		return fail(err)
	}
	err = p.settleNameRace(ctx, c, name, v)
	var out *manifest.Resource
	if err == nil {
		out, err = p.convergeNew(ctx, r, s, v)
	}
	if err != nil {
		if ctx.Err() != nil {
			p.setUnfinished(c.name, name, unfinishedVM{vmid: v.vmid})
		} else {
			registry.CallOf(ctx).ReportStep("cleaning up after failure")
			if derr := p.destroyAfterFailure(ctx, v); derr != nil {
				p.setUnfinished(c.name, name, unfinishedVM{vmid: v.vmid})
				err = fmt.Errorf("%w; and removing the half-made VM %d failed: %v", err, v.vmid, derr)
			}
		}
		return fail(err)
	}
	return out, nil
}

// withMarker is a template config as its clone will start: with the
// description openctl gives it.
func withMarker(tconf vmConfig, s *VMSpec, mark marking) vmConfig {
	c := vmConfig{}
	for k, v := range tconf {
		c[k] = v
	}
	mark.tmpl = *s.Template
	c["description"] = description(s.Description, mark)
	return c
}

// checkAddressable refuses, before anything is created, a VM to be started
// whose address openctl could never learn: no static IP and the guest agent
// neither enabled in the template nor by the spec.
func (p *Provider) checkAddressable(s *VMSpec, tconf vmConfig) error {
	if s.desiredState(true) != StateRunning {
		return nil
	}
	if s.Agent != nil && s.Agent.Enabled != nil {
		return nil // explicitly on (discovered) or off (no discovery wanted)
	}
	if agentEnabled(tconf["agent"]) {
		return nil
	}
	if s.CloudInit != nil {
		for _, c := range s.CloudInit.IPConfig {
			if c.IP != "" && c.IP != "dhcp" {
				return nil
			}
		}
	}
	return errcode.New(errcode.Invalid, fmt.Sprintf("template %s has no QEMU guest agent configured, so the VM's DHCP address could never be discovered: "+
		"set spec.agent.enabled: true (the image must run qemu-guest-agent), give a static spec.cloudInit.ipConfig.net0.ip, "+
		"or set spec.agent.enabled: false to start it without waiting for an address", tmplLabel(*s.Template)))
}

// convergeNew converges a fresh clone.
func (p *Provider) convergeNew(ctx context.Context, r *manifest.Resource, s *VMSpec, v vmRef) (*manifest.Resource, error) {
	// Reading back the clone is retried here: failing now would destroy
	// the VM just cloned and the engine's retry would clone it again.
	var conf vmConfig
	err := p.retryStep(ctx, func() (err error) { conf, err = v.readConfig(ctx); return err })
	if err != nil {
		return nil, err
	}
	// A password the template carries is not the spec's: a new VM gets
	// spec.cloudInit.password even then (planChanges sets one only on a VM
	// without, since Proxmox never shows it).
	delete(conf, "cipassword")
	pl, err := planChanges(s, r.Metadata.Name, v.node, conf, false, v.c.cfg.Defaults, marking{owner: registry.CallOf(ctx).Owner, provisioning: true})
	if err != nil {
		return nil, err
	}
	return p.converge(ctx, r, s, v, conf, StateStopped, 0, pl, true)
}

// converge applies a plan to an existing VM: one config task, disk
// resizes, the power state, a reboot if allowed and needed, then waits for
// the VM's address.
func (p *Provider) converge(ctx context.Context, r *manifest.Resource, s *VMSpec, v vmRef, conf vmConfig, state string, uptime int64, pl *plan, created bool) (*manifest.Resource, error) {
	t := p.cfg.Timeouts
	if len(pl.config) > 0 {
		registry.CallOf(ctx).ReportStep("configuring")
		if err := p.task(ctx, v, t.Config, func() (pve.UPID, error) {
			var upid pve.UPID
			return upid, v.c.client.Post(ctx, v.path("/config"), pl.config, &upid)
		}); err != nil {
			return nil, fmt.Errorf("configuring: %w", err)
		}
		for k, val := range pl.config {
			conf[k] = val
		}
		if _, ok := pl.config["cipassword"]; ok {
			conf["cipassword"] = "**********"
		}
	}
	for _, rz := range pl.resizes {
		registry.CallOf(ctx).ReportStep("growing disk " + rz.disk)
		if err := p.task(ctx, v, t.Resize, func() (pve.UPID, error) {
			var upid pve.UPID
			return upid, v.c.client.Put(ctx, v.path("/resize"), map[string]string{"disk": rz.disk, "size": rz.size}, &upid)
		}); err != nil {
			return nil, fmt.Errorf("growing disk %s to %s: %w", rz.disk, rz.size, err)
		}
	}
	want := s.desiredState(created)
	switch {
	case want == StateRunning && state != StateRunning:
		registry.CallOf(ctx).ReportStep("starting")
		if err := p.power(ctx, v, "start", t.Start); err != nil {
			return nil, err
		}
		state = StateRunning
	case want == StateStopped && state == StateRunning:
		if err := p.shutdown(ctx, v, p.cfg.Timeouts.Shutdown); err != nil {
			return nil, err
		}
		state = StateStopped
	case state == StateRunning && s.RestartPolicy == RestartIfRequired:
		pend, err := p.pending(ctx, v)
		if err != nil {
			return nil, err
		}
		if len(pend) > 0 {
			registry.CallOf(ctx).ReportStep("rebooting to apply " + strings.Join(pend, ", "))
			if err := p.power(ctx, v, "reboot", t.Reboot); err != nil {
				return nil, err
			}
		}
	}
	// A VM started just now has no pending changes and no uptime to read.
	st, err := p.observe(ctx, v, conf, state, uptime, s, true, !created)
	if err != nil {
		return nil, err
	}
	if isProvisioning(conf) {
		if err := p.finishProvisioning(ctx, v, conf); err != nil {
			return nil, err
		}
	}
	return vmResource(r.Metadata.Name, v.c, v.node, conf, st), nil
}

// finishProvisioning drops "provisioning" from the marker of a VM now
// converged (configured, in its power state, its address known): only
// then does a later Apply treat it as an existing VM rather than finish
// it as new. The description is set synchronously (PUT config), retried
// on a lock timeout like a task start.
func (p *Provider) finishProvisioning(ctx context.Context, v vmRef, conf vmConfig) error {
	_, m, _ := splitDescription(conf["description"])
	m.provisioning = false
	if err := p.writeMarker(ctx, v, conf, m); err != nil {
		return fmt.Errorf("marking the VM created: %w", err)
	}
	return nil
}

// writeMarker replaces the marker line of a managed VM's description
// (conf's, updated) with m's. Only the marker line changes: the user's
// part stays byte for byte.
func (p *Provider) writeMarker(ctx context.Context, v vmRef, conf vmConfig, m marking) error {
	desc := strings.TrimRight(conf["description"], "\n")
	desc = desc[:strings.LastIndex(desc, markerPrefix)] + m.marker()
	_, err := backoff.Retry(ctx, p.stepPolicy(p.tune.CallAttempts, isLockTimeout), func(context.Context) error {
		return classify(v.c.client.Put(ctx, v.path("/config"), map[string]string{"description": desc}, nil))
	})
	if err == nil {
		conf["description"] = desc
	}
	return err
}

// task starts a task with start and waits for it. A start that failed
// with a lock timeout (nothing happened, and the calls before it did) is
// retried up to CallAttempts times with backoff; other transient failures
// are returned for the engine to retry the whole, idempotent call.
func (p *Provider) task(ctx context.Context, v vmRef, timeout time.Duration, start func() (pve.UPID, error)) error {
	var upid pve.UPID
	_, err := backoff.Retry(ctx, p.stepPolicy(p.tune.CallAttempts, isLockTimeout), func(context.Context) (err error) {
		upid, err = start()
		return classify(err)
	})
	if err != nil {
		return err
	}
	return p.await(ctx, v.c, upid, timeout)
}

func isLockTimeout(err error) bool {
	s := err.Error()
	return strings.Contains(s, "can't lock file") || strings.Contains(s, "got timeout")
}

// power runs start, stop or reboot and waits for the task.
func (p *Provider) power(ctx context.Context, v vmRef, op string, timeout time.Duration) error {
	err := p.task(ctx, v, timeout, func() (pve.UPID, error) {
		var upid pve.UPID
		return upid, v.c.client.Post(ctx, v.path("/status/"+op), nil, &upid)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// shutdown asks the guest to power off, and stops it hard when it has not
// within Timeouts.Shutdown.
func (p *Provider) shutdown(ctx context.Context, v vmRef, timeout time.Duration) error {
	registry.CallOf(ctx).ReportStep("shutting down")
	t := p.cfg.Timeouts
	err := p.task(ctx, v, timeout+30*time.Second, func() (pve.UPID, error) {
		var upid pve.UPID
		secs := max(int(timeout/time.Second), 1)
		return upid, v.c.client.Post(ctx, v.path("/status/shutdown"), map[string]string{"timeout": strconv.Itoa(secs)}, &upid)
	})
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	p.log.Warn("graceful shutdown failed; stopping the VM", "vmid", v.vmid, "node", v.node, "err", err.Error())
	registry.CallOf(ctx).ReportStep("stopping")
	return p.power(ctx, v, "stop", t.Stop)
}

// destroy shuts a VM down if it runs and destroys it with purge.
func (p *Provider) destroy(ctx context.Context, v vmRef, state string) error {
	if state == StateRunning {
		if err := p.shutdown(ctx, v, p.cfg.Timeouts.Shutdown); err != nil {
			return err
		}
	}
	registry.CallOf(ctx).ReportStep("destroying")
	q := url.Values{"purge": {"1"}, "destroy-unreferenced-disks": {"1"}}
	err := p.task(ctx, v, p.cfg.Timeouts.Destroy, func() (pve.UPID, error) {
		var upid pve.UPID
		return upid, v.c.client.Delete(ctx, v.path("?"+q.Encode()), &upid)
	})
	if err != nil && !errcode.Is(err, errcode.NotFound) {
		return fmt.Errorf("destroy: %w", err)
	}
	return nil
}

// destroyAfterFailure removes a VM this Apply created and could not finish,
// retrying transient failures; it runs even if the apply's own deadline is
// close (on a fresh deadline).
func (p *Provider) destroyAfterFailure(ctx context.Context, v vmRef) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.Timeouts.Stop+p.cfg.Timeouts.Destroy)
	defer cancel()
	// Every failure is retried: a VM left behind is worse than the wait,
	// and the engine will not come back for it.
	_, err := backoff.Retry(cctx, p.stepPolicy(p.tune.CallAttempts+3, func(error) bool { return true }), func(cctx context.Context) error {
		var cur struct {
			Status string `json:"status"`
		}
		err := classify(v.c.client.Get(cctx, v.path("/status/current"), &cur))
		if err == nil && cur.Status == StateRunning {
			err = p.power(cctx, v, "stop", p.cfg.Timeouts.Stop)
		}
		if err == nil {
			err = p.destroy(cctx, v, StateStopped)
		}
		if errcode.Is(err, errcode.NotFound) {
			return nil
		}
		return err
	})
	return err
}

// deleteVM deletes the VM named name if openctl manages it.
func (p *Provider) deleteVM(ctx context.Context, name string) error {
	for _, cn := range p.order {
		if _, _, err := p.settleUnfinished(ctx, p.conns[cn], name); err != nil {
			return fmt.Errorf("proxmox: delete VirtualMachine %s: %w", name, err)
		}
	}
	r, v, conf, err := p.settledVM(ctx, name)
	switch {
	case errcode.Is(err, errcode.NotFound):
		return nil
	case err != nil:
		return fmt.Errorf("proxmox: delete VirtualMachine %s: %w", name, err)
	}
	if !isManaged(conf) {
		return errcode.New(errcode.AlreadyExists, fmt.Sprintf("proxmox: delete VirtualMachine %s: VM %d on %s was not created by openctl; refusing to delete it", name, r.VMID, r.Node))
	}
	if err := checkOwner(name, strconv.Itoa(r.VMID), r.Node, ownerOf(conf), registry.CallOf(ctx).Owner); err != nil {
		return fmt.Errorf("proxmox: delete VirtualMachine %s: %w", name, err)
	}
	if err := p.destroy(ctx, v, r.Status); err != nil {
		return fmt.Errorf("proxmox: delete VirtualMachine %s (VM %d on %s): %w", name, r.VMID, r.Node, classify(err))
	}
	p.mu.Lock()
	delete(p.where, name)
	delete(p.unfinished, v.c.name+"/"+name)
	p.mu.Unlock()
	return nil
}
