package openctl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

// Found is one resource as [Engine.Get] found it: a plain value the
// caller owns, safe for concurrent reads.
type Found struct {
	// Resource is the live resource as the provider reports it; for a
	// Gone one, the resource as recorded (secret spec fields reading
	// [secret.Redacted]), without status.
	Resource *manifest.Resource
	// Record is the resource's state record, read whole (its Secrets
	// opened); nil when the state records none.
	Record *state.Record
	// Gone reports a recorded resource that no longer exists.
	Gone bool
}

// Get reads one resource both live, through its provider, and as the
// state records it. A resource that is neither live nor recorded is an
// error matching errcode.NotFound; one that is recorded but no longer
// exists is not an error: its Found is Gone. Get opens the record's
// secrets (see "Reading" in the package documentation). A name that is
// not a valid manifest name (a provider's read-only object named outside
// openctl, such as a template "Ubuntu-24.04") is never recorded: the
// state is not asked.
func (e *Engine) Get(ctx context.Context, id manifest.ID) (*Found, error) {
	id = e.reg.Canonical(id)
	f := &Found{}
	if id.Validate() == nil {
		rec, err := e.store.Get(ctx, id)
		switch {
		case err == nil:
			f.Record = rec
		case !errcode.Is(err, errcode.NotFound):
			return nil, err
		}
	}
	live, err := e.live(ctx, id)
	switch {
	case err == nil:
		f.Resource = live
	case errcode.Is(err, errcode.NotFound) && f.Record != nil:
		f.Resource = recorded(f.Record)
		f.Resource.Status = nil
		f.Gone = true
	default:
		return nil, err
	}
	return f, nil
}

// InventoryOptions says what [Engine.Inventory] reads. The zero value
// lists every resource of the kind, recorded and live, secrets sealed.
type InventoryOptions struct {
	// Names restricts the inventory to these resources, in this order. A
	// name that is neither recorded nor live (with FromState: not
	// recorded) is an error matching errcode.NotFound. Empty means every
	// resource of the kind.
	Names []string
	// FromState reads the state only and contacts no provider: the
	// resources are the records, with the status of the last apply. It
	// needs no provider to be configured.
	FromState bool
	// WithSecrets opens the records whose secrets are sealed, so that
	// their secret spec fields read [secret.Redacted] instead of being
	// left out; a sealing store needs its passphrase. Set it when the
	// resources are printed to be applied again: without it, such a
	// resource applied again would drop its secrets. A record that cannot
	// be opened is left out and its error returned.
	WithSecrets bool
	// Concurrency bounds how many live reads run at once; 0 means the
	// engine's concurrency (see WithConcurrency).
	Concurrency int
}

// Inventory is what [Engine.Inventory] found: the resources of a kind as
// openctl knows them. It is a plain value the caller owns, shared with
// nothing: safe for concurrent reads, not for concurrent modification.
type Inventory struct {
	// Resources are, for names, in the order of InventoryOptions.Names;
	// else sorted by name. A resource the state records has its labels
	// and spec as recorded (secret spec fields reading
	// [secret.Redacted], see WithSecrets) and its live status (with
	// FromState, the recorded status); one it does not record is shown
	// as the provider reports it.
	Resources []*manifest.Resource
	// Records holds the state record of every recorded resource in
	// Resources, by the record's ID; CreatedAt is its creation time.
	Records map[manifest.ID]*state.Record
	// Gone lists, in the order of Resources, the recorded resources that
	// no longer exist. They are in Resources too, as recorded and without
	// status. Applying their manifests creates them again; state.Store's
	// Delete forgets them. FromState reports none.
	Gone []manifest.ID
}

// Inventory lists the resources of a kind (those of opts.Names, or all)
// as openctl knows them: the ones the state records with their spec and
// labels as recorded and their live status, read through the provider
// several at a time; the others the provider lists (or, for names, gets)
// as it reports them — a provider that cannot list (no registry.Lister)
// shows only what is recorded. See [InventoryOptions] and [Inventory].
//
// Problems with single resources — a name not found, a record that cannot
// be opened, a failed read — are returned joined, together with the
// Inventory of the resources that could be read; check them with
// errors.Is. An error listing the state or the provider returns a nil
// Inventory.
//
// Records are listed as [Engine.Records] lists them, secrets sealed:
// unless WithSecrets is set, Inventory needs no passphrase. The live
// reads are retried like every provider call (see [WithRetry]).
func (e *Engine) Inventory(ctx context.Context, apiVersion, kind string, opts InventoryOptions) (*Inventory, error) {
	group, _, err := manifest.SplitAPIVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("openctl: inventory: %w", err)
	}
	kind = e.reg.Canonical(manifest.ID{APIVersion: apiVersion, Kind: kind}).Kind
	idOf := func(name string) manifest.ID { return manifest.ID{APIVersion: apiVersion, Kind: kind, Name: name} }
	recs, sealed, err := e.records(ctx, state.Filter{Group: group, Kind: kind})
	if err != nil {
		return nil, err
	}
	all := len(opts.Names) == 0
	names := opts.Names
	var errs []error
	var unreadable map[string]bool // records that could not be opened: not shown at all
	if opts.WithSecrets {
		recs, unreadable, errs = e.openSealed(ctx, recs, sealed, names)
		names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return unreadable[n] })
	}
	byName := make(map[string]*state.Record, len(recs))
	for _, r := range recs {
		byName[r.Name] = r
	}
	if all {
		slices.SortStableFunc(recs, func(x, y *state.Record) int { return strings.Compare(x.Name, y.Name) })
		names = make([]string, 0, len(recs))
		for _, r := range recs {
			names = append(names, r.Name)
		}
	}
	inv := &Inventory{Records: map[manifest.ID]*state.Record{}}

	if opts.FromState {
		for _, n := range names {
			rec := byName[n]
			if rec == nil {
				errs = append(errs, errcode.New(errcode.NotFound, fmt.Sprintf("openctl: %s is not recorded in the state", idOf(n).Short())))
				continue
			}
			inv.Resources = append(inv.Resources, recorded(rec))
			inv.Records[rec.ID()] = rec
		}
		return inv, errors.Join(errs...)
	}

	var others []*manifest.Resource // listed live, not recorded
	var canList bool
	if all {
		prov, _, err := e.reg.Lookup(idOf(""))
		if err != nil {
			return nil, err
		}
		_, canList = prov.(registry.Lister)
	}
	if canList {
		// A provider that cannot list (its resources are found through
		// their records: a K3s node) shows what is recorded, read live.
		live, err := e.list(ctx, apiVersion, kind)
		if err != nil {
			return nil, err
		}
		// The recorded resources are read one by one below (List may
		// report less, such as no guest-agent addresses); the others are
		// shown as listed.
		for _, l := range live {
			if byName[l.Metadata.Name] == nil && !unreadable[l.Metadata.Name] {
				others = append(others, l)
			}
		}
	}
	wanted := make([]wantedResource, len(names))
	for i, n := range names {
		wanted[i] = wantedResource{id: idOf(n), rec: byName[n]}
	}
	n := opts.Concurrency
	if n < 1 {
		n = e.concurrency
	}
	errs = append(errs, e.readWanted(ctx, wanted, n, inv)...)
	if all && len(others) > 0 {
		inv.Resources = append(inv.Resources, others...)
		slices.SortStableFunc(inv.Resources, func(x, y *manifest.Resource) int {
			return strings.Compare(x.Metadata.Name, y.Metadata.Name)
		})
	}
	return inv, errors.Join(errs...)
}

// wantedResource is a resource Inventory reads live: id is where, rec its
// record (nil when the state records none).
type wantedResource struct {
	id  manifest.ID
	rec *state.Record
}

// readWanted reads the live resources of wanted, up to n at a time, and
// adds them to inv in the order of wanted. A recorded resource is shown as
// recorded with the live status; one that no longer exists as recorded,
// without status, and in inv.Gone. An unrecorded one is shown as the
// provider reports it, and one that does not exist is an error. The
// errors are returned in the order of wanted.
func (e *Engine) readWanted(ctx context.Context, wanted []wantedResource, n int, inv *Inventory) []error {
	out := make([]*manifest.Resource, len(wanted))
	gone := make([]bool, len(wanted))
	fail := make([]error, len(wanted))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, w := range wanted {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			fail[i] = fmt.Errorf("openctl: get %s: %w", w.id.Short(), context.Cause(ctx))
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			live, err := e.live(ctx, w.id)
			switch {
			case err == nil && w.rec == nil:
				out[i] = live
			case err == nil:
				r := recorded(w.rec)
				r.Status = live.Status
				out[i] = r
			case errcode.Is(err, errcode.NotFound) && w.rec != nil:
				r := recorded(w.rec)
				r.Status = nil
				out[i] = r
				gone[i] = true
			default:
				fail[i] = err
			}
		}()
	}
	wg.Wait()
	var errs []error
	for i, r := range out {
		if fail[i] != nil {
			errs = append(errs, fail[i])
		}
		if r == nil {
			continue
		}
		inv.Resources = append(inv.Resources, r)
		if rec := wanted[i].rec; rec != nil {
			inv.Records[rec.ID()] = rec
			if gone[i] {
				inv.Gone = append(inv.Gone, rec.ID())
			}
		}
	}
	return errs
}

// openSealed replaces the records in sealed (those of names, or all when
// names is empty) by the records read whole, secrets opened. A record
// that cannot be read is left out, its name returned in unreadable and
// its error in errs: shown without its secrets, it would lose them when
// applied again.
func (e *Engine) openSealed(ctx context.Context, recs []*state.Record, sealed map[manifest.ID]bool, names []string) (out []*state.Record, unreadable map[string]bool, errs []error) {
	out = make([]*state.Record, 0, len(recs))
	unreadable = map[string]bool{}
	for _, r := range recs {
		if !sealed[r.ID()] || len(names) > 0 && !slices.Contains(names, r.Name) {
			out = append(out, r)
			continue
		}
		full, err := e.store.Get(ctx, r.ID())
		if err != nil {
			errs = append(errs, err)
			unreadable[r.Name] = true
			continue
		}
		out = append(out, full)
	}
	return out, unreadable, errs
}

// Records lists the state records f matches. It never opens sealed
// secrets (see "Reading" in the package documentation): where the store
// keeps them sealed and allows it (a [state.RawStore] such as the
// [state.FileStore]), a record so listed has nil Secrets, and listing
// needs no passphrase and costs no key derivation. A [state.Memory],
// which keeps secrets in clear, and other stores list records whole.
func (e *Engine) Records(ctx context.Context, f state.Filter) ([]*state.Record, error) {
	recs, _, err := e.records(ctx, f)
	return recs, err
}

// records is Records that also returns the IDs of the records whose
// secrets it left sealed.
func (e *Engine) records(ctx context.Context, f state.Filter) ([]*state.Record, map[manifest.ID]bool, error) {
	st := e.store
	raw, ok := st.(state.RawStore)
	if _, inMemory := st.(*state.Memory); !ok || inMemory {
		// A Memory's ExportRaw would seal the secrets it holds in clear,
		// which takes a passphrase; its List costs nothing.
		recs, err := st.List(ctx, f)
		return recs, nil, err
	}
	all, err := raw.ExportRaw(ctx)
	if err != nil {
		return nil, nil, err
	}
	var out []*state.Record
	sealed := map[manifest.ID]bool{}
	for _, rr := range all {
		if rr.Record != nil && f.Match(rr.Record) {
			out = append(out, rr.Record)
			if rr.Sealed != nil {
				sealed[rr.Record.ID()] = true
			}
		}
	}
	return out, sealed, nil
}

// recorded returns the resource rec describes, as it was applied: its
// labels, its spec as written and its last status, with secret.Redacted
// at every spec field whose value the record keeps sealed (rec.Secrets),
// where state.Record.Resource leaves the field out. A record read
// without its secrets gives the same as rec.Resource().
func recorded(rec *state.Record) *manifest.Resource {
	r := rec.Resource()
	paths := make([]string, 0, len(rec.Secrets))
	for p := range rec.Secrets {
		if rest, ok := strings.CutPrefix(p, "spec."); ok && rest != "" {
			paths = append(paths, rest)
		}
	}
	slices.Sort(paths)
	for _, p := range paths {
		if r.Spec == nil {
			r.Spec = map[string]any{}
		}
		_ = manifest.SetField(r.Spec, p, secret.Redacted) // a path the engine split off: it can be set again
	}
	return r
}

// live reads a resource through its provider, retrying transient errors.
func (e *Engine) live(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	ctx = e.withReads(ctx)
	var out *manifest.Resource
	_, err := e.retry(ctx, id, "", func(ctx context.Context) error {
		return e.safeTop("get", id, func() (err error) { out, err = getter{e}.Get(ctx, id); return err })
	})
	return out, err
}

// list lists the live resources of a kind through their provider,
// retrying transient errors.
func (e *Engine) list(ctx context.Context, apiVersion, kind string) ([]*manifest.Resource, error) {
	ctx = e.withReads(ctx)
	var out []*manifest.Resource
	id := manifest.ID{APIVersion: apiVersion, Kind: kind}
	_, err := e.retry(ctx, id, "", func(ctx context.Context) error {
		return e.safeTop("list", id, func() (err error) { out, err = e.reg.List(ctx, apiVersion, kind); return err })
	})
	return out, err
}
