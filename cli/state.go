package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/output"
	"github.com/openctl/openctl/state"
)

func (a *app) stateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Inspect and manage the state: list, show, rm, adopt, force-unlock, migrate",
		Long: `The state records what openctl applied: each resource's spec as written, the
hash of the spec applied, the last status, owner and children, and secret
fields sealed with the passphrase ($OPENCTL_STATE_PASSPHRASE or
$OPENCTL_STATE_PASSPHRASE_FILE). It lives in files under ~/.openctl/state
($OPENCTL_HOME/state, or state.dir in the configuration), or in PostgreSQL
(state.dsn, or $OPENCTL_STATE_DSN).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(a.stateListCmd(), a.stateShowCmd(), a.stateRmCmd(), a.stateAdoptCmd(), a.stateForceUnlockCmd(), a.stateMigrateCmd())
	return cmd
}

// openStore opens the configured store, without providers.
func (a *app) openStore(ctx context.Context) (*session, error) {
	return a.open(ctx, sessionOptions{noProviders: true})
}

func (a *app) stateListCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "list [KIND]",
		Short: "List the resources recorded in the state",
		Long: `List the resources recorded in the state, of every kind or of one. Listing
opens no secret: it needs no passphrase.`,
		Args: cobra.MaximumNArgs(1),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return a.completeKinds(), cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var f state.Filter
			if len(args) == 1 {
				kr, err := a.resolveKind(args[0])
				if err != nil {
					return err
				}
				f = state.Filter{Group: kr.Group, Kind: kr.Kind.Kind}
			}
			s, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer s.close()
			recs, err := s.engine.Records(cmd.Context(), f)
			if err != nil {
				return err
			}
			switch format {
			case "", "table":
				return output.PrintRecords(a.stdout, output.Table, recs, output.Options{Empty: a.stderr, Now: time.Now})
			case "name":
				return output.PrintRecords(a.stdout, output.Name, recs, output.Options{})
			case "json", "yaml":
				return output.PrintRecords(a.stdout, output.Format(format), recs, output.Options{})
			}
			return usagef("-o: want table, name, json or yaml, got %q", format)
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", "table", "output format: table, name, json or yaml")
	return cmd
}

// parseRef reads "KIND/NAME", the kind in any form users type (vm,
// VirtualMachine, virtualmachines).
func (a *app) parseRef(s string) (manifest.ID, error) {
	kind, name, ok := strings.Cut(s, "/")
	if !ok || kind == "" || name == "" {
		return manifest.ID{}, usagef("%q: want KIND/NAME, e.g. vm/web-01", s)
	}
	kr, err := a.resolveKind(kind)
	if err != nil {
		return manifest.ID{}, err
	}
	return manifest.ID{APIVersion: apiVersionOf(kr), Kind: kr.Kind.Kind, Name: name}, nil
}

// parseRefs parses KIND/NAME arguments (parseRef).
func (a *app) parseRefs(args []string) ([]manifest.ID, error) {
	ids := make([]manifest.ID, 0, len(args))
	for _, arg := range args {
		id, err := a.parseRef(arg)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func (a *app) stateShowCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "show KIND/NAME",
		Short: "Show what the state records about a resource (secrets redacted)",
		Example: `  openctl state show vm/web-01
  openctl state show VirtualMachine/web-01 -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeRefs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "yaml" && format != "json" {
				return usagef("-o: want yaml or json, got %q", format)
			}
			id, err := a.parseRef(args[0])
			if err != nil {
				return err
			}
			s, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer s.close()
			rec, err := s.store.Get(cmd.Context(), id)
			if err != nil {
				return err
			}
			return output.PrintRecords(a.stdout, output.Format(format), []*state.Record{rec}, output.Options{})
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", "yaml", "output format: yaml or json")
	return cmd
}

func (a *app) stateRmCmd() *cobra.Command {
	var lockWait time.Duration
	cmd := &cobra.Command{
		Use:   "rm KIND/NAME...",
		Short: "Forget resources in the state, leaving the resources themselves alone",
		Long: `Remove resources from the state without touching them: openctl forgets that
it applied them. A later apply of their manifests adopts them again when
the provider can (it hands the existing resource to the provider).`,
		Example:           `  openctl state rm vm/web-01`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: a.completeRefs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ids, err := a.parseRefs(args)
			if err != nil {
				return err
			}
			s, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			defer s.close()
			unlock, err := state.LockWait(ctx, s.store, state.DefaultScope, state.NewLockInfo("state rm"), lockWait, nil)
			if err != nil {
				return err
			}
			defer unlock()
			recs, err := s.engine.Records(ctx, state.Filter{})
			if err != nil {
				return err
			}
			have := map[manifest.ID]bool{}
			for _, r := range recs {
				have[r.ID()] = true
			}
			var errs []error
			for _, id := range ids {
				if !have[id] {
					errs = append(errs, errcode.New(errcode.NotFound, fmt.Sprintf("%s is not recorded in the state", id.Short())))
					continue
				}
				if err := s.store.Delete(ctx, id); err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(a.stdout, "%s removed from the state (the resource itself is untouched)\n", id.Short())
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().DurationVar(&lockWait, "lock-wait", 0, "how long to wait for a state lock held by another openctl")
	return cmd
}

func (a *app) stateAdoptCmd() *cobra.Command {
	var from string
	var yes bool
	cmd := &cobra.Command{
		Use:   "adopt --from DSN KIND/NAME...",
		Short: "Take resources another openctl state owns into this one",
		Long: `Take resources that another openctl state created (and marked as its own)
into this state: the way out when two states hold what one manifest
describes — two CI runners with different stores applied it at once, and
each re-run fails on the other's VMs with "belongs to another openctl
state". Each resource is re-marked as this state's, recorded here (its spec
as the other state recorded it, else as read live; the next apply reconciles
it with the manifest) and forgotten by the other state.

The other state is named like state migrate's stores: a PostgreSQL DSN, or
file:DIR for the file store in DIR; it must be the one whose identity the
resources carry. Both states' locks are held; the other's is not waited
for, so adopting is refused while an apply of that state runs. It asks for
confirmation on a terminal; elsewhere give --yes.`,
		Example: `  openctl state adopt --from file:/srv/runner-b/.openctl/state vm/web-01 vm/web-02
  openctl state adopt --from "$OTHER_STATE_DSN" --yes vm/web-01`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: a.completeRefs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if from == "" {
				return usagef("--from is required: the other state's PostgreSQL DSN or file:DIR")
			}
			ids, err := a.parseRefs(args)
			if err != nil {
				return err
			}
			if !yes {
				if !isTerminal(a.stdin) {
					return usagef("adopting changes who owns %d resource(s): confirm with --yes (standard input is not a terminal to ask on)", len(ids))
				}
				fmt.Fprintf(a.stderr, "Take %d resource(s) from the state at %s into this one? [y/N] ", len(ids), state.MaskDSN(from))
				answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
				if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
					return errcode.New(errcode.Canceled, "openctl: state adopt: not confirmed; nothing was changed")
				}
			}
			other, err := a.openDSN(ctx, from)
			if err != nil {
				return fmt.Errorf("--from: %w", err)
			}
			defer closeStore(other)
			s, err := a.open(ctx, sessionOptions{})
			if err != nil {
				return err
			}
			defer s.close()
			adopted, err := s.engine.Adopt(ctx, other, ids...)
			for _, r := range adopted {
				fmt.Fprintf(a.stdout, "%s adopted: this state's now (apply its manifest to reconcile it)\n", r.ID().Short())
			}
			return err
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the state that owns them now: a PostgreSQL DSN or file:DIR")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

// forceUnlocker is implemented by the stores whose locks can outlive their
// holder: the file store and PostgreSQL.
type forceUnlocker interface {
	ForceUnlock(ctx context.Context, scope string, opts state.ForceUnlockOptions) error
}

func (a *app) stateForceUnlockCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "force-unlock [SCOPE]",
		Short: "Break a state lock left behind by an openctl that crashed",
		Long: `Break the state lock (scope "default", which apply and delete take). Use it
only when the holder named in the "locked by" message no longer runs — a
crash, a killed CI job — or is stuck: two openctls working on one state at
once can record the wrong thing.

A holder that is a process of this host and still runs is refused, naming it,
unless --force is given. A lock whose holder ran on this host in this boot and
no longer runs is cleared by the next openctl that wants it, with a warning:
it needs no force-unlock.`,
		Example: `  openctl state force-unlock
  openctl state force-unlock --force   # the holder runs but is stuck`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			scope := state.DefaultScope
			if len(args) == 1 {
				scope = args[0]
			}
			s, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer s.close()
			fu, ok := s.store.(forceUnlocker)
			if !ok {
				return fmt.Errorf("the %T state store has no locks to break", s.store)
			}
			if err := fu.ForceUnlock(cmd.Context(), scope, state.ForceUnlockOptions{Force: force}); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "state lock %q released\n", scope)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "break the lock even if its holder still runs on this host")
	return cmd
}

func (a *app) stateMigrateCmd() *cobra.Command {
	var from, to string
	cmd := &cobra.Command{
		Use:   "migrate --to DSN",
		Short: "Copy the state to another store: files to PostgreSQL, or back",
		Long: `Copy every record of the state — generations, timestamps and secrets still
sealed, so no passphrase is needed and the same passphrase opens them there —
into another store, holding both stores' locks. The source is the configured
state unless --from names another. A store is named by a PostgreSQL DSN
(postgres://user@host:5432/db, or host=... dbname=...) or by file:DIR for the
file store in DIR.

The target takes the source's identity, with which the resources openctl
created are marked, so that it goes on managing them. Copying refuses,
changing nothing, when the target holds a different resource under the same
name or a newer version of one, or holds records under an identity of its own
(copy into an empty store). Copying again is safe. The
source is left as it was; point the configuration at the new store
(state.dsn, or $OPENCTL_STATE_DSN) to use it.`,
		Example: `  openctl state migrate --to postgres://openctl@db.lab:5432/openctl
  openctl state migrate --from "$OPENCTL_STATE_DSN" --to file:$HOME/.openctl/state`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if to == "" {
				return usagef("--to is required: a PostgreSQL DSN or file:DIR")
			}
			var (
				src     state.Store
				srcName string
			)
			if from != "" {
				st, err := a.openDSN(ctx, from)
				if err != nil {
					return fmt.Errorf("--from: %w", err)
				}
				defer closeStore(st)
				src, srcName = st, state.MaskDSN(from)
			} else {
				s, err := a.openStore(ctx)
				if err != nil {
					return err
				}
				defer s.close()
				src, srcName = s.store, storeName(s.store)
			}
			dst, err := a.openDSN(ctx, to)
			if err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			defer closeStore(dst)
			rs, ok1 := src.(state.RawStore)
			rd, ok2 := dst.(state.RawStore)
			if !ok1 || !ok2 {
				return fmt.Errorf("state migrate: both stores must support raw copies (%T, %T)", src, dst)
			}
			n, err := state.Copy(ctx, rs, rd)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "copied %d records from %s to %s\n", n, srcName, state.MaskDSN(to))
			a.note("openctl: the source is unchanged; point state.dsn in the configuration (or $OPENCTL_STATE_DSN) at the new store to use it")
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the store to copy into: a PostgreSQL DSN or file:DIR")
	cmd.Flags().StringVar(&from, "from", "", "the store to copy from (default: the configured state)")
	return cmd
}

// storeName names a store for messages, without secrets.
func storeName(st state.Store) string {
	if fs, ok := st.(*state.FileStore); ok {
		return "file:" + fs.Dir()
	}
	return fmt.Sprintf("the configured %T store", st)
}

// closeStore releases a store that holds resources (a connection pool).
func closeStore(st state.Store) {
	if c, ok := st.(io.Closer); ok {
		_ = c.Close()
	}
}
