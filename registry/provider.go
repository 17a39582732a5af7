package registry

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/openctl/openctl/manifest"
)

// Provider is what every provider implements: it serves the API group
// <Name()>.openctl.io (or the groups its Driver's Info lists) and reads, applies and deletes resources of the kinds it lists.
//
// Methods take the context first and must honour its cancellation. Errors
// are wrapped with %w and classified with the codes of package errcode:
// Get of a missing resource returns an error matching errcode.NotFound;
// temporary failures match errcode.Transient so the engine retries them.
// A provider must be safe for concurrent use: the engine applies
// independent resources in parallel.
//
// Who retries: the engine retries a whole call — Get, List, Apply,
// Delete, Diff — that fails with errcode.Transient, with capped
// exponential backoff (openctl.WithRetry; 5 attempts by default). A
// provider does not retry those calls itself: a read fails at its first
// transient error, so that one Get under a persistent failure costs the
// engine's attempts times the requests of one Get, not their product.
// Inside Apply, Delete or an action a provider may retry a step where
// re-running the whole call would be wrong or wasteful after a side
// effect (reading back what it just created, a remote lock timeout on a
// write, polling a task it started), bounded, with package backoff, and
// says so in its documentation.
type Provider interface {
	// Name is the provider's name: "proxmox" serves proxmox.openctl.io/*.
	Name() string
	// Kinds lists the kinds the provider serves.
	Kinds() []Kind
	// Get reads the live resource, including its status. A missing
	// resource is an error matching errcode.NotFound.
	Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error)
	// Apply creates the resource or updates it to match r.Spec, and
	// returns it with its status. It must be idempotent: applying the same
	// manifest twice leaves the same result. The spec it receives never
	// contains a $ref marker; the engine resolves them first. Apply must
	// not modify r.
	Apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error)
	// Delete removes the resource. Deleting a resource that does not exist
	// is not an error.
	Delete(ctx context.Context, id manifest.ID) error
}

// Kind describes one kind a provider serves.
type Kind struct {
	// Kind is the manifest kind, e.g. "VirtualMachine".
	Kind string `json:"kind"`
	// Plural is the lower-case plural a CLI accepts, e.g. "vms" or
	// "virtualmachines".
	Plural string `json:"plural,omitempty"`
	// ShortNames are further aliases, e.g. "vm".
	ShortNames []string `json:"shortNames,omitempty"`
	// Aliases are other names manifests and $ref markers may give the
	// kind (a name from an earlier API, e.g. "K3sNode" for a K3s Node).
	// They are not kinds of their own: the engine reads a resource or a
	// $ref written with one as this kind ([Registry.Canonical]), records
	// it under this kind, and a CLI resolves the name to this kind.
	Aliases []string `json:"aliases,omitempty"`
	// Versions lists the apiVersion versions served ("v1"). Empty means
	// every version.
	Versions []string `json:"versions,omitempty"`
	// Composite is true when the provider implements [Planner] for this
	// kind: applying it expands into child resources.
	Composite bool `json:"composite,omitempty"`
	// ReadOnly is true for kinds that can be read and listed but not
	// applied or deleted (e.g. a Proxmox Node).
	ReadOnly bool `json:"readOnly,omitempty"`
	// SecretFields are paths under status or spec (e.g.
	// "status.kubeconfig", "spec.cloudInit.password"; map keys only) whose
	// values are secrets: the engine records them in state.Record.Secrets
	// instead of the status or the recorded spec, stores keep them sealed,
	// and output redacts them. (A $ref marker in a spec field stays in the
	// recorded spec: it names where the secret comes from, not its value.)
	SecretFields []string `json:"secretFields,omitempty"`
	// Fields, when set, declares every field a resource of the kind can
	// have, as dotted paths into its object form ("spec.cpu.cores",
	// "status.ip"; map keys only, no list indexes). A path stands for its
	// whole subtree: "spec.tags" covers "spec.tags[0]", "spec.labels"
	// covers "spec.labels.team". The engine uses it to reject, before
	// anything is applied, a $ref naming a field no resource of the kind
	// can ever have (see [Kind.HasField]). apiVersion, kind and metadata
	// are always allowed. Empty: $ref fields to the kind are not checked.
	Fields []string `json:"fields,omitempty"`
	// ReadsPrior is true when Get and Delete cannot find a resource of
	// the kind from its identity alone and read where to look from the
	// state's record ([Prior]); the engine then installs the record for
	// every Get and Delete.
	ReadsPrior bool `json:"readsPrior,omitempty"`
	// Columns are the kind's table columns after NAME, in order, as a CLI
	// prints them ("openctl get vms"); Wide ones only in wide output. A
	// CLI adds AGE itself.
	Columns []Column `json:"columns,omitempty"`
	// Hint is a command line a CLI suggests after applying a resource
	// of the kind, with {field} replaced by the resource's value of that
	// dotted path: "kubectl --kubeconfig {status.outputs.kubeconfigPath}
	// get nodes". It is not shown while a field it names is empty.
	Hint string `json:"hint,omitempty"`
}

// HasField reports whether a resource of the kind can have the field at
// path (a $ref field: "status.ip", "spec.disks[0].size"): always when the
// kind declares no Fields; otherwise when path is under apiVersion, kind or
// metadata, is a declared path, lies under one, or leads to one ("status"
// when "status.ip" is declared).
func (k Kind) HasField(path string) bool {
	if len(k.Fields) == 0 || path == "" {
		return true
	}
	for _, top := range [...]string{"apiVersion", "kind", "metadata"} {
		if within(path, top) {
			return true
		}
	}
	for _, f := range k.Fields {
		if within(path, f) || within(f, path) {
			return true
		}
	}
	return false
}

// within reports whether path is base or lies under it.
func within(path, base string) bool {
	rest, ok := strings.CutPrefix(path, base)
	return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
}

// Column is one column of a kind's table output.
type Column struct {
	// Name is the header, e.g. "VMID".
	Name string `json:"name"`
	// Field is the dotted path of the value, e.g. "status.vmid" or
	// "spec.cpu.cores"; lists are printed comma-separated.
	Field string `json:"field"`
	// Wide marks a column shown only in wide output.
	Wide bool `json:"wide,omitempty"`
}

// Lister is implemented by providers that can enumerate resources of a kind.
type Lister interface {
	// List returns every resource of the given kind the provider can see,
	// sorted by name.
	List(ctx context.Context, kind string) ([]*manifest.Resource, error)
}

// Planner is implemented by composite providers. Plan expands a resource
// into the child manifests that realise it (a K3s Cluster into VMs, nodes
// and agent installs). The engine adds the children to the same
// dependency graph as everything else, labels them with their owner
// (manifest.LabelOwnerKind / LabelOwnerName), applies them before the owner
// and deletes them before it. Children may carry $ref markers to each other
// and to other resources. Plan must be deterministic and must not change
// anything.
type Planner interface {
	Plan(ctx context.Context, r *manifest.Resource) ([]*manifest.Resource, error)
}

// Pinger is implemented by providers that can check, before the engine
// changes anything, that they can do their part of an Apply: their
// endpoints answer and accept their credentials. The engine calls Ping
// once per Apply with the resources of the call the provider serves (a
// nil or empty list means every endpoint it has), after the offline
// checks and before the first change, so that an unreachable or
// misconfigured provider fails the whole Apply instead of half of it.
// Errors carry their code (Unauthorized, Transient, Invalid); the engine
// retries Transient ones like any read.
type Pinger interface {
	Ping(ctx context.Context, resources []*manifest.Resource) error
}

// Validator is implemented by providers that check a manifest beyond
// decoding: required fields, ranges, combinations. Validate runs before
// anything is applied, on the spec as written ($ref markers not yet
// resolved). Errors should match errcode.Invalid and name the field path.
type Validator interface {
	Validate(ctx context.Context, r *manifest.Resource) error
}

// Checker is implemented by providers that refuse, from what already
// exists, a resource an Apply of it would refuse before acting — a K3s
// Node naming a cluster that does not exist, or none when there are
// several. The engine calls Check for every resource it is to apply
// (not for deletes), with the spec as written ($ref markers unresolved)
// and the operation's Call (Records, Read): Plan fails with its error,
// as Apply would, and Apply fails that resource without running it
// (what depends on it is skipped). Check must not change anything.
type Checker interface {
	Check(ctx context.Context, r *manifest.Resource) error
}

// Placer is implemented by providers that choose, for resources to be
// applied, what their manifests leave open — a VM's Proxmox node among
// spec.nodes — from the live world, so that Plan shows the choice and
// Apply makes the same one. The engine calls Place once per Plan and
// Apply with every resource the provider is to apply (not deletes), in a
// stable order, specs as written ($ref markers unresolved); Place may set
// and remove fields of those specs (they are the engine's copies). A
// resource that exists keeps what it has. The same manifests on the same
// world must be placed the same way, whatever runs at once.
type Placer interface {
	Place(ctx context.Context, rs []*manifest.Resource) error
}

// ErrOwnedElsewhere is matched (errors.Is) by the errcode.AlreadyExists
// error of a provider refusing a resource that another openctl state owns
// (its mark names another registry.Call.Owner): what Adopter hands over.
var ErrOwnedElsewhere = errors.New("owned by another openctl state")

// Producer is implemented by providers whose resources report some
// status fields only in some states — a VM its address and host key only
// while it runs. While Apply waits for a $ref's field that its target
// declares (Kind.Fields) but does not report yet, the engine asks the
// target's provider whether the live resource will: an error (naming why
// and what to do) ends the wait at once, instead of after the ready
// timeout; nil lets it go on.
type Producer interface {
	WillReport(live *manifest.Resource, field string) error
}

// Adopter is implemented by providers that mark what they create with
// its state's owner (registry.Call.Owner) and can hand a resource from one
// state to another. Adopt re-marks the live resource id, owned by the
// state from, as the call's Owner's and returns it as Get would. One
// marked with another owner than from is errcode.AlreadyExists; one that
// does not exist is errcode.NotFound. The engine's Adopt calls it holding
// both states' locks.
type Adopter interface {
	Adopt(ctx context.Context, id manifest.ID, from string) (*manifest.Resource, error)
}

// Differ is implemented by providers that know which changes can be made
// in place and which need the resource to be replaced or restarted. The
// engine calls Diff when planning a resource that exists; without it, any
// change to the resolved spec is an in-place update.
type Differ interface {
	// Diff compares the desired resource (refs resolved where they could
	// be) with the live one.
	Diff(ctx context.Context, desired, live *manifest.Resource) (Diff, error)
}

// DiffAction is what applying a desired resource will do.
type DiffAction string

// The diff actions.
const (
	DiffNone    DiffAction = "no-op"
	DiffUpdate  DiffAction = "update"
	DiffReplace DiffAction = "replace"
)

// Diff is a provider's verdict on a change.
type Diff struct {
	Action DiffAction
	// Fields lists the changed fields, when the provider knows them.
	Fields []manifest.FieldChange
	// Reasons explain the action, e.g. "template changed: needs a new VM"
	// or "memory change takes effect after a reboot".
	Reasons []string
}

// Actioner is implemented by providers that offer named operations beyond
// apply and delete: start, stop, logs, upgrade. A CLI turns each
// [ActionSpec] into a subcommand generically.
type Actioner interface {
	// Actions lists the actions the provider offers.
	Actions() []ActionSpec
	// Do runs one action. Streaming output (logs) is written to req.Out as
	// it arrives; a short summary goes in the result's Message.
	Do(ctx context.Context, req ActionRequest) (*ActionResult, error)
}

// ActionSpec describes an action and its arguments.
type ActionSpec struct {
	// Name is the action's name, e.g. "start" or "logs".
	Name string `json:"name"`
	// Kind is the kind the action applies to.
	Kind string `json:"kind"`
	// Short is a one-line help text; Long an optional longer one.
	Short string `json:"short"`
	Long  string `json:"long,omitempty"`
	// Args are the action's arguments. The target resource's name is
	// always the first positional argument and is not listed.
	Args []ArgSpec `json:"args,omitempty"`
	// Records marks an action that changes what the state records of the
	// resources it acts on (a credential rotation, say): the engine holds
	// the state lock while it runs, as Apply does, and hands it
	// ActionRequest.Record. In-process providers only.
	Records bool `json:"records,omitempty"`
}

// ArgType is the type of an action argument.
type ArgType string

// The argument types. Values arrive in ActionRequest.Args as string, int64,
// bool and time.Duration respectively.
const (
	ArgString   ArgType = "string"
	ArgInt      ArgType = "int"
	ArgBool     ArgType = "bool"
	ArgDuration ArgType = "duration"
)

// ArgSpec describes one action argument; a CLI renders it as a flag.
// Default is typed like the values (an integer, a bool, a string), except
// that a duration default should be a string such as "30s" so that it
// survives a JSON round trip (a bare number is rejected as ambiguous).
type ArgSpec struct {
	Name     string  `json:"name"`
	Short    string  `json:"short,omitempty"` // one-letter flag alias
	Type     ArgType `json:"type"`
	Default  any     `json:"default,omitempty"`
	Required bool    `json:"required,omitempty"`
	Help     string  `json:"help,omitempty"`
}

// ActionRequest asks a provider to run an action on a resource.
type ActionRequest struct {
	Action string
	ID     manifest.ID
	// Args holds the argument values by ArgSpec name, already checked
	// against the spec (see [ActionSpec.CheckArgs]).
	Args map[string]any
	// Out receives streamed output; never nil when the engine calls Do.
	Out io.Writer
	// Record, set for an action whose spec says Records, records new
	// status (and spec) fields of resources the action changed, all of them before it
	// returns: call it after each step that must survive an interruption,
	// so that a re-run of the action finds where it stopped. Secret fields
	// are sealed as Apply seals them.
	Record func(ctx context.Context, updates ...StatusUpdate) error
}

// StatusUpdate is a change an action made to a recorded resource.
type StatusUpdate struct {
	ID manifest.ID
	// Status holds the status fields to set, by top-level key; the
	// record's other fields stay as they are.
	Status map[string]any
	// Spec holds the spec fields to set, by path ("spec.k3s.version"),
	// when the action changed what the manifest describes (an upgrade):
	// the record then says what is there, so that once the manifest says
	// the same, plan shows nothing to do without another apply.
	Spec map[string]any
}

// ActionResult is the outcome of an action.
type ActionResult struct {
	// Message is a short summary, e.g. "web-01 started".
	Message string
	// Resource is the resource after the action, when it makes sense.
	Resource *manifest.Resource
}

// Interface guards for the optional interfaces' method sets live with the
// providers that implement them, e.g.:
//
//	var _ registry.Planner = (*Cluster)(nil)
var _ io.Closer = (*Registry)(nil)
