// Package plugin runs exec plugins — executables named openctl-<name>
// that speak the openctl plugin protocol of JSON over standard input and
// output — as openctl providers, so that a plugin written in any
// language, or for the original openctl tool, works unchanged.
//
//	dirs := plugin.Dirs(nil) // $OPENCTL_HOME/plugins (~/.openctl/plugins), then $PATH
//	ps, err := plugin.Discover(ctx, dirs, plugin.Options{})
//	// err joins the plugins that could not be loaded; ps holds the others
//	for _, p := range ps {
//		prov := plugin.New(p, plugin.NewConfig(values), plugin.Options{})
//		reg.Register(prov)
//	}
//
// A program with drivers (the CLI) registers plugin.Driver{Plugin: p}
// instead: its configuration section providers.<name> is read as it is
// and passed to the plugin as the requests' "config".
//
// # Protocol
//
// Load runs "openctl-<name> --capabilities" and decodes the answer
// strictly (unknown fields refused): providerName (which must match the
// file name), protocolVersion (the major version must be that of
// ProtocolVersion; a *VersionError names the plugin and both versions),
// resources with kind, plural and actions (get, list, create, apply,
// delete), optional subcommands (offered as registry actions).
//
// Every call then runs the plugin once, writes one Request on its
// standard input (version, action, resourceType, resourceName, manifest,
// config, continuationToken, dispatchResults) and decodes one Response
// from its standard output, strictly: one JSON document, no unknown
// fields, status "success" or "error", at most Options.MaxResponse
// bytes. An error response is an *Error that matches (errors.Is) the
// errcode of its code: NOT_FOUND, ALREADY_EXISTS, INVALID_REQUEST,
// UNAUTHORIZED and INTERNAL map to themselves, any other code to
// errcode.Internal with the code kept in Error.Wire; details are kept.
//
// # Process hygiene
//
// Each call is bounded by Options.Timeout and by its context: either
// kills the plugin's process group. Standard error is the plugin's log:
// its tail goes to Options.Logger at debug level and into the error when
// the plugin fails without a response (an errcode.Internal error naming
// the plugin and its exit status). Output that is not a valid response
// is an errcode.Internal error matching ErrProtocol that quotes its
// first bytes. Values of secret configuration keys (IsSecretKey,
// Capabilities.SecretConfigFields) are replaced by [redacted] in every
// message and log line built from the plugin's output.
//
// # Dispatch
//
// A response with dispatchRequests is answered by running each request
// through Options.Dispatcher — up to Options.DispatchConcurrency at once,
// each manifest labelled as owned by the resource the plugin is applying
// — and then calling the plugin again with the results, in the order it
// asked, and the continuation token, at most Options.MaxRounds times. A
// failed dispatch is reported to the plugin as a result with status
// "error" and the error's code.
//
// RegistryDispatcher applies (or deletes) each request through a
// registry, resolving its $refs, polls its waitFor condition with
// backoff, and reports every resource it applied or deleted to the
// registry.ChildRecorder the context carries — the engine installs one
// for every Apply and Delete — so that it is recorded in the state as a
// child of the plugin's resource as soon as it exists. A stateUpdate
// "save" lists its children there too (Dispatcher.Resolve turns their
// provider, kind and name into identities), and its state is the
// resource when the response carries none; the engine deletes recorded
// children before their owner. A stateUpdate about another provider or
// resource, or a "delete" answering an apply, is a protocol error.
package plugin
