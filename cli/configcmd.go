package cli

import (
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/config"
)

func (a *app) configCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the configuration and switch contexts",
		Long: `The configuration is ~/.openctl/config.yaml ($OPENCTL_CONFIG, or
$OPENCTL_HOME/config.yaml; --config), with the environment overlay on top:

  providers:
    proxmox:
      default-context: lab
      contexts:
        lab:
          endpoint: https://pve.lab:8006
          node: pve1
          credentials: lab
          fingerprint: "AB:CD:..."
      credentials:
        lab:
          tokenId: root@pam!openctl
          tokenSecretFile: ~/.openctl/secrets/lab.token
      defaults:
        storage: local-lvm
        bridge: vmbr0
  state:
    backend: file              # or postgres, with dsn: postgres://...
  apply:
    concurrency: 4

OPENCTL_PROXMOX_URL, OPENCTL_PROXMOX_TOKEN_ID, OPENCTL_PROXMOX_TOKEN_SECRET and
OPENCTL_PROXMOX_FINGERPRINT define a context "env" and make it the default;
OPENCTL_STATE_DSN selects PostgreSQL; OPENCTL_APPLY_CONCURRENCY sets the
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
			b, err := yaml.Marshal(cfg.Redacted())
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "# %s, with the environment overlay\n%s", src, b)
			return err
		},
	}
}

func (a *app) configUseContextCmd() *cobra.Command {
	var provider string
	cmd := &cobra.Command{
		Use:   "use-context NAME",
		Short: "Make a context the provider's default and save the configuration",
		Args:  cobra.ExactArgs(1),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			cfg, err := a.loadConfig()
			if err != nil || len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, c := range cfg.Contexts(provider) {
				names = append(names, c.Name)
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			if err := cfg.UseContext(provider, args[0]); err != nil {
				return err
			}
			if err := cfg.Save(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s: switched to context %q (%s)\n", provider, args[0], cfg.Path)
			return nil
		},
	}
	cmd.Flags().StringVar(&provider, "provider", config.ProviderProxmox, "the provider whose context to switch")
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
			var names []string
			for name := range cfg.Providers {
				names = append(names, name)
			}
			slices.Sort(names)
			tw := tabwriter.NewWriter(a.stdout, 6, 4, 3, ' ', 0)
			fmt.Fprintln(tw, "CURRENT\tPROVIDER\tNAME\tENDPOINT\tNODE\tCREDENTIALS")
			n := 0
			for _, p := range names {
				for _, c := range cfg.Contexts(p) {
					cur := ""
					if c.Current {
						cur = "*"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cur, p, c.Name, c.Endpoint, orNone(c.Node), orNone(c.Credentials))
					n++
				}
			}
			if n == 0 {
				fmt.Fprintln(a.stderr, "No contexts configured (see openctl config --help).")
				return nil
			}
			return tw.Flush()
		},
	}
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
