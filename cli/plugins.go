package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/openctl/openctl/plugin"
	"github.com/openctl/openctl/registry"
)

// addPlugins finds the exec plugins (openctl-<name> in
// $OPENCTL_HOME/plugins, else ~/.openctl/plugins, then $PATH) and adds
// each as a driver after the compiled-in ones, so that every command
// uses it like them. A compiled-in provider of the same name wins, with
// a warning; a plugin that cannot be loaded is a warning too.
func (a *app) addPlugins(ctx context.Context) {
	ps, err := plugin.Discover(ctx, plugin.Dirs(a.getenv), plugin.Options{})
	if err != nil {
		for _, e := range unjoin(err) {
			fmt.Fprintf(a.stderr, "openctl: warning: %v\n", e)
		}
	}
	drivers := slices.Clone(a.opts.Drivers)
	for _, p := range ps {
		if slices.ContainsFunc(a.opts.Drivers, func(d registry.Driver) bool { return d.Info().Name == p.Name() }) {
			fmt.Fprintf(a.stderr, "openctl: warning: plugin %s ignored: the compiled-in provider %s wins\n", p.Path, p.Name())
			continue
		}
		a.plugins = append(a.plugins, p)
		drivers = append(drivers, plugin.Driver{Plugin: p})
	}
	a.opts.Drivers = drivers
}

// unjoin returns the errors err joins, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// pluginCmd is "openctl plugin list".
func (a *app) pluginCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "plugin",
		Short:   "Exec plugins (openctl-<name> executables)",
		GroupID: "state",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the exec plugins found in $OPENCTL_HOME/plugins and $PATH",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(a.stdout, 6, 4, 3, ' ', 0)
			fmt.Fprintln(tw, "NAME\tPATH\tKINDS\tPROTOCOL")
			for _, p := range a.plugins {
				var kinds []string
				for _, r := range p.Capabilities.Resources {
					kinds = append(kinds, r.Kind)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name(), p.Path, strings.Join(kinds, ","), p.Capabilities.ProtocolVersion)
			}
			return errors.Join(tw.Flush())
		},
	})
	return cmd
}
