// Package cli is the reference openctl command line as a library: the
// commands apply, plan, get, describe, delete, validate, state, config
// and completion, the actions of every provider as subcommands
// ("openctl <provider> <action> KIND NAME", generated from its
// registry.ActionSpecs), --sandbox, live progress and the documented exit
// codes — for whatever providers a program compiles in.
//
// A binary is a few lines listing its drivers and state backends:
//
//	func main() {
//		cli.Main(cli.Options{
//			Drivers:  []registry.Driver{vms.Driver{}, files.Driver{}},
//			Backends: []state.Backend{state.FileBackend{}, postgres.Backend{}},
//		})
//	}
//
// The reference binary, cmd/openctl, is that with the Proxmox VE driver;
// a team's own adds its drivers (see examples/custom-cli in the
// repository, which adds a provider serving files.example.com).
//
// # Sessions
//
// A command opens only the providers its manifests or kind arguments
// route to (registry.Registry.RegisterDriver): a provider without
// configuration breaks only the commands that need it, with its driver's
// message saying how to configure it. Each provider's configuration is
// its section of the configuration file (config.Section), with its
// OPENCTL_<NAME>_* variables laid over it (registry.EnvConfigurer).
// --context NAME selects the context NAME of every provider that has one;
// --context PROVIDER=NAME[,PROVIDER=NAME...] selects per provider; each
// provider has its own default context. --sandbox opens the drivers'
// simulators (registry.Sandboxer) instead, with state in memory.
//
// The state store is named by a DSN (state.dsn in the file,
// OPENCTL_STATE_DSN, state migrate --to) and opened through the
// Options.Backends, registered explicitly; file:DIR is always known.
//
// # Exit codes
//
// 0 success; 1 failure; 2 invalid input or usage, and for plan
// --detailed-exitcode pending changes; 130 and 143 after SIGINT and
// SIGTERM, when work in flight was cancelled and the state lock released.
package cli
