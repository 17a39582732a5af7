package config

import (
	"fmt"

	"github.com/openctl/openctl/proxmox"
)

// Proxmox returns the configuration of the Proxmox provider: every context
// of providers.proxmox, each with the credentials it names and the
// section's defaults (storage, bridge). The default context is
// contextOverride (a --context flag) if it is not empty, else the
// section's default-context. Limits and Timeouts are left zero, which
// means the provider's defaults.
//
// The result is checked with proxmox.Config.Validate. Every error matches
// errcode.Invalid and none holds a secret: a context without credentials,
// credentials that are not defined, an unknown default, an unknown
// override (the message lists the contexts), or no Proxmox configuration
// at all (the message says how to write one).
func (c *Config) Proxmox(contextOverride string) (proxmox.Config, error) {
	file := c.Path
	p := c.Providers[ProviderProxmox]
	if p == nil || len(p.Contexts) == 0 {
		where := "no configuration file"
		switch {
		case c.Path != "":
			where = c.Path + " has no providers.proxmox.contexts"
		case c.meta.source != "":
			where = c.meta.source + " does not exist"
		}
		return proxmox.Config{}, &Error{Msg: "no Proxmox VE endpoint is configured (" + where + "): " +
			"add providers.proxmox with a context and its credentials to the configuration file, " +
			"or set " + EnvProxmoxURL + ", " + EnvProxmoxTokenID + " and " + EnvProxmoxTokenSecret + " (and " + EnvProxmoxFingerprint + "), " +
			"or try the built-in simulator with --sandbox"}
	}
	const base = "providers.proxmox"
	var errs []*Error
	fail := func(field, format string, args ...any) {
		errs = append(errs, c.errAt(file, field, fmt.Sprintf(format, args...)))
	}

	var defaults proxmox.Defaults
	for _, k := range sortedKeys(p.Defaults) {
		switch v := p.Defaults[k]; k {
		case "storage":
			defaults.Storage = v
		case "bridge":
			defaults.Bridge = v
		default:
			fail(joinPath(base+".defaults", k), "unknown Proxmox default%s (known: bridge, storage)", suggest(k, []string{"bridge", "storage"}))
		}
	}

	names := sortedKeys(p.Contexts)
	credNames := sortedKeys(p.Credentials)
	out := proxmox.Config{Contexts: make(map[string]proxmox.Context, len(p.Contexts))}
	for _, name := range names {
		x := p.Contexts[name]
		field := joinPath(base+".contexts", name)
		if x == nil {
			x = &Context{}
		}
		pc := proxmox.Context{
			Endpoint:           x.Endpoint,
			Node:               x.Node,
			Fingerprint:        x.Fingerprint,
			CAFile:             x.CAFile,
			InsecureSkipVerify: x.InsecureSkipVerify,
			Defaults:           defaults,
		}
		switch cr, ok := p.Credentials[x.Credentials]; {
		case x.Credentials == "":
			fail(field+".credentials", "required: the name of an entry of %s.credentials (defined: %s)", base, list(credNames))
		case !ok:
			fail(field+".credentials", "%s is not defined under %s.credentials (defined: %s)", quote(x.Credentials), base, list(credNames))
		case cr != nil:
			pc.TokenID, pc.TokenSecret, pc.TokenSecretFile = cr.TokenID, cr.TokenSecret, cr.TokenSecretFile
		}
		out.Contexts[name] = pc
	}

	switch {
	case contextOverride != "":
		if _, ok := p.Contexts[contextOverride]; !ok {
			errs = append(errs, &Error{Msg: fmt.Sprintf("no Proxmox context %s (contexts: %s)", quote(contextOverride), list(names))})
		}
		out.DefaultContext = contextOverride
	case p.DefaultContext != "":
		if _, ok := p.Contexts[p.DefaultContext]; !ok {
			fail(base+".default-context", "%s is not a context (contexts: %s)", quote(p.DefaultContext), list(names))
		}
		out.DefaultContext = p.DefaultContext
	}

	if err := joinErrors(errs); err != nil {
		return proxmox.Config{}, err
	}
	if err := out.Validate(); err != nil {
		// Name the file, unless a context came from the environment.
		if file != "" && (c.meta.env == nil || !c.meta.env.proxmox) {
			return proxmox.Config{}, fmt.Errorf("%s: %w", file, err)
		}
		return proxmox.Config{}, err
	}
	return out, nil
}
