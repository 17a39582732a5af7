package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/output"
)

// checkPlanOut refuses, before planning, to write a saved plan over a
// file that is not one (a manifest given by mistake) or over a directory.
func checkPlanOut(ctx context.Context, e *openctl.Engine, path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--out %s: %w", path, err)
	case !st.Mode().IsRegular():
		return usagef("--out %s: not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	defer f.Close()
	if _, err := e.LoadPlan(ctx, f); err != nil {
		return usagef("--out %s: the file exists and is not a saved plan; it is left alone (remove it or choose another name)", path)
	}
	return nil
}

// savePlanFile writes p as a saved plan to path, mode 0600, atomically:
// a partly written plan never replaces a good one.
func savePlanFile(ctx context.Context, e *openctl.Engine, p *openctl.Plan, path string) error {
	var buf bytes.Buffer
	if err := e.SavePlan(ctx, p, &buf); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("saving the plan: %w", err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600; Chmod makes sure whatever the umask.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("saving the plan: %w", err)
	}
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("saving the plan: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("saving the plan: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("saving the plan: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("saving the plan: %w", err)
	}
	return nil
}

// loadPlanFile reads a saved plan. A file that is not one is invalid
// input (exit 2).
func loadPlanFile(ctx context.Context, e *openctl.Engine, path string) (*openctl.SavedPlan, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, usagef("no saved plan %s (make one with: openctl plan -f FILE --out %s)", path, path)
		}
		return nil, err
	}
	defer f.Close()
	sp, err := e.LoadPlan(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sp, nil
}

// currentContexts returns, by provider, the context the session's
// configuration (and --context) selects; nil in the sandbox.
func (a *app) currentContexts(s *session) (map[string]string, error) {
	if s.cfg == nil {
		return nil, nil
	}
	sel, err := a.contextSelection(s.cfg)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, d := range a.opts.Drivers {
		dc, err := a.providerConfig(s.cfg, sel, d)
		if err != nil {
			continue // an unconfigured provider: its resources fail on their own
		}
		for _, c := range dc.Contexts() {
			if c.Current {
				out[d.Info().Name] = c.Name
			}
		}
	}
	return out, nil
}

// applyPlanFile applies a saved plan exactly.
func (a *app) applyPlanFile(ctx context.Context, path string, rf runFlags, maxAge time.Duration) error {
	if maxAge == 0 {
		maxAge = -1 // the flag's 0 is "no limit"
	}
	// The plan is read before the session only to name its resources in
	// the progress view; it is read again by the engine of the session.
	probe, err := openctl.New()
	if err != nil {
		return err
	}
	sp, err := loadPlanFile(ctx, probe, path)
	if err != nil {
		return err
	}
	var ids []manifest.ID
	for _, c := range sp.Plan().Changes {
		if c.Action != openctl.ActionNoOp {
			ids = append(ids, c.ID)
		}
	}
	return a.runOp(ctx, rf, "apply", ids, func(ctx context.Context, s *session) (*openctl.Report, error) {
		contexts, err := a.currentContexts(s)
		if err != nil {
			return nil, err
		}
		return s.engine.ApplyPlan(ctx, sp, openctl.ApplyPlanOptions{MaxAge: maxAge, Contexts: contexts})
	})
}

// drift reports drift (plan --refresh-only).
func (a *app) drift(ctx context.Context, m manifestFlags, rf runFlags, detailed bool, f output.PlanFormat) error {
	var rs []*manifest.Resource
	if len(m.files) > 0 {
		var err error
		if rs, err = m.load(ctx, a); err != nil {
			return err
		}
	}
	s, err := a.open(ctx, sessionOptions{sandbox: rf.sandbox})
	if err != nil {
		return err
	}
	defer s.close()
	p, err := s.engine.Drift(ctx, rs...)
	if err != nil {
		return err
	}
	var b strings.Builder
	switch {
	case f != output.PlanText:
		if err := output.RenderPlan(&b, f, p, output.PlanOptions{Names: a.typedNames()}); err != nil {
			return err
		}
		a.note("%s", output.PlanSummaryLine(p)) // stdout holds only the document
	case !p.HasChanges():
		fmt.Fprintf(&b, "No drift: the %d resources checked match the state.\n", len(p.Changes))
	default:
		if err := output.WritePlan(&b, p, output.PlanOptions{Color: colorOK(a.stdout), Names: a.typedNames()}); err != nil {
			return err
		}
		b.WriteString("Drift: the resources above changed outside openctl; apply their manifests to restore them, or update the manifests.\n")
	}
	if _, err := fmt.Fprint(a.stdout, b.String()); err != nil {
		return err
	}
	if detailed && p.HasChanges() {
		return &exitError{code: 2}
	}
	return nil
}

func (a *app) showCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "show PLANFILE",
		Short: "Print a saved plan",
		Long: `Print a saved plan (openctl plan --out PLANFILE): when and against which state
store it was made, the providers and contexts, then the plan as openctl plan
prints it. Show reads no state and needs no passphrase; it does not verify the
plan's digest — openctl apply PLANFILE does, before changing anything.`,
		Example: `  openctl show plan.openctl`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			f, err := output.ParsePlanFormat(format)
			if err != nil {
				return &usageError{err: fmt.Errorf("-o: %w", err)}
			}
			e, err := openctl.New()
			if err != nil {
				return err
			}
			sp, err := loadPlanFile(ctx, e, args[0])
			if err != nil {
				return err
			}
			var b bytes.Buffer
			if f == output.PlanText {
				fmt.Fprintf(&b, "Saved plan %s, made %s against state store %s\n", args[0], sp.Created().Format(time.RFC3339), noneIfEmpty(sp.StoreID()))
				for _, p := range sp.Providers() {
					fmt.Fprintf(&b, "Provider %s, context %s\n", p.Name, noneIfEmpty(p.Context))
				}
				b.WriteByte('\n')
			}
			if err := output.RenderPlan(&b, f, sp.Plan(), output.PlanOptions{Color: colorOK(a.stdout), Names: a.typedNames()}); err != nil {
				return err
			}
			if f != output.PlanText {
				a.note("%s", output.PlanSummaryLine(sp.Plan())) // stdout holds only the document
			}
			_, err = a.stdout.Write(b.Bytes())
			return err
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", "text", "output format: text, json (the PlanReport schema) or markdown (a pull-request comment)")
	return cmd
}

func noneIfEmpty(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
