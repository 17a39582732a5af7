package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
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
$refs are well-formed, and — for each provider that is configured — that
their specs are valid for it (required fields, ranges, the context named in
spec.context). For a provider without a configuration only the first three
are checked, and validate says so.`,
		Example: `  openctl validate -f examples/vms.yaml
  openctl validate -f infra/ -R`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rs, err := m.load(cmd.Context(), a)
			if err != nil {
				return err
			}
			reg, unchecked, err := a.validationRegistry(cmd.Context())
			if err != nil {
				return err
			}
			eng, err := openctl.New(openctl.WithRegistry(reg))
			if err != nil {
				return err
			}
			if err := eng.Validate(cmd.Context(), rs...); err != nil {
				return &checkedError{n: len(rs), err: err}
			}
			for _, name := range unchecked.names() {
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

// validationRegistry returns the providers to validate with: each opened
// from the configuration when a resource routes to it and it is
// configured, else a stand-in without a Validator (its kinds only), whose
// name is added to unchecked.
func (a *app) validationRegistry(ctx context.Context) (reg *registry.Registry, unchecked *nameSet, err error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, nil, err
	}
	sel, err := a.contextSelection(cfg)
	if err != nil {
		return nil, nil, err
	}
	reg, unchecked = &registry.Registry{}, &nameSet{}
	for _, d := range a.opts.Drivers {
		if err := reg.RegisterDriver(d, func() (registry.Provider, error) {
			dc, err := a.providerConfig(cfg, sel, d)
			if err != nil {
				return nil, err
			}
			info := d.Info()
			p, err := d.Open(ctx, dc, registry.OpenOptions{Logger: a.log, Registry: reg})
			if err != nil && len(dc.Contexts()) == 0 {
				// Not configured: a provider without contexts that
				// cannot open without them.
				unchecked.add(info.Name)
				return unvalidated{info}, nil
			}
			return p, err
		}); err != nil {
			return nil, nil, err
		}
	}
	return reg, unchecked, nil
}

// nameSet is a set of names, safe for concurrent use.
type nameSet struct {
	mu  sync.Mutex
	set map[string]bool
}

func (s *nameSet) add(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set == nil {
		s.set = map[string]bool{}
	}
	s.set[name] = true
}

func (s *nameSet) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.set))
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

// unvalidated stands in for a provider that is not configured: it
// serves its kinds for routing and validates nothing; it is never asked
// to read or change anything (validate only validates).
type unvalidated struct{ info registry.DriverInfo }

func (u unvalidated) Name() string           { return u.info.Name }
func (u unvalidated) Kinds() []registry.Kind { return u.info.Kinds }
func (u unvalidated) Get(context.Context, manifest.ID) (*manifest.Resource, error) {
	return nil, u.notConfigured()
}
func (u unvalidated) Apply(context.Context, *manifest.Resource) (*manifest.Resource, error) {
	return nil, u.notConfigured()
}
func (u unvalidated) Delete(context.Context, manifest.ID) error { return u.notConfigured() }
func (u unvalidated) notConfigured() error {
	return errcode.New(errcode.Invalid, "openctl: the "+u.info.Name+" provider is not configured")
}

// checkedError is validate's failure: how many resources were checked,
// then the engine's problems, with the "openctl: " the command adds said
// once. It is an invalid-input error whatever its cause.
type checkedError struct {
	n   int
	err error
}

func (e *checkedError) Error() string {
	return fmt.Sprintf("%d %s checked: %s", e.n, plural(e.n, "resource", "resources"), strings.TrimPrefix(e.err.Error(), "openctl: "))
}

func (e *checkedError) Unwrap() []error { return []error{e.err, errcode.Invalid} }
