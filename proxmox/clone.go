package proxmox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	pve "github.com/luthermonson/go-proxmox"
	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
)

// scheduler serialises VMID allocation and bounds clones per node and per
// template, for one context.
type scheduler struct {
	vmid sync.Mutex // held from nextid until the clone request returns
	mu   sync.Mutex
	node map[string]chan struct{}
	tmpl map[string]chan struct{}
}

func (s *scheduler) sem(m map[string]chan struct{}, key string, n int) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := m[key]
	if !ok {
		ch = make(chan struct{}, n)
		m[key] = ch
	}
	return ch
}

// acquire takes a slot of ch, reporting step while it has to wait.
func acquire(ctx context.Context, ch chan struct{}, step string) error {
	select {
	case ch <- struct{}{}:
		return nil
	default:
	}
	registry.CallOf(ctx).ReportStep(step)
	select {
	case ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type tmplCacheEntry struct {
	conf vmConfig
	at   time.Time
}

// chooseNode picks the node a new VM goes to: spec.node, the allowed node
// (spec.nodes) with the most free memory — counting memory promised to
// VMs this provider is creating — or the context's default node.
func (p *Provider) chooseNode(c *conn, s *VMSpec, rs []clusterResource) (string, error) {
	online := map[string]clusterResource{}
	for _, r := range rs {
		if r.Type == "node" {
			online[r.Node] = r
		}
	}
	check := func(n, path string) error {
		r, ok := online[n]
		if !ok {
			return manifest.FieldErrorf(path, "no node %q in context %q (nodes: %s)", n, c.name, strings.Join(sortedKeys(online), ", "))
		}
		if r.Status != "" && r.Status != "online" {
			return errcode.New(errcode.Transient, fmt.Sprintf("node %s is %s", n, r.Status))
		}
		return nil
	}
	switch {
	case s.Node != "":
		return s.Node, check(s.Node, "spec.node")
	case len(s.Nodes) > 0:
		best, bestFree := "", int64(-1<<62)
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, n := range s.Nodes {
			if err := check(n, fmt.Sprintf("spec.nodes[%d]", i)); err != nil {
				if errcode.Is(err, errcode.Transient) {
					continue // offline: not a candidate
				}
				return "", err
			}
			r := online[n]
			free := int64(r.MaxMem) - int64(r.Mem) - int64(p.reserved[c.name+"/"+n])<<20
			if free > bestFree {
				best, bestFree = n, free
			}
		}
		if best == "" {
			return "", errcode.New(errcode.Transient, fmt.Sprintf("none of the nodes %v is online", s.Nodes))
		}
		return best, nil
	case c.cfg.Node != "":
		return c.cfg.Node, check(c.cfg.Node, "node")
	}
	if len(online) == 1 {
		for n := range online {
			return n, nil
		}
	}
	return "", manifest.FieldErrorf("spec.node", "required: context %q has no default node and the cluster has %d nodes (%s)", c.name, len(online), strings.Join(sortedKeys(online), ", "))
}

// reserve counts mib of memory as promised on node until release.
func (p *Provider) reserve(ctxName, node string, mib int) (release func()) {
	key := ctxName + "/" + node
	p.mu.Lock()
	p.reserved[key] += mib
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		p.reserved[key] -= mib
		p.mu.Unlock()
	}
}

// template finds the template to clone for a VM placed on node.
func (p *Provider) template(ctx context.Context, c *conn, s *VMSpec, node string, rs []clusterResource) (templateRef, error) {
	t := s.Template
	for _, r := range rs {
		if r.Type != "qemu" || r.Template == 0 {
			continue
		}
		if (t.VMID != 0 && r.VMID == t.VMID && r.Node == node) || (t.Name != "" && r.Name == t.Name && r.Node == node) {
			return templateRef{Node: r.Node, VMID: r.VMID, Name: r.Name, Template: true, Shared: true}, nil
		}
	}
	// Not on the chosen node: only a template on shared storage will do.
	return c.findTemplate(ctx, node, t.Name, t.VMID)
}

// templateConfig reads a template's config, cached briefly: many VMs are
// cloned from one template at once.
func (p *Provider) templateConfig(ctx context.Context, c *conn, t templateRef) (vmConfig, error) {
	key := fmt.Sprintf("%s/%s/%d", c.name, t.Node, t.VMID)
	p.mu.Lock()
	mu, ok := p.tmplMu[key]
	if !ok {
		mu = &sync.Mutex{}
		p.tmplMu[key] = mu
	}
	p.mu.Unlock()
	// Many VMs cloned from one template at once read its config once.
	mu.Lock()
	defer mu.Unlock()
	p.mu.Lock()
	e, ok := p.tmpls[key]
	p.mu.Unlock()
	if ok && time.Since(e.at) < p.tune.TemplateCacheTTL {
		return e.conf, nil
	}
	conf, err := vmRef{c: c, node: t.Node, vmid: t.VMID}.readConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading template %s (VMID %d): %w", t.Name, t.VMID, err)
	}
	p.mu.Lock()
	p.tmpls[key] = tmplCacheEntry{conf: conf, at: time.Now()}
	p.mu.Unlock()
	return conf, nil
}

// clone allocates a VMID and clones the template into a VM named name on
// node, bounded by the per-node and per-template limits. VMID allocation
// is serialised within the provider (Proxmox's nextid reserves nothing);
// an id taken by someone else meanwhile is retried with the next one.
func (p *Provider) clone(ctx context.Context, c *conn, s *VMSpec, name, node string, t templateRef) (vmRef, error) {
	sched := p.sched[c.name]
	lim := p.cfg.Limits
	nodeSem := sched.sem(sched.node, node, lim.PerNode)
	tmplSem := sched.sem(sched.tmpl, t.Node+"/"+strconv.Itoa(t.VMID), lim.PerTemplate)
	if err := acquire(ctx, nodeSem, "waiting for a clone slot on "+node); err != nil {
		return vmRef{}, err
	}
	defer func() { <-nodeSem }()
	if err := acquire(ctx, tmplSem, "waiting for a clone slot of "+tmplLabel(TemplateSpec{Name: t.Name, VMID: t.VMID})); err != nil {
		return vmRef{}, err
	}
	defer func() { <-tmplSem }()

	registry.CallOf(ctx).ReportStep(fmt.Sprintf("cloning %s", tmplLabel(TemplateSpec{Name: t.Name, VMID: t.VMID})))
	params := map[string]string{
		"name":        name,
		"description": description(s.Description, marking{tmpl: *s.Template, owner: registry.CallOf(ctx).Owner, provisioning: true}),
		"full":        boolStr(s.Template.full()),
	}
	if node != t.Node {
		params["target"] = node
	}
	if s.Storage != "" && s.Template.full() {
		params["storage"] = s.Storage
	}
	src := vmRef{c: c, node: t.Node, vmid: t.VMID}
	var upid pve.UPID
	var newid int
	// A clone Proxmox refused because another client took the VMID (its
	// nextid reserves nothing) or a lock was busy did nothing: it is
	// retried here with the next free id, a bounded step of this Apply.
	pol := p.stepPolicy(p.tune.CallAttempts+3, func(err error) bool { return isTransient(err) && cloneRetryable(err) })
	pol.OnRetry = func(attempt int, _ time.Duration, err error) {
		p.log.Debug("clone refused; retrying", "vm", name, "attempt", attempt, "err", err.Error())
	}
	_, err := backoff.Retry(ctx, pol, func(ctx context.Context) (err error) {
		newid, upid, err = p.cloneOnce(ctx, c, sched, src, params)
		if _, answered := pve.AsAPIError(err); err != nil && newid != 0 && !answered {
			// The request may have reached Proxmox (cancelled or cut off
			// in flight): a clone to newid may be running.
			p.setUnfinished(c.name, name, unfinishedVM{vmid: newid, cloning: true})
		}
		return err
	})
	if err != nil {
		return vmRef{}, fmt.Errorf("cloning %s: %w", tmplLabel(TemplateSpec{Name: t.Name, VMID: t.VMID}), err)
	}
	v := vmRef{c: c, node: node, vmid: newid}
	defer p.ownClone(c.name, newid, false)
	if err := p.await(ctx, c, upid, p.cfg.Timeouts.Clone); err != nil {
		// Proxmox removes the target of a failed clone; one still running
		// (ctx cancelled, timed out) finishes anyway and carries no name
		// until it does, so the next Apply must wait for it, not clone
		// again.
		if !taskFinished(err) {
			p.setUnfinished(c.name, name, unfinishedVM{vmid: newid, cloning: true, upid: upid})
		}
		return vmRef{}, fmt.Errorf("cloning %s into VM %d: %w", tmplLabel(TemplateSpec{Name: t.Name, VMID: t.VMID}), newid, err)
	}
	return v, nil
}

// cloneRetryable reports whether a clone request surely did nothing: the
// id was taken, the source was locked, or a lock timed out.
func cloneRetryable(err error) bool {
	s := err.Error()
	return strings.Contains(s, "already exists") || strings.Contains(s, "can't lock file") ||
		strings.Contains(s, "got timeout") || strings.Contains(s, "VM is locked")
}

// cloneOnce allocates the next free VMID and posts the clone, holding the
// provider's allocation lock so no two clones of this provider race for
// one id.
func (p *Provider) cloneOnce(ctx context.Context, c *conn, sched *scheduler, src vmRef, params map[string]string) (int, pve.UPID, error) {
	sched.vmid.Lock()
	defer sched.vmid.Unlock()
	var next string
	if err := c.client.Get(ctx, "/cluster/nextid", &next); err != nil {
		return 0, "", classify(err)
	}
	id, err := strconv.Atoi(next)
	if err != nil {
		return 0, "", errcode.New(errcode.Internal, fmt.Sprintf("/cluster/nextid returned %q", next))
	}
	ps := make(map[string]string, len(params)+1)
	for k, v := range params {
		ps[k] = v
	}
	ps["newid"] = strconv.Itoa(id)
	var upid pve.UPID
	p.ownClone(c.name, id, true)
	if err := c.client.Post(ctx, src.path("/clone"), ps, &upid); err != nil {
		p.ownClone(c.name, id, false)
		return id, "", classify(err)
	}
	return id, upid, nil
}

// ownClone records (or forgets) that this provider is cloning VM id.
func (p *Provider) ownClone(ctxName string, id int, on bool) {
	key := ctxName + "/" + strconv.Itoa(id)
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.cloning[key] = true
	} else {
		delete(p.cloning, key)
	}
}

// awaitForeignClones waits until no clone started by someone else is in
// progress, and returns the cluster's resources then. Proxmox names a VM
// only when its clone finishes, so a clone that an interrupted openctl
// process (or another client) left running may be the very VM about to be
// created: looking for it by name before it finishes would clone it twice.
// The wait is bounded by Timeouts.Clone; after that the apply goes on.
func (p *Provider) awaitForeignClones(ctx context.Context, c *conn, rs []clusterResource) ([]clusterResource, error) {
	deadline := time.Now().Add(p.cfg.Timeouts.Clone)
	b := pollPolicy(p.tune.PollMin, p.tune.PollMax).Start()
	reported := false
	for {
		var foreign []string
		p.mu.Lock()
		for _, r := range rs {
			if r.Type == "qemu" && r.Lock == "clone" && !p.cloning[c.name+"/"+strconv.Itoa(r.VMID)] {
				foreign = append(foreign, strconv.Itoa(r.VMID))
			}
		}
		p.mu.Unlock()
		if len(foreign) == 0 {
			return rs, nil
		}
		if time.Now().After(deadline) {
			p.log.Warn("clones started elsewhere are still running; creating anyway", "vmids", foreign)
			return rs, nil
		}
		if !reported {
			registry.CallOf(ctx).ReportStep("waiting for clones in progress elsewhere (VMID " + strings.Join(foreign, ", ") + ") to finish: one may be this VM, from an interrupted apply")
			reported = true
		}
		if err := b.Wait(ctx); err != nil {
			return nil, err
		}
		var err error
		if rs, err = c.resources(ctx); err != nil {
			return nil, err
		}
	}
}
