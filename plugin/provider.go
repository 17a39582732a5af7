package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
)

// Provider is a plugin as a registry.Provider: every call runs the
// plugin once with one request on its standard input. It also
// implements registry.Lister (kinds whose capabilities lack "list" are
// refused with errcode.Invalid) and registry.Actioner (the plugin's
// subcommands). It is safe for concurrent use: calls share nothing but
// immutable values.
type Provider struct {
	plugin *Plugin
	config *Config
	opts   Options
	redact *strings.Replacer
	kinds  map[string]ResourceCapability
}

var (
	_ registry.Provider = (*Provider)(nil)
	_ registry.Lister   = (*Provider)(nil)
	_ registry.Actioner = (*Provider)(nil)
)

// New returns the provider of the plugin p with its configuration cfg
// (nil: none). It runs nothing.
func New(p *Plugin, cfg *Config, opts Options) *Provider {
	if cfg == nil {
		cfg = &Config{}
	}
	cfg = &Config{values: cfg.values, secrets: append(cfg.secrets[:len(cfg.secrets):len(cfg.secrets)], p.Capabilities.SecretConfigFields...)}
	kinds := map[string]ResourceCapability{}
	for _, r := range p.Capabilities.Resources {
		kinds[r.Kind] = r
	}
	return &Provider{plugin: p, config: cfg, opts: opts.withDefaults(), redact: cfg.redactor(), kinds: kinds}
}

// Name returns the plugin's provider name.
func (p *Provider) Name() string { return p.plugin.Name() }

// Kinds returns the plugin's kinds: read-only when it can neither apply,
// create nor delete them.
func (p *Provider) Kinds() []registry.Kind { return kindsOf(&p.plugin.Capabilities) }

func kindsOf(c *Capabilities) []registry.Kind {
	var out []registry.Kind
	for _, r := range c.Resources {
		out = append(out, registry.Kind{
			Kind:     r.Kind,
			Plural:   r.Plural,
			ReadOnly: !r.Supports(ActionApply) && !r.Supports(ActionCreate) && !r.Supports(ActionDelete),
		})
	}
	return out
}

// Get runs the get action.
func (p *Provider) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	resp, err := p.call(ctx, &Request{Action: ActionGet, ResourceType: id.Kind, ResourceName: id.Name})
	if err != nil {
		return nil, err
	}
	return p.resource(resp, id)
}

// Apply runs the apply action, or, for a kind that only supports create,
// get and then create when the resource is missing. Dispatch requests in
// the responses are run through Options.Dispatcher.
func (p *Provider) Apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	caps, err := p.kind(r.Kind)
	if err != nil {
		return nil, err
	}
	action := ActionApply
	switch {
	case caps.Supports(ActionApply):
	case caps.Supports(ActionCreate):
		live, err := p.Get(ctx, r.ID())
		if err == nil {
			return live, nil
		}
		if !errors.Is(err, errcode.NotFound) {
			return nil, err
		}
		action = ActionCreate
	default:
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("plugin %s: kind %s cannot be applied (actions: %s)", p.Name(), r.Kind, strings.Join(caps.Actions, ", ")))
	}
	m := r.DeepCopy()
	resp, saved, err := p.dispatchLoop(ctx, r.ID(), &Request{Action: action, ResourceType: r.Kind, ResourceName: r.Metadata.Name, Manifest: m})
	if err != nil {
		return nil, err
	}
	if resp.Resource == nil && saved != nil {
		resp.Resource = saved
	}
	return p.resource(resp, r.ID())
}

// Delete runs the delete action; a NOT_FOUND answer is success.
func (p *Provider) Delete(ctx context.Context, id manifest.ID) error {
	caps, err := p.kind(id.Kind)
	if err != nil {
		return err
	}
	if !caps.Supports(ActionDelete) {
		return errcode.New(errcode.Invalid, fmt.Sprintf("plugin %s: kind %s cannot be deleted", p.Name(), id.Kind))
	}
	_, _, err = p.dispatchLoop(ctx, id, &Request{Action: ActionDelete, ResourceType: id.Kind, ResourceName: id.Name})
	if errors.Is(err, errcode.NotFound) {
		return nil
	}
	return err
}

// List runs the list action.
func (p *Provider) List(ctx context.Context, kind string) ([]*manifest.Resource, error) {
	caps, err := p.kind(kind)
	if err != nil {
		return nil, err
	}
	if !caps.Supports(ActionList) {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("plugin %s: kind %s cannot be listed", p.Name(), kind))
	}
	resp, err := p.call(ctx, &Request{Action: ActionList, ResourceType: kind})
	if err != nil {
		return nil, err
	}
	for _, r := range resp.Resources {
		if r == nil {
			return nil, p.protocolError(fmt.Errorf("%w: a null resource in resources", ErrProtocol), nil)
		}
	}
	return resp.Resources, nil
}

// Actions returns the plugin's subcommands as actions.
func (p *Provider) Actions() []registry.ActionSpec { return actionsOf(&p.plugin.Capabilities) }

func actionsOf(c *Capabilities) []registry.ActionSpec {
	var out []registry.ActionSpec
	for _, s := range c.Subcommands {
		kind := s.Kind
		if kind == "" {
			kind = c.Resources[0].Kind
		}
		spec := registry.ActionSpec{Name: s.Name, Kind: kind, Short: s.Short, Long: s.Long}
		for _, f := range s.Flags {
			a := registry.ArgSpec{Name: f.Name, Short: f.Short, Type: registry.ArgString, Required: f.Required, Help: f.Help}
			switch f.Type {
			case "int":
				a.Type = registry.ArgInt
			case "bool":
				a.Type = registry.ArgBool
			case "duration":
				a.Type = registry.ArgDuration
			}
			if f.Default != "" {
				a.Default = f.Default
			}
			spec.Args = append(spec.Args, a)
		}
		out = append(out, spec)
	}
	return out
}

// Do runs a subcommand: its action with the target as resourceName and
// the arguments as args.
func (p *Provider) Do(ctx context.Context, req registry.ActionRequest) (*registry.ActionResult, error) {
	for _, s := range p.plugin.Capabilities.Subcommands {
		if s.Name != req.Action {
			continue
		}
		// JSON types: strings, numbers, booleans; a duration as Go
		// writes it ("1m30s").
		args := map[string]any{}
		for k, v := range req.Args {
			if d, ok := v.(time.Duration); ok {
				v = d.String()
			}
			args[k] = v
		}
		resp, err := p.call(ctx, &Request{Action: s.Action, ResourceType: req.ID.Kind, ResourceName: req.ID.Name, Args: args})
		if err != nil {
			return nil, err
		}
		return &registry.ActionResult{Message: resp.Message, Resource: resp.Resource}, nil
	}
	return nil, errcode.New(errcode.Invalid, fmt.Sprintf("plugin %s: no action %q", p.Name(), req.Action))
}

func (p *Provider) kind(kind string) (ResourceCapability, error) {
	c, ok := p.kinds[kind]
	if !ok {
		return c, errcode.New(errcode.Invalid, fmt.Sprintf("plugin %s: kind %q is not served", p.Name(), kind))
	}
	return c, nil
}

// resource returns the response's resource, filling in its identity
// where the plugin left it out.
func (p *Provider) resource(resp *Response, id manifest.ID) (*manifest.Resource, error) {
	r := resp.Resource
	if r == nil {
		return nil, p.protocolError(fmt.Errorf("%w: no resource in the response", ErrProtocol), nil)
	}
	if r.APIVersion == "" {
		r.APIVersion = id.APIVersion
	}
	if r.Kind == "" {
		r.Kind = id.Kind
	}
	if r.Metadata.Name == "" {
		r.Metadata.Name = id.Name
	}
	return r, nil
}

// dispatchLoop runs req, about the resource id, and, while the plugin
// answers with dispatch requests, runs them through the dispatcher and
// calls the plugin again with their results and the continuation token.
// It returns the last response and the resource the last stateUpdate
// saved (nil when none did); the children stateUpdates name are listed
// with the ChildRecorder ctx carries.
func (p *Provider) dispatchLoop(ctx context.Context, id manifest.ID, req *Request) (*Response, *manifest.Resource, error) {
	var saved *manifest.Resource
	for round := 0; ; round++ {
		resp, err := p.call(ctx, req)
		if err != nil {
			return nil, nil, err
		}
		if resp.StateUpdate != nil {
			s, err := p.stateUpdate(ctx, id, req.Action, resp.StateUpdate)
			if err != nil {
				return nil, nil, err
			}
			if s != nil {
				saved = s
			}
		}
		if len(resp.DispatchRequests) == 0 {
			return resp, saved, nil
		}
		if p.opts.Dispatcher == nil {
			return nil, nil, errcode.New(errcode.Invalid, fmt.Sprintf("plugin %s: asks to dispatch %d resources, and no dispatcher is configured", p.Name(), len(resp.DispatchRequests)))
		}
		if round+1 >= p.opts.MaxRounds {
			return nil, nil, errcode.New(errcode.Internal, fmt.Sprintf("plugin %s: still dispatching after %d rounds", p.Name(), p.opts.MaxRounds))
		}
		results := p.dispatch(ctx, id, resp.DispatchRequests)
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		next := *req
		next.DispatchResults = results
		next.ContinuationToken = ""
		if resp.Continuation != nil {
			next.ContinuationToken = resp.Continuation.Token
		}
		req = &next
	}
}

// dispatch runs the requests of one round, at most
// Options.DispatchConcurrency at a time, their manifests labelled as
// owned by id, and returns their results in their order.
func (p *Provider) dispatch(ctx context.Context, id manifest.ID, reqs []DispatchRequest) []DispatchResult {
	results := make([]DispatchResult, len(reqs))
	sem := make(chan struct{}, p.opts.DispatchConcurrency)
	var wg sync.WaitGroup
	for i, dr := range reqs {
		if dr.Manifest != nil {
			dr.Manifest = dr.Manifest.DeepCopy()
			dr.Manifest.SetOwner(id)
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			res := DispatchResult{ID: dr.ID, Status: "success"}
			r, err := p.opts.Dispatcher.Dispatch(ctx, dr)
			if err != nil {
				res.Status = "error"
				res.Error = &ErrorBody{Code: string(errcode.Of(err)), Message: err.Error()}
			} else {
				res.Resource = r
			}
			results[i] = res
		})
	}
	wg.Wait()
	return results
}

// stateUpdate checks a stateUpdate about id made while running action,
// lists the children it names with ctx's ChildRecorder and returns the
// resource it saves (nil for a delete or a save without a state).
func (p *Provider) stateUpdate(ctx context.Context, id manifest.ID, action string, u *StateUpdate) (*manifest.Resource, error) {
	bad := func(format string, args ...any) error {
		return p.protocolError(fmt.Errorf("%w: stateUpdate: "+format, append([]any{ErrProtocol}, args...)...), nil)
	}
	switch {
	case u.Provider != "" && u.Provider != p.Name():
		return nil, bad("provider %q is not this plugin", u.Provider)
	case u.Name != "" && u.Name != id.Name:
		return nil, bad("name %q, but the request is about %q", u.Name, id.Name)
	case u.Operation == StateDelete && action != ActionDelete:
		return nil, bad("operation delete answering %s", action)
	case u.Operation == StateSave && action == ActionDelete:
		return nil, bad("operation save answering delete")
	case u.State == nil:
		return nil, nil
	case u.State.Kind != "" && u.State.Kind != id.Kind, u.State.APIVersion != "" && u.State.APIVersion != id.APIVersion:
		return nil, bad("state is a %s %s, but the request is about a %s %s", u.State.APIVersion, u.State.Kind, id.APIVersion, id.Kind)
	}
	if rec := registry.CallOf(ctx).Children; rec != nil && len(u.State.Children) > 0 {
		if p.opts.Dispatcher == nil {
			return nil, errcode.New(errcode.Invalid, fmt.Sprintf("plugin %s: its stateUpdate names children, and no dispatcher is configured to resolve them", p.Name()))
		}
		for _, c := range u.State.Children {
			cid, err := p.opts.Dispatcher.Resolve(c)
			if err != nil {
				return nil, err
			}
			if err := rec.ChildListed(ctx, cid); err != nil {
				return nil, err
			}
		}
	}
	r := &manifest.Resource{APIVersion: id.APIVersion, Kind: id.Kind, Metadata: manifest.Metadata{Name: id.Name}, Spec: u.State.Spec, Status: u.State.Status}
	if m := u.State.Metadata; m != nil {
		r.Metadata.Labels = m.Labels
	}
	return r, nil
}

// call runs the plugin with req and decodes its response; an error
// response is an *Error.
func (p *Provider) call(ctx context.Context, req *Request) (*Response, error) {
	req.Version = ProtocolVersion
	req.Config = p.config.Values()
	if req.DispatchResults == nil {
		req.DispatchResults = []DispatchResult{}
	}
	in, err := json.Marshal(req)
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "plugin "+p.Name()+": encoding the request", err)
	}
	res, err := run(ctx, p.plugin.Path, nil, in, p.opts.Timeout, p.opts.MaxResponse)
	if res != nil && res.stderr != "" {
		p.opts.Logger.Debug("plugin stderr", "plugin", p.Name(), "action", req.Action, "stderr", p.redact.Replace(res.stderr))
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, err
	case errors.Is(err, ErrTooLarge):
		return nil, p.protocolError(fmt.Errorf("%w: %w", ErrProtocol, err), nil)
	case err != nil:
		return nil, errcode.Wrap(errcode.Of(err), fmt.Sprintf("plugin %s (%s)", p.Name(), p.plugin.Path), &redactedError{p.redact.Replace(err.Error()), err})
	case len(strings.TrimSpace(string(res.stdout))) == 0:
		why := "exited without a response"
		if res.err != nil {
			why = "failed: " + res.err.Error()
		}
		return nil, errcode.New(errcode.Internal, fmt.Sprintf("plugin %s (%s) %s%s", p.Name(), p.plugin.Path, why, stderrNote(res.stderr, p.redact)))
	}
	resp, err := DecodeResponse(res.stdout)
	if err != nil {
		return nil, p.protocolError(err, res)
	}
	if resp.Status == "error" {
		e := resp.Error
		return nil, &Error{Plugin: p.Name(), Code: mapCode(e.Code), Wire: e.Code, Message: p.redact.Replace(e.Message), Details: p.redact.Replace(e.Details)}
	}
	return resp, nil
}

// protocolError reports output that does not follow the protocol,
// naming the plugin and the first bytes of what it printed.
func (p *Provider) protocolError(err error, res *result) error {
	msg := fmt.Sprintf("plugin %s (%s): invalid response", p.Name(), p.plugin.Path)
	if res != nil {
		msg += " starting " + p.redact.Replace(firstBytes(res.stdout)) + stderrNote(res.stderr, p.redact)
	}
	return errcode.Wrap(errcode.Internal, msg, &redactedError{p.redact.Replace(err.Error()), err})
}

// redactedError is err with its message redacted; errors.Is still sees
// through it.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
