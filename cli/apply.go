package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/output"
	"github.com/openctl/openctl/progress"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

// manifestFlags are -f and -R.
type manifestFlags struct {
	files     []string
	recursive bool
}

func (m *manifestFlags) register(cmd *cobra.Command, what string) {
	f := cmd.Flags()
	f.StringSliceVarP(&m.files, "filename", "f", nil, "manifest file or directory "+what+"; - reads standard input (repeatable)")
	f.BoolVarP(&m.recursive, "recursive", "R", false, "descend into the sub-directories of directories given with -f")
}

// load decodes the manifests. Problems are Invalid errors naming file
// and line.
func (m *manifestFlags) load(ctx context.Context, a *app) ([]*manifest.Resource, error) {
	if len(m.files) == 0 {
		return nil, usagef("no manifests: give -f FILE, -f DIR or -f - (standard input)")
	}
	rs, err := manifest.Load(ctx, m.files, manifest.LoadOptions{Recursive: m.recursive, Stdin: a.stdin})
	if err == nil && len(rs) == 0 {
		// As kubectl does: applying (or deleting) nothing is a mistake,
		// most often a directory whose manifests are in sub-directories.
		hint := ""
		if !m.recursive && slices.ContainsFunc(m.files, isDir) {
			hint = " (give -R to read the sub-directories of directories)"
		}
		files := slices.Clone(m.files)
		for i, f := range files {
			if f == "-" {
				files[i] = "standard input"
			}
		}
		return nil, usagef("no resources in %s%s", strings.Join(files, ", "), hint)
	}
	return rs, err
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// sandboxHelp is the help of every --sandbox flag.
const sandboxHelp = "run against the providers' built-in simulators with in-memory state: a demo that needs no setup"

// runFlags are --sandbox and, for the commands that take the state lock,
// --lock-wait.
type runFlags struct {
	sandbox  bool
	lockWait time.Duration
	// hold keeps the sandbox serving after the command (apply --hold).
	hold bool
}

func (r *runFlags) register(cmd *cobra.Command, lock bool) {
	f := cmd.Flags()
	f.BoolVar(&r.sandbox, "sandbox", false, sandboxHelp)
	if lock {
		f.DurationVar(&r.lockWait, "lock-wait", 0, "how long to wait for a state lock held by another openctl (0: fail at once, naming the holder)")
	}
}

func (a *app) applyCmd() *cobra.Command {
	var (
		m      manifestFlags
		rf     runFlags
		maxAge time.Duration
	)
	cmd := &cobra.Command{
		Use:   "apply (-f FILE | PLANFILE)",
		Short: "Create or update resources to match manifests",
		Long: `Create or update the resources of the manifests so that they match, in
dependency order ($ref), independent ones in parallel, and record them in the
state. Resources whose spec did not change since the last apply, and which
still exist, are left alone. A live view shows each resource's progress (on a
terminal; plain lines otherwise), then a summary.

Given a saved plan (openctl plan --out PLANFILE) instead of manifests, apply
does exactly what the plan says and reads no manifest. Before changing
anything it refuses a plan that was edited, made against another state store
or provider context, older than --max-age, or whose world moved since: a
state record changed (another apply ran), a resource appeared or vanished, or
planning again now would do something else.

The number of resources worked on at once is apply.concurrency in the
configuration or $OPENCTL_APPLY_CONCURRENCY (default 4).`,
		Example: `  openctl apply --sandbox -f examples/vms.yaml
  openctl apply -f vms.yaml -f k3s/ -R
  openctl get vms -o yaml | openctl apply -f -
  openctl plan -f vms.yaml --out plan.openctl && openctl apply plan.openctl`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if len(m.files) > 0 {
					return usagef("give either -f FILE or a saved plan, not both: a saved plan is applied exactly, without manifests")
				}
				if rf.sandbox {
					return usagef("--sandbox cannot apply a saved plan: the sandbox's state is new for every command")
				}
				return a.applyPlanFile(cmd.Context(), args[0], rf, maxAge)
			}
			if cmd.Flags().Changed("max-age") {
				return usagef("--max-age applies to a saved plan: give PLANFILE")
			}
			if rf.hold && !rf.sandbox {
				return usagef("--hold keeps a sandbox serving: give --sandbox too")
			}
			rs, err := m.load(cmd.Context(), a)
			if err != nil {
				return err
			}
			ids := make([]manifest.ID, len(rs))
			for i, r := range rs {
				ids[i] = r.ID()
			}
			return a.runOp(cmd.Context(), rf, "apply", ids, func(ctx context.Context, s *session) (*openctl.Report, error) {
				return s.engine.Apply(ctx, rs...)
			})
		},
	}
	m.register(cmd, "to apply")
	rf.register(cmd, true)
	cmd.Flags().BoolVar(&rf.hold, "hold", false, "with --sandbox: keep the sandbox serving after the apply, until Ctrl-C, so that what it made can be tried (kubectl, ssh)")
	cmd.Flags().DurationVar(&maxAge, "max-age", openctl.DefaultPlanMaxAge, "refuse a saved plan older than this (0: no limit)")
	return cmd
}

// runOp runs an apply or delete of ids with live progress and a summary.
func (a *app) runOp(ctx context.Context, rf runFlags, name string, ids []manifest.ID, op func(context.Context, *session) (*openctl.Report, error)) error {
	pr := progress.New(a.stdout, progress.Mode(a.progress), progress.WithNames(a.typedNames()))
	defer pr.Close()
	// Log lines and the Ctrl-C notice go above the live view, not across it.
	defer a.stderr.through(pr.Interleave)()
	s, err := a.open(ctx, sessionOptions{sandbox: rf.sandbox, observer: pr.Observe, lockWait: rf.lockWait})
	if err != nil {
		return err
	}
	defer s.close()
	pr.Start(name, ids)
	report, err := op(ctx, s)
	if report == nil {
		// Nothing ran (invalid input, a state lock held, cancelled while
		// waiting): the error alone says it, on stderr.
		pr.Close()
		var le *state.LockedError
		if errors.As(err, &le) && !le.Stale {
			err = fmt.Errorf("%w\nto wait for it instead, give --lock-wait (e.g. --lock-wait 10m)", err)
		}
		return err
	}
	pr.Finish(report, err)
	// A sandbox that ends with this command takes its kubeconfigs with
	// it: no "Try:" command that could not work.
	ending := rf.sandbox && !rf.hold
	if name == "apply" && !a.quiet {
		a.printApplied(ctx, s.engine, report, !ending)
	}
	switch {
	case rf.hold:
		a.note("openctl: --hold: the sandbox keeps serving; stop it with Ctrl-C")
		<-ctx.Done()
	case ending && name == "apply":
		a.note("openctl: --sandbox: the sandbox has ended with this command, and its files with it; to keep it serving and use kubectl against it, run again with --hold (make run ARGS=--hold) and stop it with Ctrl-C")
	}
	if err != nil {
		// The summary on stdout lists each failure with what to do; stderr
		// gets the count, for logs that keep only it.
		failed := report.Count(openctl.OutcomeFailed) + report.Count(openctl.OutcomeSkipped)
		return &exitError{code: exitCode(ctx, err), err: fmt.Errorf("%s: %d of %d resources failed or were skipped (listed above)", name, failed, len(report.Results))}
	}
	return nil
}

func (a *app) planCmd() *cobra.Command {
	var (
		m        manifestFlags
		rf       runFlags
		dot      bool
		detailed bool
		format   string
		out      string
		refresh  bool
	)
	cmd := &cobra.Command{
		Use:   "plan -f FILE [--out PLANFILE]",
		Short: "Show what apply would do, changing nothing",
		Long: `Show what applying the manifests would do — create, update, replace or
nothing — per resource with the changed fields, and the waves in which apply
would run them. Plan reads live resources and the state; it changes nothing
and takes no lock.

With --out the plan is also saved (mode 0600) for "openctl apply PLANFILE",
which applies exactly that plan or refuses before changing anything; secrets
in it are sealed with the state's key, and a digest keyed by it detects any
edit, so saving needs the state passphrase. "openctl show PLANFILE" prints it.

With --refresh-only, plan compares the live resources with the state instead
of the manifests: it reports resources changed or deleted outside openctl
(drift) — those of the manifests given with -f, or every recorded resource.

With --detailed-exitcode the exit code says whether there are changes (with
--refresh-only: drift), for CI: 0 none, 2 changes pending, 1 error.

-o json prints the plan as a versioned JSON document (apiVersion openctl.io/v1,
kind PlanReport; its JSON Schema is output/schema/plan-report-v1.json) and
-o markdown as a pull-request comment; the summary line then goes to stderr.`,
		Example: `  openctl plan -f vms.yaml
  openctl plan -f vms.yaml --detailed-exitcode || [ $? -eq 2 ]
  openctl plan -f vms.yaml --out plan.openctl
  openctl plan --refresh-only --detailed-exitcode
  openctl plan -f cluster/ -R --dot | dot -Tsvg > plan.svg
  openctl plan -f vms.yaml -o json | jq '.resources[] | select(.action != "no-op") | .id.name'
  openctl plan -f infra/ -R -o markdown > plan.md`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := output.ParsePlanFormat(format)
			switch {
			case err != nil:
				err = &usageError{err: fmt.Errorf("-o: %w", err)}
			case dot && f != output.PlanText:
				err = usagef("give either --dot or -o %s, not both", f)
			case out != "" && (dot || refresh):
				err = usagef("--out saves a plan of manifests: not with --dot or --refresh-only")
			case out != "" && rf.sandbox:
				err = usagef("--out cannot be used with --sandbox: the sandbox's state is gone after the command, so the plan could never be applied")
			case refresh && dot:
				err = usagef("--refresh-only and --dot cannot be combined")
			case refresh:
				err = a.drift(cmd.Context(), m, rf, detailed, f)
			default:
				err = a.plan(cmd.Context(), m, rf, dot, detailed, f, out)
			}
			var ee *exitError
			if detailed && err != nil && !errors.As(err, &ee) {
				return &exitError{code: exitFailure, err: err}
			}
			return err
		},
	}
	m.register(cmd, "to plan")
	rf.register(cmd, false)
	cmd.Flags().BoolVar(&dot, "dot", false, "print the dependency graph in Graphviz DOT format instead")
	cmd.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 0 when there are no changes, 2 when there are, 1 on error")
	cmd.Flags().StringVarP(&format, "output", "o", "text", "output format: text, json (the PlanReport schema) or markdown (a pull-request comment)")
	cmd.Flags().StringVar(&out, "out", "", "also save the plan to this file (0600) for openctl apply PLANFILE")
	cmd.Flags().BoolVar(&refresh, "refresh-only", false, "report drift: resources changed or deleted outside openctl since they were applied")
	return cmd
}

func (a *app) plan(ctx context.Context, m manifestFlags, rf runFlags, dot, detailed bool, f output.PlanFormat, out string) error {
	rs, err := m.load(ctx, a)
	if err != nil {
		return err
	}
	s, err := a.open(ctx, sessionOptions{sandbox: rf.sandbox})
	if err != nil {
		return err
	}
	defer s.close()
	if out != "" {
		if err := checkPlanOut(ctx, s.engine, out); err != nil {
			return err
		}
	}
	p, err := s.engine.Plan(ctx, rs...)
	if err != nil {
		return err
	}
	if out != "" {
		if p.Contexts, err = a.currentContexts(s); err != nil {
			return err
		}
		if err := savePlanFile(ctx, s.engine, p, out); err != nil {
			return err
		}
	}
	if dot {
		_, err = fmt.Fprint(a.stdout, p.DOT())
	} else {
		err = output.RenderPlan(a.stdout, f, p, output.PlanOptions{Color: colorOK(a.stdout), Names: a.typedNames()})
		if err == nil && f != output.PlanText {
			a.note("%s", output.PlanSummaryLine(p)) // stdout holds only the document
		}
	}
	if err != nil {
		return err
	}
	if out != "" {
		a.note("openctl: saved the plan to %s; apply exactly this plan with: %s apply %s", out, a.name(), out)
	}
	if detailed && p.HasChanges() {
		return &exitError{code: 2}
	}
	return nil
}

// typedNames renders IDs the way users type them ("vm/web-01").
func (a *app) typedNames() func(manifest.ID) string {
	reg, err := a.offlineRegistry()
	if err != nil {
		return output.NameOf
	}
	var kinds []registry.Kind
	for _, k := range reg.Kinds() {
		kinds = append(kinds, k.Kind)
	}
	return output.KindNames(kinds)
}

// colorOK reports whether w is a terminal that should get colours (not
// when $NO_COLOR is set or $TERM is dumb).
func colorOK(w any) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	return isTerminal(w)
}

// isTerminal reports whether w is a character device.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (a *app) deleteCmd() *cobra.Command {
	var (
		m  manifestFlags
		rf runFlags
	)
	cmd := &cobra.Command{
		Use:   "delete (-f FILE | KIND NAME...)",
		Short: "Delete resources and forget them in the state",
		Long: `Delete the resources of the manifests, or the named resources of one kind,
in reverse dependency order, and remove them from the state. A composite's
children are deleted with it; deleting a child that a composite owns is
refused, naming the owner. A resource that is already gone is not an error.`,
		Example: `  openctl delete -f examples/vms.yaml
  openctl delete vm web-01 web-02`,
		ValidArgsFunction: a.completeKindAndNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			var ids []manifest.ID
			switch {
			case len(m.files) > 0 && len(args) > 0:
				return usagef("give either -f or KIND NAME..., not both")
			case len(m.files) > 0:
				rs, err := m.load(cmd.Context(), a)
				if err != nil {
					return err
				}
				for _, r := range rs {
					ids = append(ids, r.ID())
				}
			case len(args) >= 2:
				kr, err := a.resolveKind(args[0])
				if err != nil {
					return err
				}
				for _, name := range args[1:] {
					ids = append(ids, manifest.ID{APIVersion: apiVersionOf(kr), Kind: kr.Kind.Kind, Name: name})
				}
			default:
				return usagef("what to delete: give -f FILE or KIND NAME...")
			}
			return a.runOp(cmd.Context(), rf, "delete", ids, func(ctx context.Context, s *session) (*openctl.Report, error) {
				return s.engine.Delete(ctx, ids...)
			})
		},
	}
	m.register(cmd, "whose resources to delete")
	rf.register(cmd, true)
	return cmd
}

// printApplied prints, per kind, a table of the resources an apply created
// or updated, with their live status (the VMs' nodes, VMIDs and
// addresses), then, withHints, the commands to try on them.
func (a *app) printApplied(ctx context.Context, e *openctl.Engine, report *openctl.Report, withHints bool) {
	byKind := map[string][]*manifest.Resource{}
	ages := map[manifest.ID]time.Time{}
	kinds := map[string]registry.Kind{}
	var order []string
	for _, res := range report.Results {
		if res.Resource == nil || (res.Outcome != openctl.OutcomeCreated && res.Outcome != openctl.OutcomeUpdated) {
			continue
		}
		_, k, err := e.Registry().Lookup(res.ID)
		if err != nil {
			continue
		}
		key := res.ID.APIVersion + "/" + res.ID.Kind
		if _, ok := byKind[key]; !ok {
			order = append(order, key)
			kinds[key] = k
		}
		byKind[key] = append(byKind[key], res.Resource)
		if rec, err := e.Store().Get(context.WithoutCancel(ctx), res.ID); err == nil {
			ages[res.ID] = rec.CreatedAt
		}
	}
	var hints []string
	for _, key := range order {
		rs := byKind[key]
		slices.SortFunc(rs, func(x, y *manifest.Resource) int { return strings.Compare(x.Metadata.Name, y.Metadata.Name) })
		fmt.Fprintln(a.stdout)
		_ = output.Print(a.stdout, output.Table, rs, output.Options{Kind: kinds[key], Ages: ages, Now: time.Now})
		for _, r := range rs {
			if h, ok := expandHint(kinds[key].Hint, r); ok && withHints {
				hints = append(hints, h)
			}
		}
	}
	if len(hints) > 0 {
		fmt.Fprintln(a.stdout)
		for _, h := range hints {
			fmt.Fprintln(a.stdout, "Try: "+h)
		}
	}
}

// hintField is a {field} of a registry.Kind's Hint.
var hintField = regexp.MustCompile(`\{([A-Za-z0-9_.]+)\}`)

// expandHint fills hint's {field}s from r; false when hint is empty or
// a field has no value.
func expandHint(hint string, r *manifest.Resource) (string, bool) {
	if hint == "" {
		return "", false
	}
	ok := true
	out := hintField.ReplaceAllStringFunc(hint, func(m string) string {
		v, found, err := r.Field(m[1 : len(m)-1])
		s := fmt.Sprint(v)
		if err != nil || !found || v == nil || s == "" {
			ok = false
		}
		return s
	})
	return out, ok
}
