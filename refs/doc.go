// Package refs finds and resolves $ref markers: the single primitive that
// both declares a dependency between two resources and names a value to pass
// from one to the other.
//
// # The marker
//
// A marker is a map with exactly one key, "$ref", placed anywhere in a
// resource's spec — at any depth, inside maps and lists:
//
//	apiVersion: k3s.openctl.io/v1
//	kind: K3sNode
//	metadata:
//	  name: dev-worker-0
//	spec:
//	  vmIP:
//	    $ref: {apiVersion: proxmox.openctl.io/v1, kind: VirtualMachine, name: dev-worker-0, field: status.ip}
//	  joinToken:
//	    $ref: {apiVersion: k3s.openctl.io/v1, kind: K3sNode, name: dev-cp-0, field: status.nodeToken}
//	  servers:
//	    - $ref: {apiVersion: k3s.openctl.io/v1, kind: K3sNode, name: dev-cp-0}
//
// The $ref map holds apiVersion, kind and name (all required, all strings)
// and an optional field: a dot path in [manifest.Field] syntax
// ("status.ip", "spec.cpu.cores", "status.ips[0]") into the target's object
// form (see [manifest.Resource.Object]: apiVersion, kind, metadata, spec,
// status). Without field the marker stands for the whole object. Any other
// key, a non-string value, an empty apiVersion, kind or name, a target ID
// that does not validate, a malformed field path, or a map holding "$ref"
// next to other keys is a malformed marker and an [errcode.Invalid] error.
// A resource may not refer to itself.
//
// [Marker] builds a marker, for composite providers whose Plan emits
// children that depend on each other.
//
// # Dependencies
//
// [Collect] lists every marker of a resource with its path, in a
// deterministic order (map keys sorted, lists by index), and reports every
// malformed marker at once. [Dependencies] reduces that list to the distinct
// targets, which are the resource's edges in the dependency graph: the
// engine applies a target before anything that refers to it.
//
// # Lazy resolution
//
// Values are resolved late, right before the provider's Apply, by
// [Resolve]: it fetches each distinct target once through a [Getter], reads
// the field off the live object and returns a deep copy of the resource in
// which every marker has been replaced by its value. The provider never
// sees a raw $ref. A resource exposes an output simply by reporting it in
// its status; a value that only exists once a dependency has been applied
// (a DHCP address, a join token) is therefore available to its dependents.
// Resolved values are data: a "$ref" inside one is not resolved again.
//
// # Cross-provider references
//
// The engine passes the provider registry as the Getter (registry.Registry
// routes Get by the apiVersion group to the provider that owns the kind), so
// a k3s node referring to a Proxmox VM's status.ip is no different from a
// reference within one provider: refs never knows which provider answers.
//
// # Errors
//
// Every failure about a marker is an [*Error] naming the referring
// resource, the marker's path, the target and the field; several are joined
// with errors.Join. Check them with errors.Is against the errcode codes:
// [errcode.Invalid] for malformed markers and self-references,
// [errcode.NotFound] for a missing target or a missing field, and the
// Getter's own code for other Getter failures (so a Transient failure stays
// retryable).
//
// The functions of this package keep no state between calls and are safe
// for concurrent use, provided the resources they read are not modified
// concurrently.
package refs
