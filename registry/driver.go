package registry

import (
	"context"
	"log/slog"

	"github.com/openctl/openctl/config"
)

// Driver is a provider as a program compiles it in: everything about it
// that is known without configuration, and how to build it from its
// section of the user's configuration file. A program lists its drivers
// explicitly (there is no init() registration); the reference CLI is
// cli.Main(proxmox.Driver{}) and a team's own binary adds its own.
//
// The lifecycle, as the CLI runs it:
//
//  1. Info: name, API groups, kinds and actions, for help, completion
//     and routing, without opening anything.
//  2. DecodeConfig: the providers.<name> section, decoded strictly
//     (config.Section.Decode), only when a command needs the provider.
//  3. Optionally [EnvConfigurer]: OPENCTL_<NAME>_* variables laid over
//     the file, for CI runners that have none.
//  4. Open: the Provider, contacting nothing yet.
//
// A driver with a [Sandboxer] can also start an in-process simulator of
// what it manages, for `openctl --sandbox`.
type Driver interface {
	// Info describes the provider. It needs no configuration and must
	// contact nothing.
	Info() DriverInfo
	// DecodeConfig decodes the provider's section of the configuration
	// file. An empty section (sec.IsEmpty) is not an error by itself:
	// the result may have no contexts, and Open then says how to
	// configure the provider. Errors match errcode.Invalid and name the
	// file, line and field (see config.Section.Decode and Errorf).
	DecodeConfig(sec *config.Section) (DriverConfig, error)
	// Open builds the provider from a configuration that DecodeConfig,
	// ConfigFromEnv or Sandbox of the same driver returned. It contacts
	// nothing: connection problems show when the provider is first used.
	// A configuration without what the provider needs is an
	// errcode.Invalid error that says how to configure it.
	Open(ctx context.Context, cfg DriverConfig, opts OpenOptions) (Provider, error)
}

// DriverInfo describes a provider without any configuration.
type DriverInfo struct {
	// Name is the provider's name, a DNS-1123 label: its configuration
	// section (providers.<name>), its environment variables
	// (OPENCTL_<NAME>_*), its CLI subcommand (openctl <name> <action>).
	Name string
	// Groups are the API groups it serves. Empty means the one group
	// <Name>.openctl.io, which openctl's own providers use; a third-party
	// provider may serve any DNS subdomain ("files.example.com").
	Groups []string
	// Kinds are the kinds it serves, as its Provider's Kinds returns them.
	Kinds []Kind
	// Actions are the actions its Provider offers (see Actioner).
	Actions []ActionSpec
	// ContextColumns name the columns `openctl config get-contexts`
	// prints for each context after its name ("ENDPOINT", "NODE"); the
	// values come from DriverConfig.Contexts.
	ContextColumns []string
	// Env documents the environment variables of its [EnvConfigurer],
	// if it has one.
	Env []EnvVar
}

// EnvVar documents one environment variable a driver reads.
type EnvVar struct {
	Name string // e.g. OPENCTL_PROXMOX_URL
	Help string // one line
}

// DriverConfig is a provider's configuration as its driver decoded it.
// Its concrete type belongs to the driver; it should marshal to YAML in
// the shape of the configuration file, secrets redacted (secret.Secret
// does that), for `openctl config view`.
type DriverConfig interface {
	// Contexts lists the configured contexts, sorted by name, each with
	// the values of DriverInfo.ContextColumns.
	Contexts() []ContextInfo
	// WithContext returns the configuration with name as the default
	// context (a --context flag). An unknown name is an errcode.Invalid
	// error listing the contexts.
	WithContext(name string) (DriverConfig, error)
}

// ContextInfo describes one context of a provider, for listings.
type ContextInfo struct {
	Name    string
	Current bool     // it is the default context
	Columns []string // the values of DriverInfo.ContextColumns, in order
}

// OpenOptions are what Driver.Open passes on to the provider.
type OpenOptions struct {
	// Logger receives the provider's log; nil discards it.
	Logger *slog.Logger
	// Registry is the registry the provider is opened for. A provider
	// that applies other providers' resources on its own (an exec plugin
	// dispatching) does so through it; nil: it cannot.
	Registry *Registry
}

// EnvConfigurer is implemented by drivers that read a context from
// environment variables, OPENCTL_<NAME>_*, for CI runners configured
// without a file. DriverInfo.Env documents the variables.
type EnvConfigurer interface {
	// ConfigFromEnv lays the environment read through getenv over cfg
	// (what DecodeConfig returned) and returns the result, whose default
	// context is the one the environment defines. When none of the
	// driver's variables is set it returns cfg unchanged. Incomplete
	// settings are an errcode.Invalid error naming the variables.
	ConfigFromEnv(cfg DriverConfig, getenv func(string) string) (DriverConfig, error)
}

// Sandboxer is implemented by drivers that can simulate what their
// provider manages in-process, so that manifests can be tried with
// nothing installed (`openctl apply --sandbox`).
type Sandboxer interface {
	// Sandbox starts the simulator and returns a configuration that
	// points at it. The caller closes the Sandbox when done.
	Sandbox(ctx context.Context, opts SandboxOptions) (*Sandbox, error)
}

// SandboxOptions tune a sandbox.
type SandboxOptions struct {
	// Logger receives the simulator's log; nil discards it.
	Logger *slog.Logger
}

// Sandbox is a running simulator.
type Sandbox struct {
	// Config is the provider's configuration pointing at the simulator;
	// pass it to Driver.Open.
	Config DriverConfig
	// Description says what runs, for the user: "a simulated Proxmox VE
	// (nodes pve1..pve3) at https://127.0.0.1:40411".
	Description string
	// Close stops the simulator.
	Close func() error
}
