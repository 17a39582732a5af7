// Package registry defines the contract between the openctl engine and its
// providers, and the [Registry] that routes resources to them.
//
//	var reg registry.Registry // the zero value is ready to use
//	p, err := proxmox.New(cfg)
//	if err != nil { ... }
//	if err := reg.Register(p); err != nil {
//		return err // an Invalid error: bad or duplicate name or group, no kinds, ...
//	}
//	defer reg.Close()
//
//	id := manifest.ID{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: "web-01"}
//	vm, err := reg.Get(ctx, id) // routed to the provider named "proxmox"
//	if errors.Is(err, errcode.NotFound) {
//		// not created yet
//	}
//
// # The Provider contract
//
// A [Provider] has five methods: Name, Kinds, Get, Apply and Delete. Name
// is a DNS-1123 label; the provider serves the API group <name>.openctl.io
// unless its [Driver] lists groups: a third-party provider may serve any
// DNS subdomain group, as a Kubernetes CRD does ("files.example.com").
// Kinds lists the kinds it serves. Get, Apply and
// Delete take a context.Context first and must honour its cancellation.
// Apply is idempotent and never sees a $ref marker; Delete of a missing
// resource is not an error. A provider must be safe for concurrent use:
// the engine applies independent resources in parallel.
//
// A provider works on its own, with no registry at all: it is an ordinary
// Go value built by its package's New(cfg). The engine retries whole calls
// that fail with errcode.Transient; providers do not retry them again
// inside (see [Provider] for the rule).
//
// # What a call carries: Call
//
// The other half of the contract is what the engine tells a provider
// about the call it makes, one [Call] in the call's context, read with
// [CallOf] (and installed with [WithCall] by the engine, or by a test):
//
//   - Owner: the identity of the state store, to mark what the provider
//     creates so that two installations never take each other's
//     resources;
//   - Prior: the resource as last recorded, for kinds that set
//     [Kind].ReadsPrior;
//   - Records: the state's records of a kind;
//   - Read: another resource read live, through its provider (a K3s
//     node asks whether its VM is off);
//   - Cascade: a delete that goes with its owner's;
//   - Parent: the composite a child belongs to, as the operation applies
//     it now;
//   - Children: where a provider records what it applies through other
//     providers ([ChildRecorder]);
//   - Step: progress, reported with [Call.ReportStep].
//
// Every field may be zero: a provider used without an engine gets the
// zero Call and must work with it. Nothing else reaches a provider
// through its context.
//
// # Drivers
//
// A [Driver] is a provider as a program compiles it in: its [DriverInfo]
// (name, groups, kinds, actions — known without configuration), a strict
// decoder for its section of the configuration file (config.Section),
// Open, and optionally an [EnvConfigurer] (OPENCTL_<NAME>_* variables) and
// a [Sandboxer] (an in-process simulator). [Registry.RegisterDriver] adds
// a provider that is opened the first time something routes to it, so a
// program can route, list kinds and generate action commands before it
// knows which providers a command needs, and a provider without
// configuration fails only the commands that use it. The reference CLI is
// cli.Main with the drivers compiled in; a team's own binary adds its own
// driver (examples/custom-cli in the repository).
//
// # Optional interfaces
//
// Further abilities are separate, small interfaces that the engine finds
// by type assertion; new abilities arrive as new interfaces, never as new
// methods on Provider:
//
//   - [Lister]: enumerate the resources of a kind (CLI "get" without a
//     name, [Registry.List]).
//   - [Validator]: check a manifest beyond decoding, before anything is
//     applied.
//   - [Planner]: expand a composite resource into child manifests; required
//     for every kind marked [Kind].Composite.
//   - [Differ]: say whether a change is made in place or needs a replace.
//   - [Checker]: refuse, from what already exists, a resource Apply would
//     refuse, so that Plan refuses it first with the same error.
//   - [Placer]: choose, when planning, what manifests leave open (a VM's
//     node), so that Plan shows it and Apply does the same.
//   - [Producer]: say that a live resource will not report a field a
//     $ref waits for (a stopped VM's address), ending the wait at once.
//   - [Adopter]: hand a resource from one openctl state to another.
//   - [Actioner]: offer named operations (start, stop, logs) that a CLI
//     turns into subcommands; see [FindAction] and [ActionSpec.CheckArgs].
//   - [Pinger]: check, before an Apply changes anything, that the
//     provider's endpoints answer and accept its credentials.
//   - io.Closer: release connections; [Registry.Close] calls it.
//
// A good provider implements Lister and Validator: listing makes it
// browsable and validation reports mistakes before anything changes. It
// implements Differ when some fields cannot change in place, Planner for
// its composite kinds, and io.Closer when it holds connections. A
// resource that becomes usable some time after it is created (a VM whose
// guest agent reports an address) is waited for inside Apply, which
// reports the wait with [Call.ReportStep].
//
// Assert the interfaces a provider means to implement at compile time,
// next to its type:
//
//	var (
//		_ registry.Provider  = (*Cluster)(nil)
//		_ registry.Planner   = (*Cluster)(nil)
//		_ registry.Validator = (*Cluster)(nil)
//	)
//
// # Errors
//
// Errors carry a code from package errcode and are checked with errors.Is:
// Get of a missing resource returns an error matching errcode.NotFound
// (for example fmt.Errorf("proxmox: vm %q: %w", name, errcode.NotFound)),
// temporary failures match errcode.Transient so that the engine retries
// them, and a bad manifest matches errcode.Invalid, naming the field.
//
//	if errors.Is(err, errcode.NotFound) { ... }
//
// Errors from this package start with "registry:". Every routing failure
// matches errcode.Invalid: a malformed apiVersion, a kind or version the
// provider does not serve (listing what it does serve), and an unknown
// group, reported as an *[UnknownGroupError] listing the registered
// groups.
//
// # The Registry
//
// A [Registry] routes by the group of a resource's apiVersion:
// "proxmox.openctl.io/v1" goes to the provider serving proxmox.openctl.io
// (the one named "proxmox"), which must serve the kind and, if its
// [Kind].Versions is not empty, the version. Two providers claiming one
// group are refused at registration.
// Its zero value is an empty registry ready to use, and it is safe for
// concurrent use. [Registry.Register] is atomic: when it fails, none of the
// providers passed are registered.
//
// A Registry implements refs.Getter, so the engine resolves $ref markers
// through it: a k3s node referring to a Proxmox VM's status.ip is fetched
// from the proxmox provider without either provider knowing about the
// other. [Registry.ResolveKind] maps the names a CLI accepts ("vm",
// "virtualmachines", "vm.proxmox") to a kind.
//
// # Lifecycle
//
// A provider goes through these steps:
//
//  1. New: its package's constructor checks its configuration (or
//     Driver.Open does, from the configuration file's section).
//  2. Register: the provider is added to a Registry (openctl.WithProviders
//     does this for the engine), or RegisterDriver adds it to be opened
//     on first use.
//  3. Validate: every manifest is routed with [Registry.Lookup] and checked
//     by the provider's Validator, before anything is applied.
//  4. Plan, Apply, Delete: composites are planned, then resources are
//     applied or deleted in dependency order, in parallel.
//  5. Close: [Registry.Close] closes every provider that implements
//     io.Closer.
//
// # Progress
//
// Long operations report the step they are in with [Call.ReportStep]
// ("cloning", "waiting for guest agent"):
// registry.CallOf(ctx).ReportStep("cloning"). The engine installs a
// reporter per resource; without one ReportStep does nothing, so
// providers call it unconditionally.
//
// # Testing providers
//
// Package registry/providertest holds the conformance kit every provider
// runs, providertest.RunConformance, which checks the contract above (typed
// NotFound, idempotent Apply, Delete of a missing resource, List, concurrent
// Applies), and providertest.Fake, an in-memory provider for tests of code
// built on the engine.
package registry
