package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
)

// providerCmds turns every provider's actions (registry.Actioner) into
// subcommands, generically: "openctl <provider> <action> <kind> <name>"
// with a flag per argument the action declares. The specs come from the
// provider's offline instance, so help and completion need no
// configuration; the real provider is built only when an action runs.
func (a *app) providerCmds() []*cobra.Command {
	var out []*cobra.Command
	for _, d := range a.opts.Drivers {
		info := d.Info()
		if len(info.Actions) == 0 {
			continue
		}
		pc := &cobra.Command{
			Use:     info.Name,
			Short:   fmt.Sprintf("Run an action of the %s provider on a resource", info.Name),
			GroupID: "providers",
			Args:    cobra.NoArgs,
		}
		byName := map[string][]registry.ActionSpec{}
		var names []string
		for _, s := range info.Actions {
			if _, ok := byName[s.Name]; !ok {
				names = append(names, s.Name)
			}
			byName[s.Name] = append(byName[s.Name], s)
		}
		for _, name := range names {
			pc.AddCommand(a.actionCmd(info, name, byName[name]))
		}
		out = append(out, pc)
	}
	return out
}

// actionCmd is the command of one action, offered for one or more kinds.
func (a *app) actionCmd(p registry.DriverInfo, name string, specs []registry.ActionSpec) *cobra.Command {
	kinds := map[string]registry.Kind{}
	for _, k := range p.Kinds {
		kinds[k.Kind] = k
	}
	var kindNames []string // as users type them: the first short name, else the plural
	var kindHelp []string
	for _, s := range specs {
		k := kinds[s.Kind]
		n := typedName(k)
		kindNames = append(kindNames, n)
		kindHelp = append(kindHelp, fmt.Sprintf("%s (%s)", n, s.Kind))
	}
	long := specs[0].Short + "."
	if specs[0].Long != "" {
		long += "\n\n" + specs[0].Long
	}
	long += "\n\nKinds: " + strings.Join(kindHelp, ", ")
	example := fmt.Sprintf("  openctl %s %s %s NAME", p.Name, name, kindNames[0])

	var sandbox bool
	// values holds a getter per declared argument, by argument name.
	values := map[string]func() any{}
	cmd := &cobra.Command{
		Use:     name + " KIND NAME",
		Short:   specs[0].Short,
		Long:    long,
		Example: example,
		Args:    cobra.ExactArgs(2),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return kindNames, cobra.ShellCompDirectiveNoFileComp
			}
			if len(args) == 1 {
				return a.completeNames(cmd.Context(), args[0]), cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// Among this provider's kinds first: "node" is both a K3s
			// and a Proxmox kind, and here it can only mean this one.
			kr, err := a.resolveKind(args[0] + "." + p.Name)
			if err != nil {
				kr, err = a.resolveKind(args[0])
			}
			if err != nil {
				return err
			}
			if kr.Provider != p.Name {
				return usagef("%s is served by the %s provider, not %s", args[0], kr.Provider, p.Name)
			}
			if !slices.ContainsFunc(specs, func(s registry.ActionSpec) bool { return s.Kind == kr.Kind.Kind }) {
				return usagef("%s has no action %q (it applies to %s)", kr.Kind.Kind, name, strings.Join(kindNames, ", "))
			}
			id := manifest.ID{APIVersion: apiVersionOf(kr), Kind: kr.Kind.Kind, Name: args[1]}
			if err := manifest.ValidateName(id.Name); err != nil {
				return usagef("%v", err)
			}
			argv := map[string]any{}
			for name, get := range values {
				if cmd.Flags().Changed(name) { // unset ones take the spec's default
					argv[name] = get()
				}
			}
			// The steps a long action reports (a CA rotation's, node by
			// node) go to standard error as they happen.
			steps := func(ev openctl.Event) {
				if ev.Type == openctl.EventStep {
					fmt.Fprintf(a.stderr, "%s: %s\n", ev.ID.Short(), ev.Step)
				}
			}
			s, err := a.open(cmd.Context(), sessionOptions{sandbox: sandbox, observer: steps})
			if err != nil {
				return err
			}
			defer s.close()
			out := &countingWriter{w: a.stdout}
			res, err := s.engine.Do(cmd.Context(), id, name, argv, out)
			if err != nil {
				return err
			}
			msg := fmt.Sprintf("%s: %s done", id.Short(), name)
			if res != nil && res.Message != "" {
				msg = res.Message
			}
			// An action that printed its output (logs, a kubeconfig)
			// keeps standard output for it alone, to pipe or redirect.
			w := a.stdout
			if out.n > 0 {
				w = a.stderr
			}
			_, err = fmt.Fprintln(w, msg)
			return err
		},
	}
	seen := map[string]bool{}
	for _, s := range specs {
		for _, arg := range s.Args {
			if seen[arg.Name] {
				continue
			}
			seen[arg.Name] = true
			values[arg.Name] = addArgFlag(cmd, arg)
			if arg.Required {
				_ = cmd.MarkFlagRequired(arg.Name)
			}
		}
	}
	cmd.Flags().BoolVar(&sandbox, "sandbox", false, sandboxHelp)
	return cmd
}

// addArgFlag defines the flag of an action argument and returns a getter
// of its typed value.
func addArgFlag(cmd *cobra.Command, arg registry.ArgSpec) func() any {
	f := cmd.Flags()
	help := arg.Help
	if arg.Required {
		help += " (required)"
	}
	// The spec converts the default to the argument's type.
	def, err := registry.ActionSpec{Name: "default", Args: []registry.ArgSpec{{Name: arg.Name, Type: arg.Type, Default: arg.Default}}}.CheckArgs(nil)
	if err != nil {
		def = map[string]any{}
	}
	switch arg.Type {
	case registry.ArgInt:
		d, _ := def[arg.Name].(int64)
		v := f.Int64P(arg.Name, arg.Short, d, help)
		return func() any { return *v }
	case registry.ArgBool:
		d, _ := def[arg.Name].(bool)
		v := f.BoolP(arg.Name, arg.Short, d, help)
		return func() any { return *v }
	case registry.ArgDuration:
		d, _ := def[arg.Name].(time.Duration)
		v := f.DurationP(arg.Name, arg.Short, d, help)
		return func() any { return *v }
	default:
		d, _ := def[arg.Name].(string)
		v := f.StringP(arg.Name, arg.Short, d, help)
		return func() any { return *v }
	}
}

// typedName is the name users type for a kind: its first short name, else
// its plural, else the kind in lower case.
func typedName(k registry.Kind) string {
	switch {
	case len(k.ShortNames) > 0:
		return k.ShortNames[0]
	case k.Plural != "":
		return k.Plural
	}
	return strings.ToLower(k.Kind)
}

// resolveKind finds a kind by any name a user types (kind, plural, short
// name, optionally qualified by provider as "vm.PROVIDER"), among the kinds of the compiled-in
// providers. An unknown name is an Invalid error listing the kinds.
func (a *app) resolveKind(name string) (registry.KindRef, error) {
	reg, err := a.offlineRegistry()
	if err != nil {
		return registry.KindRef{}, err
	}
	kr, err := reg.ResolveKind(name)
	if err != nil && errcode.Is(err, errcode.Invalid) {
		var known []string
		for _, k := range reg.Kinds() {
			known = append(known, typedName(k.Kind))
		}
		return kr, fmt.Errorf("%w (known kinds: %s)", err, strings.Join(known, ", "))
	}
	return kr, err
}

// apiVersionOf is the apiVersion of a kind: its provider's group and its
// first served version (v1 when it lists none).
func apiVersionOf(kr registry.KindRef) string {
	v := "v1"
	if len(kr.Kind.Versions) > 0 {
		v = kr.Kind.Versions[0]
	}
	return kr.Group + "/" + v
}

// countingWriter counts what goes through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
