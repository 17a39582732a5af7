package cli

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

func (a *app) configCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the configuration and switch contexts",
		Long: `The configuration is ~/.openctl/config.yaml ($OPENCTL_CONFIG, or
$OPENCTL_HOME/config.yaml; --config), with the environment overlay on top:

  providers:
    <provider>:                # one section per provider, read by it
      default-context: lab
      contexts:
        lab: {...}             # the provider's endpoint settings
      credentials:
        lab: {...}             # named credentials contexts refer to
      defaults: {...}          # the provider's defaults for resources
  state:
    dsn: file:~/.openctl/state # or postgres://user@host:5432/db
  apply:
    concurrency: 4

Each provider documents its section and its OPENCTL_<PROVIDER>_* variables;
OPENCTL_STATE_DSN names the state store; OPENCTL_APPLY_CONCURRENCY sets the
concurrency. A file holding secrets that others can read gets a warning.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(a.configViewCmd(), a.configUseContextCmd(), a.configGetContextsCmd())
	return cmd
}

func (a *app) configViewCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "view",
		Short: "Print the configuration in effect, secrets redacted",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			src := cfg.Path
			if src == "" {
				src = "no configuration file"
			}
			view := map[string]any{}
			providers := map[string]any{}
			var notes []string
			known := map[string]bool{}
			for _, d := range a.opts.Drivers {
				name := d.Info().Name
				known[name] = true
				dc, err := a.providerConfig(cfg, contextSelection{}, d)
				if err != nil {
					return err
				}
				if len(dc.Contexts()) > 0 || slices.Contains(cfg.ProviderNames(), name) {
					providers[name] = dc
				}
			}
			for _, name := range cfg.ProviderNames() {
				if !known[name] {
					notes = append(notes, fmt.Sprintf("# providers.%s is not shown: no provider named %q is compiled into this program", name, name))
				}
			}
			if len(providers) > 0 {
				view["providers"] = providers
			}
			if dsn, err := cfg.StateDSN(); err == nil {
				view["state"] = map[string]string{"dsn": state.MaskDSN(dsn)}
			}
			view["apply"] = map[string]int{"concurrency": cfg.Concurrency()}
			b, err := yaml.Marshal(view)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "# %s, with the environment overlay\n", src)
			for _, n := range notes {
				fmt.Fprintln(a.stdout, n)
			}
			_, err = a.stdout.Write(b)
			return err
		},
	}
}

// fileContexts returns the contexts d's section of the file defines
// (without the environment).
func fileContexts(cfg *config.Config, d registry.Driver) ([]registry.ContextInfo, error) {
	dc, err := d.DecodeConfig(cfg.Section(d.Info().Name))
	if err != nil {
		return nil, err
	}
	return dc.Contexts(), nil
}

func (a *app) configUseContextCmd() *cobra.Command {
	var provider string
	cmd := &cobra.Command{
		Use:   "use-context NAME",
		Short: "Make a context a provider's default and save the configuration",
		Long: `Make a context the default of the provider that defines it (--provider
when several do) and save the configuration file, keeping its comments.`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			cfg, err := a.loadConfig()
			if err != nil || len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, d := range a.opts.Drivers {
				if provider != "" && d.Info().Name != provider {
					continue
				}
				ctxs, _ := fileContexts(cfg, d)
				for _, c := range ctxs {
					names = append(names, c.Name)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			want := args[0]
			var candidates, all []string
			var inEnv bool
			for _, d := range a.opts.Drivers {
				name := d.Info().Name
				if provider != "" && name != provider {
					continue
				}
				ctxs, err := fileContexts(cfg, d)
				if err != nil {
					return err
				}
				for _, c := range ctxs {
					all = append(all, name+"/"+c.Name)
				}
				if slices.ContainsFunc(ctxs, func(c registry.ContextInfo) bool { return c.Name == want }) {
					candidates = append(candidates, name)
					continue
				}
				if dc, err := a.providerConfig(cfg, contextSelection{}, d); err == nil && slices.ContainsFunc(dc.Contexts(), func(c registry.ContextInfo) bool { return c.Name == want }) {
					inEnv = true
				}
			}
			switch {
			case provider != "" && !slices.Contains(a.driverNames(), provider):
				return usagef("--provider: no provider %q (providers: %s)", provider, strings.Join(a.driverNames(), ", "))
			case len(candidates) > 1:
				return usagef("context %q is defined by several providers (%s): say which with --provider", want, strings.Join(candidates, ", "))
			case len(candidates) == 0 && inEnv:
				return usagef("context %q is defined by the environment, not by a file: it is the default while its variables are set, and cannot be saved as one", want)
			case len(candidates) == 0:
				return usagef("no context %q in the configuration file (contexts: %s)", want, orNone(all))
			}
			if err := cfg.UseContext(candidates[0], want); err != nil {
				return err
			}
			if err := cfg.Save(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s: switched to context %q (%s)\n", candidates[0], want, cfg.Path)
			return nil
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "the provider whose context to switch (needed when several define the context)")
	return cmd
}

func (a *app) configGetContextsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get-contexts",
		Short: "List the contexts of every provider",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			n := 0
			for _, d := range a.opts.Drivers {
				info := d.Info()
				dc, err := a.providerConfig(cfg, contextSelection{}, d)
				if err != nil {
					return err
				}
				ctxs := dc.Contexts()
				if len(ctxs) == 0 {
					continue
				}
				if n > 0 {
					fmt.Fprintln(a.stdout)
				}
				tw := tabwriter.NewWriter(a.stdout, 6, 4, 3, ' ', 0)
				fmt.Fprintln(tw, strings.Join(append([]string{"CURRENT", "PROVIDER", "NAME"}, info.ContextColumns...), "\t"))
				for _, c := range ctxs {
					cur := ""
					if c.Current {
						cur = "*"
					}
					fmt.Fprintln(tw, strings.Join(append([]string{cur, info.Name, c.Name}, c.Columns...), "\t"))
					n++
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			if n == 0 {
				fmt.Fprintln(a.stderr, "No contexts configured (see openctl config --help).")
			}
			return nil
		},
	}
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
