package plugin

import (
	"context"

	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/registry"
)

// Driver is a loaded plugin as a registry.Driver, so that a program (the
// CLI) can route to it, list its kinds and actions and open it with its
// configuration section like a compiled-in provider. It is safe for
// concurrent use.
type Driver struct {
	// Plugin is the loaded plugin; required.
	Plugin *Plugin
	// Options tune its calls; Open's OpenOptions.Logger replaces
	// Options.Logger when set.
	Options Options
}

var _ registry.Driver = Driver{}

// Info describes the plugin from its capabilities.
func (d Driver) Info() registry.DriverInfo {
	c := &d.Plugin.Capabilities
	return registry.DriverInfo{Name: c.ProviderName, Kinds: kindsOf(c), Actions: actionsOf(c)}
}

// DecodeConfig reads the section providers.<name> as it is, into a
// *Config; the plugin checks it.
func (d Driver) DecodeConfig(sec *config.Section) (registry.DriverConfig, error) {
	var nodes map[string]*yaml.Node
	if err := sec.Decode(&nodes); err != nil {
		return nil, err
	}
	values, err := decodeSection(nodes)
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "plugin "+d.Plugin.Name(), err)
	}
	return NewConfig(values, d.Plugin.Capabilities.SecretConfigFields...), nil
}

// Open returns the plugin's *Provider. It runs nothing. Unless
// Options.Dispatcher is set, the plugin dispatches through
// OpenOptions.Registry (a RegistryDispatcher), when there is one.
func (d Driver) Open(_ context.Context, cfg registry.DriverConfig, opts registry.OpenOptions) (registry.Provider, error) {
	c, _ := cfg.(*Config)
	if c == nil && cfg != nil {
		return nil, errcode.New(errcode.Invalid, "plugin "+d.Plugin.Name()+": configuration of another driver (an openctl bug)")
	}
	o := d.Options
	if opts.Logger != nil {
		o.Logger = opts.Logger
	}
	if o.Dispatcher == nil && opts.Registry != nil {
		o.Dispatcher = RegistryDispatcher{Registry: opts.Registry}
	}
	return New(d.Plugin, c, o), nil
}
