package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state/seal"
)

// Record is what the engine remembers about one resource it applied.
type Record struct {
	APIVersion string `json:"apiVersion" yaml:"apiVersion"`
	Kind       string `json:"kind" yaml:"kind"`
	Name       string `json:"name" yaml:"name"`
	// Labels are the manifest's labels (owner labels included).
	Labels map[string]string `json:"labels,omitempty" yaml:"labels,omitempty"`
	// Spec is the spec as the user (or a composite's Plan) wrote it, $ref
	// markers included, so that dependencies are known at delete time.
	Spec map[string]any `json:"spec,omitempty" yaml:"spec,omitempty"`
	// SpecHash is manifest.Hash of the resolved spec last applied; equal
	// hashes mean a re-apply would change nothing.
	SpecHash string `json:"specHash" yaml:"specHash"`
	// Status is the last status the provider reported, secret fields
	// removed.
	Status map[string]any `json:"status,omitempty" yaml:"status,omitempty"`
	// Owner is the composite resource this one belongs to, if any.
	Owner *manifest.ID `json:"owner,omitempty" yaml:"owner,omitempty"`
	// Children are the resources a composite's Plan produced, sorted.
	Children []manifest.ID `json:"children,omitempty" yaml:"children,omitempty"`
	// Secrets holds secret values by field path ("status.kubeconfig").
	// They redact themselves in output; persistent stores keep them only
	// sealed at rest.
	Secrets map[string]secret.Secret `json:"-" yaml:"-"`
	// Generation increases by one on every successful Put; the first Put
	// of a record stores generation 1. Put compares it (see Store).
	Generation int64 `json:"generation" yaml:"generation"`
	// Lineage identifies the record across its life; the store assigns it
	// on first Put, and copying state preserves it.
	Lineage   string    `json:"lineage" yaml:"lineage"`
	CreatedAt time.Time `json:"createdAt" yaml:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt" yaml:"updatedAt"`
}

// ID returns the record's resource ID.
func (r *Record) ID() manifest.ID {
	return manifest.ID{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name}
}

// SecretValue returns the secret recorded at path ("spec.x" or
// "status.y"); false when r is nil or holds none.
func (r *Record) SecretValue(path string) (secret.Secret, bool) {
	if r == nil {
		return secret.Secret{}, false
	}
	v, ok := r.Secrets[path]
	return v, ok
}

// Resource returns the record as a manifest (spec as written, last status
// without secrets).
func (r *Record) Resource() *manifest.Resource {
	res := &manifest.Resource{
		APIVersion: r.APIVersion,
		Kind:       r.Kind,
		Metadata:   manifest.Metadata{Name: r.Name},
		Spec:       manifest.CopyMap(r.Spec),
		Status:     manifest.CopyMap(r.Status),
	}
	if len(r.Labels) > 0 {
		res.Metadata.Labels = make(map[string]string, len(r.Labels))
		for k, v := range r.Labels {
			res.Metadata.Labels[k] = v
		}
	}
	return res
}

// Revealed returns the record as a manifest like Resource, with its
// secret fields (Secrets) put back in clear at their paths under spec and
// status: the resource as it was last applied. It is for the provider
// that made the resource (registry.Call.Prior), never for output.
func (r *Record) Revealed() *manifest.Resource {
	res := r.Resource()
	for path, v := range r.Secrets {
		var m map[string]any
		rest, ok := strings.CutPrefix(path, "spec.")
		if ok {
			if res.Spec == nil {
				res.Spec = map[string]any{}
			}
			m = res.Spec
		} else if rest, ok = strings.CutPrefix(path, "status."); ok {
			if res.Status == nil {
				res.Status = map[string]any{}
			}
			m = res.Status
		} else {
			continue
		}
		_ = manifest.SetField(m, rest, v.Reveal()) // a path split off by the engine: it can be set again
	}
	return res
}

// Clone returns a deep copy of r.
func (r *Record) Clone() *Record {
	if r == nil {
		return nil
	}
	c := *r
	c.Spec = manifest.CopyMap(r.Spec)
	c.Status = manifest.CopyMap(r.Status)
	if r.Labels != nil {
		c.Labels = make(map[string]string, len(r.Labels))
		for k, v := range r.Labels {
			c.Labels[k] = v
		}
	}
	if r.Owner != nil {
		o := *r.Owner
		c.Owner = &o
	}
	c.Children = append([]manifest.ID(nil), r.Children...)
	if r.Secrets != nil {
		c.Secrets = make(map[string]secret.Secret, len(r.Secrets))
		for k, v := range r.Secrets {
			c.Secrets[k] = v
		}
	}
	return &c
}

// version is what a store keeps of the stored version of a record when
// writing the next one.
type version struct {
	generation int64
	created    time.Time
	lineage    string
}

// advance checks r.Generation against the stored version (nil: none yet)
// — a mismatch is a *GenerationError — and stamps r as the next version:
// generation + 1, UpdatedAt now, CreatedAt and Lineage kept (or set for a
// new record, unless r carries them, as a copied record does).
func (r *Record) advance(prev *version) error {
	var cur int64
	if prev != nil {
		cur = prev.generation
	}
	if r.Generation != cur {
		return &GenerationError{ID: r.ID(), Expected: r.Generation, Actual: cur}
	}
	if prev != nil && r.Lineage != "" && r.Lineage != prev.lineage {
		// Same generation, another record: it was deleted and created
		// again since the writer read it.
		return &GenerationError{ID: r.ID(), Expected: r.Generation, Actual: cur, Recreated: true}
	}
	now := time.Now().UTC()
	r.Generation = cur + 1
	r.UpdatedAt = now
	switch {
	case prev != nil:
		r.CreatedAt = prev.created
		if r.Lineage == "" {
			r.Lineage = prev.lineage
		}
	default:
		if r.CreatedAt.IsZero() {
			r.CreatedAt = now
		}
		if r.Lineage == "" {
			r.Lineage = NewID()
		}
	}
	return nil
}

// Filter selects records in List. Zero fields match everything.
type Filter struct {
	// Group matches the apiVersion group ("proxmox.openctl.io").
	Group string
	Kind  string
	// Owner matches records owned by that resource.
	Owner *manifest.ID
}

// Match reports whether r passes the filter.
func (f Filter) Match(r *Record) bool {
	if f.Group != "" && r.ID().Group() != f.Group {
		return false
	}
	if f.Kind != "" && r.Kind != f.Kind {
		return false
	}
	if f.Owner != nil && (r.Owner == nil || *r.Owner != *f.Owner) {
		return false
	}
	return true
}

// ErrCorrupt is matched (errors.Is) by the errors of a store that holds
// a record that does not decode: a truncated, damaged or hand-edited
// record file, an undecodable row. The errors are errcode.Invalid too;
// a CLI tells them apart from invalid input with ErrCorrupt.
var ErrCorrupt = errors.New("state: corrupt record")

// Corrupt returns the errcode.Invalid error, matching ErrCorrupt, that a
// store returns for a record that does not decode: msg, then cause when
// it is not nil.
func Corrupt(msg string, cause error) error {
	return &errcode.Error{Code: errcode.Invalid, Msg: msg, Err: corruption{cause}}
}

// corruption marks its cause as a corrupt record.
type corruption struct{ cause error }

func (c corruption) Error() string {
	if c.cause == nil {
		return "corrupt"
	}
	return c.cause.Error()
}
func (c corruption) Is(target error) bool { return target == ErrCorrupt }
func (c corruption) Unwrap() error        { return c.cause }

// Unlocker is implemented by stores that seal secrets at rest with a key
// of their own (the file and PostgreSQL stores; the memory store keeps
// them in memory and needs none): Unlock makes sure that the store can seal and open secrets
// — it asks for the passphrase and unlocks the data key, creating the key
// if the store has none — so that a missing or wrong passphrase is known
// before anything is changed rather than when a record is written. The
// engine calls it before applying resources whose kinds have secret
// fields. Errors: errcode.Invalid for a missing passphrase,
// errcode.Unauthorized for a wrong one (see package seal).
type Unlocker interface {
	Unlock(ctx context.Context) error
}

// Identified is implemented by stores that have a stable identity: a
// random ID made when the store is first used and kept with its data, the
// same for every process that opens that store and different for every
// other store. The engine hands it to providers (registry.Call.Owner), which
// mark what they create with it so that openctl installations with
// different state never adopt each other's resources.
type Identified interface {
	// StoreID returns the store's identity, creating it on first use.
	StoreID(ctx context.Context) (string, error)
}

// GroupKey returns the key under which stores file the records of an API
// group: the provider name for the groups of openctl's built-in providers
// ("proxmox" for proxmox.openctl.io, as state written before providers
// could serve other groups), the group itself for any other
// ("files.example.com"). Distinct groups have distinct keys: a group
// always has a dot, a built-in's key never does.
func GroupKey(group string) string {
	if name, ok := strings.CutSuffix(group, manifest.APIGroupSuffix); ok && !strings.Contains(name, ".") {
		return name
	}
	return group
}

// Store persists records and serialises operations with locks.
//
// Implementations are safe for concurrent use, by goroutines and (for
// persistent stores) by processes.
//
//   - Get of a missing record is an error matching errcode.NotFound.
//   - Put is a compare-and-swap on Generation: rec.Generation must equal the
//     stored generation (0 when the record must not exist yet). On success
//     the store returns the stored copy with Generation incremented and
//     Lineage, CreatedAt and UpdatedAt set; otherwise it returns a
//     *GenerationError matching errcode.Conflict and changes nothing.
//   - Delete of a missing record is not an error.
//   - List returns the matching records sorted by ID.
//   - Lock takes an exclusive lock on scope. If another holder has it, Lock
//     returns a *LockedError (matching errcode.Conflict) naming the holder;
//     it does not wait. The returned function releases the lock and may be
//     called more than once.
//
// Returned records are copies the caller may modify.
type Store interface {
	Get(ctx context.Context, id manifest.ID) (*Record, error)
	Put(ctx context.Context, rec *Record) (*Record, error)
	Delete(ctx context.Context, id manifest.ID) error
	List(ctx context.Context, f Filter) ([]*Record, error)
	Lock(ctx context.Context, scope string, info LockInfo) (unlock func() error, err error)
}

// DefaultScope is the lock scope the engine takes for Apply and Delete.
const DefaultScope = "default"

// LockInfo says who holds a lock, for the message another client sees.
type LockInfo struct {
	ID        string    `json:"id" yaml:"id"`
	Scope     string    `json:"scope" yaml:"scope"`
	Who       string    `json:"who" yaml:"who"`
	Host      string    `json:"host" yaml:"host"`
	PID       int       `json:"pid" yaml:"pid"`
	Operation string    `json:"operation" yaml:"operation"`
	Created   time.Time `json:"created" yaml:"created"`
	// BootID identifies the boot of Host the holder ran in (Linux's
	// /proc/sys/kernel/random/boot_id; empty elsewhere, and in locks
	// taken by older openctls). With it a holder that no longer runs is
	// provably dead rather than a pid that might belong to another boot.
	BootID string `json:"bootID,omitempty" yaml:"bootID,omitempty"`
	// PIDNamespace identifies the holder's PID namespace (the target of
	// /proc/self/ns/pid), since PID is only meaningful there: a container
	// that shares the host's name and kernel has its own PIDs.
	PIDNamespace string `json:"pidNamespace,omitempty" yaml:"pidNamespace,omitempty"`
}

// ForceUnlockOptions tune the ForceUnlock of the stores whose locks can
// outlive their holder (FileStore, the PostgreSQL store).
type ForceUnlockOptions struct {
	// Force breaks the lock even when its holder is a process of this host
	// that still runs (HolderRunning), which ForceUnlock otherwise refuses
	// with a *LockedError that has Running set.
	Force bool
}

// HolderStatus is what this host can tell about a lock's holder.
type HolderStatus int

const (
	// HolderUnknown: the holder is on another host (or recorded no host
	// or pid): this host cannot tell whether it runs.
	HolderUnknown HolderStatus = iota
	// HolderRunning: a process of this host with the holder's pid runs
	// (it may be the holder, or in another boot a process that reused the
	// pid: either way, the lock is not known to be abandoned).
	HolderRunning
	// HolderGone: no process of this host has the holder's pid, but the
	// lock does not say it was taken in this boot (an older openctl wrote
	// it, or the system has no boot ID): the lock is stale, and a human
	// decides.
	HolderGone
	// HolderDead: the holder ran on this host in this boot and PID
	// namespace, and its pid no longer runs: provably dead. Stores clear such a lock, with a
	// warning, when someone else wants it.
	HolderDead
)

// Status says what this host can tell about the holder h names.
func (h LockInfo) Status() HolderStatus {
	host, err := os.Hostname()
	if err != nil || h.Host == "" || h.Host != host || h.PID <= 0 {
		return HolderUnknown
	}
	if !processGone(h.PID) {
		return HolderRunning
	}
	if boot := bootID(); boot != "" && h.BootID == boot && h.PIDNamespace == pidNamespace() {
		return HolderDead
	}
	return HolderGone
}

// pidNamespace returns the identifier of this process's PID namespace, or
// "" where there is none.
var pidNamespace = sync.OnceValue(func() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return ns
})

// bootIDFile holds the identifier of the running boot on Linux.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// bootID returns the identifier of this boot, or "" where there is none.
var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile(bootIDFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// NewLockInfo fills a LockInfo for this process: a random ID, the user, the
// host name, the PID, the operation, the current time, the boot ID and
// the PID namespace.
func NewLockInfo(operation string) LockInfo {
	host, _ := os.Hostname()
	who := os.Getenv("USER")
	if who == "" {
		who = fmt.Sprintf("uid-%d", os.Getuid())
	}
	return LockInfo{ID: NewID(), Who: who, Host: host, PID: os.Getpid(), Operation: operation, Created: time.Now().UTC(), BootID: bootID(), PIDNamespace: pidNamespace()}
}

// NewID returns a random 128-bit identifier in hex, used for lock IDs and
// record lineages.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// LockedError reports a lock held by someone else. It matches
// errcode.Conflict.
type LockedError struct {
	Scope  string
	Holder LockInfo
	// Stale reports that the holder is a process of this host that no
	// longer runs (HolderGone): the lock was left behind by a crash.
	// Stores clear a provably dead holder's lock (HolderDead) by
	// themselves; a stale one the user breaks with openctl state
	// force-unlock.
	Stale bool
	// Running reports that ForceUnlock refused because the holder is a
	// process of this host that still runs (HolderRunning).
	Running bool
	// Detail adds what the store knows beyond Holder, for example that the
	// lock file naming the holder could not be read.
	Detail string
}

// Error names the scope and who holds it, since when, and for a stale lock
// or a running holder what to do.
func (e *LockedError) Error() string {
	h := e.Holder
	var b strings.Builder
	if h.Who == "" && h.Host == "" && h.PID == 0 {
		fmt.Fprintf(&b, "state: %q is locked by an unknown holder", e.Scope)
	} else {
		fmt.Fprintf(&b, "state: %q is locked by %s@%s (pid %d, %s, since %s)", e.Scope, h.Who, h.Host, h.PID, h.Operation, h.Created.Format(time.RFC3339))
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	switch {
	case e.Running:
		fmt.Fprintf(&b, "; process %d still runs on %s, so the lock was not broken: let it finish or stop it, or if it is stuck break the lock anyway with `openctl state force-unlock --force %s`", h.PID, h.Host, e.Scope)
	case e.Stale:
		fmt.Fprintf(&b, "; the lock is stale: process %d no longer runs on %s. If no other openctl is working on this state, break it with `openctl state force-unlock %s`", h.PID, h.Host, e.Scope)
	}
	return b.String()
}

// Is reports true for errcode.Conflict.
func (e *LockedError) Is(target error) bool { return target == errcode.Conflict }

// Unwrap returns errcode.Conflict, so that errcode.Of classifies the error.
func (e *LockedError) Unwrap() error { return errcode.Conflict }

// GenerationError reports a Put whose expected generation did not match the
// stored one: someone else wrote the record since it was read. It matches
// errcode.Conflict.
type GenerationError struct {
	ID       manifest.ID
	Expected int64
	Actual   int64
	// Recreated is true when the generations match but the record was
	// deleted and created again (its lineage differs) since it was read.
	Recreated bool
}

// Error names the record and both generations.
func (e *GenerationError) Error() string {
	if e.Recreated {
		return fmt.Sprintf("state: %s was deleted and created again since it was read (another lineage at generation %d)", e.ID.Short(), e.Actual)
	}
	return fmt.Sprintf("state: %s changed concurrently: expected generation %d, found %d", e.ID.Short(), e.Expected, e.Actual)
}

// Is reports true for errcode.Conflict.
func (e *GenerationError) Is(target error) bool { return target == errcode.Conflict }

// Unwrap returns errcode.Conflict, so that errcode.Of classifies the error.
func (e *GenerationError) Unwrap() error { return errcode.Conflict }

// NotFoundError reports a missing record. It matches errcode.NotFound.
func NotFoundError(id manifest.ID) error {
	return errcode.New(errcode.NotFound, fmt.Sprintf("state: no record for %s", id.Short()))
}

// RawRecord is a record as a persistent store keeps it: the record without
// its secrets, and the secrets still sealed with the store's data key
// (nil when the record has none). Moving RawRecords between stores never
// reveals a secret.
type RawRecord struct {
	Record *Record      // Secrets is nil
	Sealed *seal.Sealed // as stored; nil when the record has no secrets
}

// RawStore is implemented by stores whose state can be moved verbatim:
// their sealed secrets and the key file that seals them, generations,
// lineages and timestamps. [Copy] uses it; a Store need not implement it.
//
//   - Key returns the store's key file, or an error matching
//     errcode.NotFound if the store has none yet (no record with secrets was
//     ever written).
//   - ExportRaw returns every record, secrets sealed as stored, sorted by
//     ID.
//   - ImportRaw stores key if the store has none (key may be nil when no
//     record carries sealed secrets). If the store already has a different
//     key (see seal.KeyFile.SameKey) and holds any record, it refuses with
//     an error matching errcode.Conflict; a store with a different key and
//     no records takes the new key. Records are written verbatim, replacing
//     records with the same ID: generation, lineage and timestamps as given.
type RawStore interface {
	Store
	Key(ctx context.Context) (*seal.KeyFile, error)
	ExportRaw(ctx context.Context) ([]RawRecord, error)
	ImportRaw(ctx context.Context, key *seal.KeyFile, recs []RawRecord) error
}
