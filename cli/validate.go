package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/registry"
)

func (a *app) validateCmd() *cobra.Command {
	var m manifestFlags
	cmd := &cobra.Command{
		Use:   "validate -f FILE",
		Short: "Check manifests offline, contacting no server",
		Long: `Check manifests without contacting any server or reading the state: that
they decode (strictly: unknown fields, wrong types and duplicates are errors
naming file and line), that their apiVersion and kind are served, that their
$refs are well-formed, and — when a Proxmox VE context is configured — that
their specs are valid for the provider (required fields, ranges, the context
named in spec.context). Without a configuration only the first three are
checked, and validate says so.`,
		Example: `  openctl validate -f examples/vms.yaml
  openctl validate -f infra/ -R`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rs, err := m.load(a)
			if err != nil {
				return err
			}
			reg, unchecked, err := a.validationRegistry()
			if err != nil {
				return err
			}
			eng, err := openctl.New(openctl.WithRegistry(reg))
			if err != nil {
				return err
			}
			if err := eng.Validate(cmd.Context(), rs...); err != nil {
				return errcode.Wrap(errcode.Invalid, fmt.Sprintf("%d %s checked", len(rs), plural(len(rs), "resource", "resources")), err)
			}
			for _, name := range unchecked {
				a.note("openctl: the %s provider is not configured: checked decoding, kinds and $refs of its resources, not their specs", name)
			}
			if !a.quiet {
				fmt.Fprintf(a.stdout, "%d %s valid\n", len(rs), plural(len(rs), "resource", "resources"))
			}
			return nil
		},
	}
	m.register(cmd, "to check")
	return cmd
}

// validationRegistry returns the providers to validate with: built from
// the configuration where it has them, else the offline instances, whose
// Validate is not called (it would check spec.context against a made-up
// configuration); their names are returned in unchecked.
func (a *app) validationRegistry() (reg *registry.Registry, unchecked []string, err error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, nil, err
	}
	reg = &registry.Registry{}
	for _, spec := range providers {
		var p registry.Provider
		if len(cfg.Contexts(spec.name)) == 0 {
			unchecked = append(unchecked, spec.name)
			p, err = spec.offline()
			p = unvalidated{p}
		} else {
			p, err = spec.open(cfg, a.contextName, a.log)
		}
		if err != nil {
			return nil, nil, err
		}
		if err := reg.Register(p); err != nil {
			return nil, nil, err
		}
	}
	return reg, unchecked, nil
}

func where(file string, line int) string {
	switch {
	case file == "":
		return ""
	case line > 0:
		return fmt.Sprintf(" (%s:%d)", file, line)
	}
	return " (" + file + ")"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// unvalidated hides an offline provider's Validator (and every other
// optional interface) from the engine.
type unvalidated struct{ registry.Provider }
