package cli

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/output"
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
		Long: `List the resources of a kind (its name, plural or short name, optionally
qualified by its provider as KIND.PROVIDER), or show the named ones.

Resources openctl applied are shown with the spec as recorded in the state and
their live status, so that "get -o yaml" output applied again changes nothing;
as with kubectl, -o yaml and -o json print a List (apiVersion v1, kind List,
items) for a list query, even of one resource or none, and the object itself
for a get by one name;
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
			sel, err := manifest.ParseSelector(labels)
			if err != nil {
				return usagef("-l: %v", err)
			}
			kr, err := a.resolveKind(args[0])
			if err != nil {
				return err
			}
			s, err := a.open(cmd.Context(), sessionOptions{sandbox: sandbox, noProviders: fromState})
			if err != nil {
				return err
			}
			defer s.close()
			// YAML and JSON are fed back to apply: they need the secret
			// spec fields, as [redacted] (see openctl.InventoryOptions).
			withSecrets := f == output.YAML || f == output.JSON
			apiVersion := apiVersionOf(kr)
			inv, err := s.engine.Inventory(cmd.Context(), apiVersion, kr.Kind.Kind, openctl.InventoryOptions{
				Names:       args[1:],
				FromState:   fromState,
				WithSecrets: withSecrets,
			})
			var rs []*manifest.Resource
			ages := map[manifest.ID]time.Time{}
			if inv != nil {
				a.warnGone(inv.Gone)
				rs = slices.DeleteFunc(inv.Resources, func(r *manifest.Resource) bool { return !sel.Matches(r.Metadata.Labels) })
				for _, rec := range inv.Records {
					ages[manifest.ID{APIVersion: apiVersion, Kind: kr.Kind.Kind, Name: rec.Name}] = rec.CreatedAt
				}
			}
			if len(rs) == 0 && err != nil {
				return err // not "No resources found." (or "[]") as well
			}
			// kubectl's rule: a get by one name prints the object, any
			// other query a List.
			o := output.Options{Kind: kr.Kind, Ages: ages, Empty: a.stderr, Object: len(args) == 2}
			if perr := output.Print(a.stdout, f, rs, o); perr != nil {
				return errors.Join(err, perr)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&format, "output", "o", "table", "output format: table, wide, yaml, json or name")
	f.StringVarP(&labels, "selector", "l", "", "label selector: key=value, key!=value, key, !key, comma-separated (all must match)")
	f.BoolVar(&fromState, "from-state", false, "show what the state recorded, without contacting providers")
	f.BoolVar(&sandbox, "sandbox", false, sandboxHelp)
	return cmd
}

// warnGone tells the user about resources the state records but the
// provider does not have.
func (a *app) warnGone(ids []manifest.ID) {
	for _, id := range ids {
		fmt.Fprintf(a.stderr, "openctl: warning: %s is recorded in the state but does not exist: apply creates it again, \"openctl state rm %s\" forgets it\n", id.Short(), id.Short())
	}
}

func (a *app) describeCmd() *cobra.Command {
	var sandbox bool
	cmd := &cobra.Command{
		Use:               "describe KIND NAME",
		Short:             "Show a resource in detail: live spec and status, and what the state records",
		Example:           `  openctl describe KIND NAME`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: a.completeKindAndNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			kr, err := a.resolveKind(args[0])
			if err != nil {
				return err
			}
			id := manifest.ID{APIVersion: apiVersionOf(kr), Kind: kr.Kind.Kind, Name: args[1]}
			s, err := a.open(ctx, sessionOptions{sandbox: sandbox})
			if err != nil {
				return err
			}
			defer s.close()
			found, err := s.engine.Get(ctx, id)
			if err != nil {
				return err
			}
			if found.Gone {
				a.warnGone([]manifest.ID{id})
			}
			opts := output.Options{Kind: kr.Kind}
			if found.Record != nil {
				opts.Ages = map[manifest.ID]time.Time{id: found.Record.CreatedAt}
			}
			return output.Describe(a.stdout, found.Resource, found.Record, opts)
		},
	}
	cmd.Flags().BoolVar(&sandbox, "sandbox", false, sandboxHelp)
	return cmd
}
