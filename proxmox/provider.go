package proxmox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	pve "github.com/luthermonson/go-proxmox"
	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
)

// APIVersion is the apiVersion of every kind this provider serves.
const APIVersion = "proxmox.openctl.io/v1"

// The kinds.
const (
	KindVirtualMachine = "VirtualMachine"
	KindTemplate       = "Template"
	KindNode           = "Node"
)

// Provider is the Proxmox VE provider. Create it with New; it is safe for
// concurrent use and serves every context of its Config from one instance,
// so that VMID allocation and the per-node and per-template limits hold
// across everything it applies.
type Provider struct {
	cfg   Config
	conns map[string]*conn
	order []string // context names, the default first
	log   *slog.Logger
	tune  tuning

	placeMu sync.Mutex // held while a new VM's node is chosen and its memory reserved

	mu       sync.Mutex
	where    map[string]string     // VM name → context, learnt from Validate/Apply
	sched    map[string]*scheduler // per context
	reserved map[string]int        // "ctx/node" → MiB of memory promised to VMs being created
	tmpls    map[string]tmplCacheEntry
	tmplMu   map[string]*sync.Mutex   // one template config read at a time per template
	expect   map[string]time.Duration // moving average of how long each task type (and the guest agent) takes
	// unfinished holds, by "context/name", VMs whose creation an Apply
	// left unfinished (cancelled or timed out waiting for the clone, or
	// failed and not removed): the next Apply of that name waits for the
	// clone task instead of cloning again, and finishes the VM as new.
	// Guarded by mu.
	unfinished map[string]unfinishedVM
	// broken holds the contexts that could not be set up (not the
	// default, which fails New), with why.
	broken map[string]error
	// cloning holds "context/vmid" of the clones this provider has in
	// flight, so that only others' clones are waited for.
	cloning map[string]bool
}

// unfinishedVM is a VM an interrupted Apply created.
type unfinishedVM struct {
	vmid    int
	cloning bool     // its clone may still run
	upid    pve.UPID // the clone task, when known
}

// tuning holds knobs an embedder rarely needs; see Option.
type tuning struct {
	PollMin, PollMax   time.Duration // task status polling
	AgentMin, AgentMax time.Duration // guest agent polling
	CallAttempts       int           // attempts of a step retried inside Apply, Delete or Do (see retryStep)
	Backoff            time.Duration // first delay of those retries
	TemplateCacheTTL   time.Duration
}

func defaultTuning() tuning {
	return tuning{
		PollMin: 100 * time.Millisecond, PollMax: 2 * time.Second,
		AgentMin: 500 * time.Millisecond, AgentMax: 5 * time.Second,
		CallAttempts: 5, Backoff: 200 * time.Millisecond,
		TemplateCacheTTL: 30 * time.Second,
	}
}

// Option tunes a Provider beyond its Config.
type Option func(*tuning)

// WithPollInterval sets how often task status is polled: first after min,
// growing by half each time up to max (default 100ms to 2s).
func WithPollInterval(min, max time.Duration) Option {
	return func(t *tuning) { t.PollMin, t.PollMax = min, max }
}

// WithAgentPollInterval sets how often the guest agent is asked for the
// VM's addresses while it comes up: first after min, up to max (default
// 500ms to 5s).
func WithAgentPollInterval(min, max time.Duration) Option {
	return func(t *tuning) { t.AgentMin, t.AgentMax = min, max }
}

// WithRetryBackoff sets the first delay before a step of Apply, Delete or
// Do is retried — a lock timeout, a clone refused because its VMID was
// taken, reading back a VM just cloned (default 200ms, doubling up to 5s,
// with jitter). Reads that Get, List and Diff make are not retried by the
// provider: see the package documentation.
func WithRetryBackoff(d time.Duration) Option {
	return func(t *tuning) { t.Backoff = d }
}

// New returns a Provider for cfg. It does not contact Proxmox: bad
// credentials or a certificate that does not match the pinned fingerprint
// fail the first call (or Ping). It works without a registry; register it
// with registry.Registry.Register or openctl.WithProviders to use it from
// manifests.
func New(cfg Config, opts ...Option) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg.Limits = cfg.Limits.withDefaults()
	cfg.Timeouts = cfg.Timeouts.withDefaults()
	p := &Provider{
		cfg: cfg, conns: map[string]*conn{}, log: log, tune: defaultTuning(),
		where: map[string]string{}, sched: map[string]*scheduler{}, reserved: map[string]int{}, tmpls: map[string]tmplCacheEntry{},
		tmplMu: map[string]*sync.Mutex{}, expect: map[string]time.Duration{}, unfinished: map[string]unfinishedVM{}, cloning: map[string]bool{}, broken: map[string]error{},
	}
	for _, o := range opts {
		o(&p.tune)
	}
	def, err := cfg.contextName("")
	if err != nil {
		return nil, err
	}
	p.order = append(p.order, def)
	for _, name := range sortedKeys(cfg.Contexts) {
		c, err := dial(name, cfg.Contexts[name], log)
		if err != nil && name != def {
			// A context nobody uses must not break the others (a
			// missing token file of a lab cluster while working on
			// prod): its error comes back when a resource names it.
			log.Warn("proxmox: context unusable; resources naming it will fail", "context", name, "err", err.Error())
			p.broken[name] = err
			continue
		}
		if err != nil {
			return nil, err
		}
		p.conns[name] = c
		p.sched[name] = &scheduler{node: map[string]chan struct{}{}, tmpl: map[string]chan struct{}{}}
		if name != def {
			p.order = append(p.order, name)
		}
	}
	return p, nil
}

// WillReport says whether a live VirtualMachine will report field: its
// address (status.ip, ips), host key and MAC addresses come from its
// guest agent, only while it runs. A VM that is stopped will not report
// them until it is started: an errcode.Invalid error says so.
func (p *Provider) WillReport(live *manifest.Resource, field string) error {
	if live.Kind != KindVirtualMachine {
		return nil
	}
	switch field {
	case "status.ip", "status.ips", "status.sshHostKey", "status.macAddresses":
	default:
		return nil
	}
	if state, _ := live.Status["state"].(string); state != "" && state != StateRunning {
		return errcode.New(errcode.Invalid, fmt.Sprintf("VirtualMachine %s is %s, so it will not report %s: start it (openctl proxmox start vm %s), or set its spec.state: running",
			live.Metadata.Name, state, field, live.Metadata.Name))
	}
	return nil
}

// Name returns "proxmox": the provider serves proxmox.openctl.io.
func (p *Provider) Name() string { return "proxmox" }

// Kinds lists VirtualMachine, Template (read-only) and Node (read-only).
func (p *Provider) Kinds() []registry.Kind {
	return []registry.Kind{
		{Kind: KindVirtualMachine, Plural: "virtualmachines", ShortNames: []string{"vm", "vms"}, Versions: []string{"v1"},
			SecretFields: []string{"spec.cloudInit.password"},
			// What a $ref may name: the spec as written, and the status
			// vmResource reports.
			Fields: []string{"spec", "status.vmid", "status.node", "status.state", "status.managed", "status.uptime",
				"status.ip", "status.ipError", "status.ips", "status.macAddresses", "status.sshHostKey",
				"status.owner", "status.provisioning", "status.pendingRestart"},
			Columns: []registry.Column{
				{Name: "NODE", Field: "status.node"}, {Name: "VMID", Field: "status.vmid"},
				{Name: "STATE", Field: "status.state"}, {Name: "IP", Field: "status.ip"},
				{Name: "CPU", Field: "spec.cpu.cores", Wide: true}, {Name: "MEMORY", Field: "spec.memory.size", Wide: true},
				{Name: "TEMPLATE", Field: "spec.template.name", Wide: true},
			}},
		{Kind: KindTemplate, Plural: "templates", ShortNames: []string{"tmpl"}, Versions: []string{"v1"}, ReadOnly: true,
			Columns: []registry.Column{{Name: "NODE", Field: "status.node"}, {Name: "VMID", Field: "status.vmid"}}},
		{Kind: KindNode, Plural: "nodes", ShortNames: []string{"node"}, Versions: []string{"v1"}, ReadOnly: true,
			Columns: []registry.Column{{Name: "STATUS", Field: "status.status"}, {Name: "CPUS", Field: "status.cpus"}, {Name: "MEMORY", Field: "status.memory.total", Wide: true}}},
	}
}

// Ping checks the contexts the resources use (spec.context, or the
// default context; every context when resources is empty): the endpoint
// answers, its certificate is trusted and the token is accepted (its
// privileges are checked by the calls that need them). A resource whose
// spec does not decode is left to Validate.
func (p *Provider) Ping(ctx context.Context, resources []*manifest.Resource) error {
	names := map[string]bool{}
	if len(resources) == 0 {
		for _, name := range p.order {
			names[name] = true
		}
		for name := range p.broken {
			names[name] = true
		}
	}
	var errs []error
	for _, r := range resources {
		if r.Kind != KindVirtualMachine {
			continue
		}
		s, err := DecodeVMSpec(r)
		if err != nil {
			continue
		}
		name, err := p.cfg.contextName(s.Context)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		names[name] = true
	}
	for _, name := range sortedKeys(names) {
		if err := p.broken[name]; err != nil {
			errs = append(errs, err)
			continue
		}
		if err := p.conns[name].verify(ctx); err != nil {
			errs = append(errs, classify(err)) // verify names the context
		}
	}
	return errors.Join(errs...)
}

// As sets target to the underlying client when target is a
// **proxmox.Client of github.com/luthermonson/go-proxmox (the default
// context's client), and reports whether it did.
func (p *Provider) As(target any) bool {
	if t, ok := target.(**pve.Client); ok {
		*t = p.conns[p.order[0]].client
		return true
	}
	return false
}

// Client returns the go-proxmox client of a context ("" for the default).
func (p *Provider) Client(contextName string) (*pve.Client, error) {
	c, err := p.conn(contextName)
	if err != nil {
		return nil, err
	}
	return c.client, nil
}

// conn returns the connection of a context ("" = default).
func (p *Provider) conn(name string) (*conn, error) {
	name, err := p.cfg.contextName(name)
	if err != nil {
		return nil, err
	}
	if err := p.broken[name]; err != nil {
		return nil, err
	}
	return p.conns[name], nil
}

// Get reads a VirtualMachine, Template or Node.
func (p *Provider) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	if err := checkAPIVersion(id); err != nil {
		return nil, err
	}
	switch id.Kind {
	case KindVirtualMachine:
		return p.getVM(ctx, id.Name)
	case KindTemplate:
		return p.readOnly(ctx, id, func(c *conn) (*manifest.Resource, error) { return c.getTemplate(ctx, id.Name) })
	case KindNode:
		return p.readOnly(ctx, id, func(c *conn) (*manifest.Resource, error) { return c.getNode(ctx, id.Name) })
	}
	return nil, unknownKind(id.Kind)
}

// readOnly reads a Template or Node from the first context that has it.
func (p *Provider) readOnly(ctx context.Context, id manifest.ID, get func(*conn) (*manifest.Resource, error)) (*manifest.Resource, error) {
	var firstErr error
	for _, name := range p.order {
		r, err := get(p.conns[name])
		if err == nil {
			return r, nil
		}
		if !errcode.Is(err, errcode.NotFound) {
			return nil, fmt.Errorf("proxmox: get %s %s: %w", id.Kind, id.Name, err)
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, fmt.Errorf("proxmox: get %s %s: %w", id.Kind, id.Name, firstErr)
}

// List lists the VirtualMachines (those openctl manages and others),
// Templates or Nodes of every context, sorted by name.
func (p *Provider) List(ctx context.Context, kind string) ([]*manifest.Resource, error) {
	var out []*manifest.Resource
	for _, name := range p.order {
		c := p.conns[name]
		var rs []*manifest.Resource
		var err error
		switch kind {
		case KindVirtualMachine:
			rs, err = p.listVMs(ctx, c)
		case KindTemplate:
			rs, err = c.listTemplates(ctx)
		case KindNode:
			rs, err = c.listNodes(ctx)
		default:
			return nil, unknownKind(kind)
		}
		if err != nil {
			return nil, fmt.Errorf("proxmox: list %s in context %q: %w", kind, name, err)
		}
		out = append(out, rs...)
	}
	slices.SortStableFunc(out, func(a, b *manifest.Resource) int {
		switch {
		case a.Metadata.Name < b.Metadata.Name:
			return -1
		case a.Metadata.Name > b.Metadata.Name:
			return 1
		}
		return 0
	})
	return out, nil
}

// Validate checks a VirtualMachine manifest offline (and that its context
// exists). Template and Node are read-only.
func (p *Provider) Validate(_ context.Context, r *manifest.Resource) error {
	if err := checkAPIVersion(r.ID()); err != nil {
		return err
	}
	switch r.Kind {
	case KindVirtualMachine:
	case KindTemplate, KindNode:
		return errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: %s is read-only: it can be listed and read, not applied", r.Kind))
	default:
		return unknownKind(r.Kind)
	}
	if refsIn(r.Spec) {
		// Fields holding $ref markers are checked after resolution.
		return nil
	}
	s, err := DecodeVMSpec(r)
	if err != nil {
		return err
	}
	c, err := p.conn(s.Context)
	if err != nil {
		return r.Locate(manifest.FieldErrorf("spec.context", "%v", err))
	}
	p.mu.Lock()
	p.where[r.Metadata.Name] = c.name
	p.mu.Unlock()
	return nil
}

// Apply creates or updates a VirtualMachine.
func (p *Provider) Apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	if err := checkAPIVersion(r.ID()); err != nil {
		return nil, err
	}
	if r.Kind != KindVirtualMachine {
		if r.Kind == KindTemplate || r.Kind == KindNode {
			return nil, errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: %s is read-only", r.Kind))
		}
		return nil, unknownKind(r.Kind)
	}
	return p.applyVM(ctx, r)
}

// Delete deletes a VirtualMachine openctl created: graceful shutdown (with
// a timeout), then stop, then destroy with purge, waiting on every task. A
// VM that does not exist is not an error; one openctl did not create is
// refused.
func (p *Provider) Delete(ctx context.Context, id manifest.ID) error {
	if err := checkAPIVersion(id); err != nil {
		return err
	}
	switch id.Kind {
	case KindVirtualMachine:
		return p.deleteVM(ctx, id.Name)
	case KindTemplate, KindNode:
		return errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: %s is read-only", id.Kind))
	}
	return unknownKind(id.Kind)
}

func checkAPIVersion(id manifest.ID) error {
	if id.APIVersion != APIVersion {
		return errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: apiVersion %q is not served (want %s)", id.APIVersion, APIVersion))
	}
	return nil
}

func unknownKind(kind string) error {
	return errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: unknown kind %q (served: VirtualMachine, Template, Node)", kind))
}

// refsIn reports whether a spec still holds $ref markers.
func refsIn(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["$ref"]; ok && len(x) == 1 {
			return true
		}
		for _, e := range x {
			if refsIn(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if refsIn(e) {
				return true
			}
		}
	}
	return false
}

// stepPolicy is the backoff of a step retried inside Apply, Delete or Do:
// attempts calls at most, starting at WithRetryBackoff's delay, doubling
// up to 5s, each spread by ±50%.
func (p *Provider) stepPolicy(attempts int, retryable func(error) bool) backoff.Policy {
	return backoff.Policy{Initial: p.tune.Backoff, Max: 5 * time.Second, Multiplier: 2, Jitter: 0.5, MaxAttempts: attempts, Retryable: retryable}
}

// retryStep runs one step of Apply, Delete or Do that follows a side effect
// of the same call — reading back a VM it just cloned — retrying transient
// failures up to CallAttempts times: re-running the whole call instead
// would first undo the side effect. It is the only retry of a read; see
// the package documentation for who retries what.
func (p *Provider) retryStep(ctx context.Context, f func() error) error {
	_, err := backoff.Retry(ctx, p.stepPolicy(p.tune.CallAttempts, isTransient), func(context.Context) error { return classify(f()) })
	return err
}

// pollPolicy is the backoff of polling something this provider started (a
// task, a guest coming up): from first to last, growing by half, without
// jitter.
func pollPolicy(first, last time.Duration) backoff.Policy {
	return backoff.Policy{Initial: first, Max: last, Multiplier: 1.5}
}

var (
	_ registry.Provider  = (*Provider)(nil)
	_ registry.Lister    = (*Provider)(nil)
	_ registry.Validator = (*Provider)(nil)
	_ registry.Differ    = (*Provider)(nil)
	_ registry.Actioner  = (*Provider)(nil)
	_ registry.Pinger    = (*Provider)(nil)
)
