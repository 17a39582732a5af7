package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/output"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

func (a *app) getCmd() *cobra.Command {
	var (
		format    string
		labels    string
		fromState bool
		sandbox   bool
	)
	cmd := &cobra.Command{
		Use:   "get KIND [NAME...]",
		Short: "List resources, or show some by name",
		Long: `List the resources of a kind (kind, plural or short name: vm, vms,
virtualmachines, templates, nodes), or show the named ones.

Resources openctl applied are shown with the spec as recorded in the state and
their live status, so that "get -o yaml" output applied again changes nothing;
AGE is the time since openctl created them. Other resources the provider can
see are listed as the provider reports them.

--from-state shows only what the state recorded — the spec and the status of
the last apply — without contacting any provider: fast, and it needs no
provider configuration.`,
		Example: `  openctl get vms
  openctl get vm web-01 -o yaml
  openctl get vms -l app=web,tier!=db -o wide
  openctl get vms -o yaml | openctl apply -f -`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: a.completeKindAndNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := output.ParseFormat(format)
			if err != nil {
				return &usageError{err: fmt.Errorf("-o: %w", err)}
			}
			sel, err := parseSelector(labels)
			if err != nil {
				return usagef("-l: %v", err)
			}
			kr, err := resolveKind(args[0])
			if err != nil {
				return err
			}
			s, err := a.open(cmd.Context(), sessionOptions{sandbox: sandbox, noProviders: fromState})
			if err != nil {
				return err
			}
			defer s.close()
			// YAML and JSON are fed back to apply: they need the secret
			// spec fields, as [redacted] (see output.Recorded).
			withSecrets := f == output.YAML || f == output.JSON
			rs, ages, err := s.gather(cmd.Context(), a, kr, args[1:], fromState, withSecrets)
			rs = slices.DeleteFunc(rs, func(r *manifest.Resource) bool { return !sel.matches(r) })
			if len(rs) == 0 && err != nil {
				return err // not "No resources found." (or "[]") as well
			}
			if perr := output.Print(a.stdout, f, rs, output.Options{Kind: kr.Kind, Ages: ages, Empty: a.stderr}); perr != nil {
				return errors.Join(err, perr)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&format, "output", "o", "table", "output format: table, wide, yaml, json or name")
	f.StringVarP(&labels, "selector", "l", "", "label selector: key=value, key!=value, key, !key, comma-separated (all must match)")
	f.BoolVar(&fromState, "from-state", false, "show what the state recorded, without contacting providers")
	f.BoolVar(&sandbox, "sandbox", false, "run against a built-in Proxmox VE simulator with in-memory state")
	return cmd
}

// gather collects the resources "get" shows: for names, those resources;
// else every resource of the kind. Resources recorded in the state show
// the recorded spec and labels with the live status; others the live
// resource. The creation times come from the state. Problems with single
// resources are returned joined, after the resources that could be read.
// withSecrets reads the records whose secrets are sealed whole, so that
// their secret spec fields show as [redacted] (that needs the passphrase).
func (s *session) gather(ctx context.Context, a *app, kr registry.KindRef, names []string, fromState, withSecrets bool) ([]*manifest.Resource, map[manifest.ID]time.Time, error) {
	apiVersion := apiVersionOf(kr)
	idOf := func(name string) manifest.ID {
		return manifest.ID{APIVersion: apiVersion, Kind: kr.Kind.Kind, Name: name}
	}
	recs, sealed, err := listRecordsSealed(ctx, s.store, state.Filter{Provider: kr.Provider, Kind: kr.Kind.Kind})
	if err != nil {
		return nil, nil, err
	}
	all := len(names) == 0
	var errs []error
	var unreadable map[string]bool // records that could not be opened: not shown at all
	if withSecrets {
		recs, unreadable = s.openSealed(ctx, recs, sealed, names, &errs)
		names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return unreadable[n] })
	}
	byName := make(map[string]*state.Record, len(recs))
	ages := make(map[manifest.ID]time.Time, len(recs))
	for _, r := range recs {
		byName[r.Name] = r
		ages[idOf(r.Name)] = r.CreatedAt
	}

	if all {
		names = make([]string, 0, len(recs))
		for _, r := range recs {
			names = append(names, r.Name)
		}
		if !fromState {
			live, err := s.engine.List(ctx, apiVersion, kr.Kind.Kind)
			if err != nil {
				return nil, nil, err
			}
			// Resources openctl applied are read one by one below (List
			// may report less, such as no guest-agent addresses); the
			// others are shown as listed.
			var others []*manifest.Resource
			for _, l := range live {
				if byName[l.Metadata.Name] == nil && !unreadable[l.Metadata.Name] {
					others = append(others, l)
				}
			}
			rs, gone := s.readRecorded(ctx, recs, idOf, &errs)
			rs = append(rs, others...)
			slices.SortFunc(rs, func(x, y *manifest.Resource) int { return strings.Compare(x.Metadata.Name, y.Metadata.Name) })
			a.warnGone(gone)
			return rs, ages, errors.Join(errs...)
		}
	}

	var rs []*manifest.Resource
	if fromState {
		for _, n := range names {
			if rec := byName[n]; rec != nil {
				rs = append(rs, output.Recorded(rec))
			} else {
				errs = append(errs, errcode.New(errcode.NotFound, fmt.Sprintf("%s is not recorded in the state", idOf(n).Short())))
			}
		}
		return rs, ages, errors.Join(errs...)
	}
	var wanted []*state.Record
	for _, n := range names {
		rec := byName[n]
		if rec == nil {
			rec = &state.Record{APIVersion: apiVersion, Kind: kr.Kind.Kind, Name: n} // not recorded: read live only
		}
		wanted = append(wanted, rec)
	}
	rs, gone := s.readRecorded(ctx, wanted, idOf, &errs)
	a.warnGone(gone)
	return rs, ages, errors.Join(errs...)
}

// readRecorded reads the live resources of recs, several at a time, in
// the order of recs. A record with a zero Generation is a name that is not
// in the state: it is shown as the provider reports it, and one that does
// not exist is a NotFound error. A recorded resource that no longer exists
// is shown as recorded, without status, and returned in gone.
func (s *session) readRecorded(ctx context.Context, recs []*state.Record, idOf func(string) manifest.ID, errs *[]error) (rs []*manifest.Resource, gone []manifest.ID) {
	out := make([]*manifest.Resource, len(recs))
	fail := make([]error, len(recs))
	sem := make(chan struct{}, s.concurrency())
	var wg sync.WaitGroup
	for i, rec := range recs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			live, err := s.engine.Get(ctx, idOf(rec.Name))
			switch {
			case err == nil && rec.Generation == 0:
				out[i] = live
			case err == nil:
				r := output.Recorded(rec)
				r.Status = live.Status
				out[i] = r
			case errcode.Is(err, errcode.NotFound) && rec.Generation != 0:
				r := output.Recorded(rec)
				r.Status = nil
				out[i] = r
				fail[i] = errGone
			default:
				fail[i] = err
			}
		}()
	}
	wg.Wait()
	for i, r := range out {
		switch {
		case fail[i] == errGone:
			gone = append(gone, idOf(recs[i].Name))
		case fail[i] != nil:
			*errs = append(*errs, fail[i])
		}
		if r != nil {
			rs = append(rs, r)
		}
	}
	return rs, gone
}

var errGone = errors.New("recorded but gone")

// concurrency is how many provider reads run at once.
func (s *session) concurrency() int {
	if s.cfg != nil {
		return s.cfg.Concurrency()
	}
	return 4
}

// warnGone tells the user about resources the state records but the
// provider does not have.
func (a *app) warnGone(ids []manifest.ID) {
	for _, id := range ids {
		fmt.Fprintf(a.stderr, "openctl: warning: %s is recorded in the state but does not exist: apply creates it again, \"openctl state rm %s\" forgets it\n", id.Short(), id.Short())
	}
}

// listRecords lists records without opening their secrets where the store
// allows it (a RawStore): listing needs no passphrase and costs no key
// derivation, and nothing shown by get or state list holds a secret.
func listRecords(ctx context.Context, st state.Store, f state.Filter) ([]*state.Record, error) {
	recs, _, err := listRecordsSealed(ctx, st, f)
	return recs, err
}

// listRecordsSealed is listRecords that also returns the IDs of the
// records whose secrets it left sealed (their Secrets are nil).
func listRecordsSealed(ctx context.Context, st state.Store, f state.Filter) ([]*state.Record, map[manifest.ID]bool, error) {
	raw, ok := st.(state.RawStore)
	if !ok {
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

// openSealed replaces the records in sealed (those of names, or all when
// names is empty) by the records read whole, secrets opened. A record
// that cannot be read is left out, its name returned and its error added
// to errs: shown without its secrets, it would lose them when applied
// again.
func (s *session) openSealed(ctx context.Context, recs []*state.Record, sealed map[manifest.ID]bool, names []string, errs *[]error) ([]*state.Record, map[string]bool) {
	out := make([]*state.Record, 0, len(recs))
	unreadable := map[string]bool{}
	for _, r := range recs {
		if !sealed[r.ID()] || len(names) > 0 && !slices.Contains(names, r.Name) {
			out = append(out, r)
			continue
		}
		full, err := s.store.Get(ctx, r.ID())
		if err != nil {
			*errs = append(*errs, err)
			unreadable[r.Name] = true
			continue
		}
		out = append(out, full)
	}
	return out, unreadable
}

func (a *app) describeCmd() *cobra.Command {
	var sandbox bool
	cmd := &cobra.Command{
		Use:   "describe KIND NAME",
		Short: "Show a resource in detail: live spec and status, and what the state records",
		Example: `  openctl describe vm web-01
  openctl describe node pve1`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: a.completeKindAndNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			kr, err := resolveKind(args[0])
			if err != nil {
				return err
			}
			id := manifest.ID{APIVersion: apiVersionOf(kr), Kind: kr.Kind.Kind, Name: args[1]}
			s, err := a.open(ctx, sessionOptions{sandbox: sandbox})
			if err != nil {
				return err
			}
			defer s.close()
			// A name that is not a valid manifest name (a template's
			// "ubuntu-24.04-cloud") is never recorded; the state would
			// refuse to look it up.
			var rec *state.Record
			if id.Validate() == nil {
				r, err := s.store.Get(ctx, id)
				switch {
				case err == nil:
					rec = r
				case !errcode.Is(err, errcode.NotFound):
					return err
				}
			}
			live, err := s.engine.Get(ctx, id)
			switch {
			case err == nil:
			case errcode.Is(err, errcode.NotFound) && rec != nil:
				a.warnGone([]manifest.ID{id})
				live = rec.Resource()
			default:
				return err
			}
			opts := output.Options{Kind: kr.Kind}
			if rec != nil {
				opts.Ages = map[manifest.ID]time.Time{id: rec.CreatedAt}
			}
			return output.Describe(a.stdout, live, rec, opts)
		},
	}
	cmd.Flags().BoolVar(&sandbox, "sandbox", false, "run against a built-in Proxmox VE simulator with in-memory state")
	return cmd
}
