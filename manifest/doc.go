// Package manifest defines openctl's resource type and reads and writes it:
// Kubernetes-style manifests decoded strictly from YAML or JSON, with every
// problem reported by file, line and field path.
//
//	rs, err := manifest.Load(ctx, []string{"cluster.yaml", "vms/"}, manifest.LoadOptions{})
//	if err != nil {
//		for _, e := range manifest.Errors(err) {
//			fmt.Fprintln(os.Stderr, e) // cluster.yaml:12:3: metadata.name: ...
//		}
//		return err
//	}
//	for _, r := range rs {
//		fmt.Println(r.ID().Short(), r.Source) // VirtualMachine/web-01 cluster.yaml:2
//	}
//
// ExampleDecodeBytes decodes a two-document stream and prints the IDs and
// an error; ExampleField reads fields.
//
// # Resources
//
// A [Resource] is one manifest: an apiVersion that routes it to a provider,
// a kind, metadata (a name, an optional namespace, labels and annotations),
// the spec the user wrote and the status the provider reports:
//
//	apiVersion: proxmox.openctl.io/v1
//	kind: VirtualMachine
//	metadata:
//	  name: web-01
//	  labels:
//	    tier: web
//	spec:
//	  cores: 2
//	  memory: 4096
//	  disks:
//	    - size: 32G
//	      storage: local-lvm
//
// The apiVersion has the form <group>/<version>: openctl's own providers
// serve <provider>.openctl.io, others any DNS subdomain group
// ([SplitAPIVersion]); the kind is letters and digits starting with an
// upper-case letter; the name is a DNS-1123 subdomain like a Kubernetes
// object name ("web-01", "web-01.lab"; [ValidateName]) and the namespace,
// if set, a DNS-1123 label. An [ID] — apiVersion, kind and name — identifies
// a resource; it is comparable, prints as
// "proxmox.openctl.io/v1/VirtualMachine/web-01" and [ParseID] reads that
// back. [ID.Short] gives the "VirtualMachine/web-01" form used in messages.
//
// # Values, field paths and hashes
//
// Spec and status are free-form but hold only normalised values:
// map[string]any, []any, string, bool, int64, float64 and nil. [Normalize]
// converts other Go values (ints, typed maps and slices, json.Number) to
// that form. Field paths such as "status.ip" or "spec.disks[0].size" reach
// into a value with [Field] and [SetField], or into a whole resource with
// [Resource.Field]. Field follows the (value, found, err) contract of
// Kubernetes' unstructured helpers: a missing key or an index past the end
// is (nil, false, nil) — absence is not an error — while a path that runs
// into a value of the wrong type, or a malformed path, is an error naming
// the path and the type found.
//
// [Hash] is a canonical hash of a value that ignores map order and treats
// 2 and 2.0 as equal; the engine compares the hash of a resolved spec with
// the one in state to detect no-ops. [Equal] and [Diff] compare values.
//
// # Decoding
//
// [DecodeBytes] and [Decode] read a multi-document YAML stream ("---"
// between documents; empty documents are skipped) or, when the input's
// first character other than white space is '{' or '[', JSON: one object,
// an array of objects, or a stream of objects. A kubectl-style List
// (apiVersion v1, kind List, items) stands for its items. [Load] reads files,
// directories and standard input and also rejects resources defined twice
// ([CheckDuplicates]). Decoding is strict:
//
//   - a document is a map with only the fields apiVersion, kind, metadata,
//     spec and status; metadata has only name, namespace, labels and
//     annotations. Any other field is an error at its line ("unknown field"),
//     so a misspelt field is never silently ignored;
//   - apiVersion, kind, metadata and metadata.name are required and checked
//     as described above; labels and annotations are maps of strings; spec
//     and status are maps;
//   - map keys are strings (an unquoted 80: is a number, and an error) and a
//     key may not repeat within a map;
//   - integers become int64 (float64 when too large for int64), other numbers
//     float64; infinities and NaN are rejected; timestamps stay strings, as
//     written; !!binary values are base64-decoded; other tags are rejected;
//   - anchors and aliases work, as do merge keys ("<<: *defaults", or a list
//     of aliases; the map's own keys win, then earlier merged maps). An
//     alias to a node containing it is rejected;
//   - sizes are limited, so that a mistaken or hostile input cannot use
//     unbounded memory: an input (file, standard input) is at most 4 MiB,
//     a document (a YAML document, a JSON value) at most 1 MiB, checked
//     before it is parsed; an input, and a Load, holds at most 10,000
//     resources; with aliases followed, an input expands to at most
//     1,000,000 values ("billion laughs" are rejected without being built),
//     nested at most 128 levels; a list or a map has at most 10,000 items,
//     a string at most 256 KiB, a map key at most 4 KiB. Each excess is an
//     error naming the file, the line and the field. Limits that depend on
//     a field's meaning (how many tags a VM may have) are the providers';
//   - JSON is held to the same rules (it is parsed as YAML, which keeps
//     positions), and a number too large for float64 is an error.
//
// Each problem is an [*errcode.InputError] (Input "manifest") carrying
// the file ("<stdin>" for standard input), the line and column, the field
// path ("" for the whole document) and a message, and reads like
//
//	cluster.yaml:12:3: metadata.name: name "Web_01" is not a DNS-1123 subdomain (...)
//
// All the problems of an input are reported, as an errors.Join of
// *errcode.InputError values sorted by file and line (at most 50, then "...
// and N more errors"); [Errors] lists them. Every one is an
// [errcode.Invalid] error. A decoded resource's [Source] records its file,
// the line where it starts and its index among the file's documents, and
// finds where any of its spec fields is written ([Source.Field]). A
// provider's own spec checks report the same way: it returns
// [FieldErrorf] problems naming the field path and places them with
// [Resource.Locate] ("cluster.yaml:14:5: spec.k3s.version: must be ...").
//
// [Validate] applies the same checks to a resource built in code.
// [EncodeYAML] and [EncodeJSON] write resources in a stable field order
// (for "get -o yaml" and re-applying), [EncodeYAMLList] and
// [EncodeJSONList] the same as a List; their output decodes back to equal
// resources.
//
// # Concurrency
//
// The functions of this package are safe for concurrent use. A Resource is
// a plain value and is not safe for concurrent mutation; see
// [Resource.DeepCopy].
package manifest
