package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/plugin"
	"github.com/openctl/openctl/progress"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/seal"
)

// The exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitInvalid = 2
)

const exitCodesHelp = `Exit codes:
  0    success; for plan --detailed-exitcode: no changes
  1    failure: a resource failed, a server or the state store could not be
       reached, the state holds a corrupt record, the state lock is held by
       someone else; for plan --detailed-exitcode: any error
  2    invalid input or usage: unknown command or flag, wrong arguments,
       malformed manifests (file and line named), invalid configuration;
       for plan --detailed-exitcode: changes are pending
  130  interrupted by Ctrl-C (SIGINT; 143 for SIGTERM): work in flight was
       cancelled and the state lock released; running the same command
       again converges. A second Ctrl-C quits at once.`

// app holds what every command shares: the streams, the global flags and
// what they lead to. It lives for one run.
type app struct {
	opts     Options
	backends state.Backends      // the state stores by DSN scheme
	env      func(string) string // the environment; nil means os.Getenv

	stdin  io.Reader
	stdout io.Writer
	stderr *switchWriter

	// Global flags.
	configPath  string
	contextName string
	progress    string
	quiet       bool
	verbose     bool

	// started is set once a command's run begins; errors before it (flag
	// parsing, argument checks, unknown commands) are usage errors.
	started bool
	log     *slog.Logger
	plugins []*plugin.Plugin // the exec plugins in use, by addPlugins
}

// exitError carries an exit code chosen by a command. A nil err means the
// command already told the user what happened.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError marks an error in how a command was called.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// run executes the command line args and returns the process exit code.
func run(ctx context.Context, opts Options, args []string, stdin io.Reader, stdout io.Writer, stderr *switchWriter) int {
	a, err := newApp(opts, stdin, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "openctl: "+err.Error())
		return exitFailure
	}
	a.addPlugins(ctx)
	root := a.rootCmd()
	root.InitDefaultCompletionCmd(args...)
	requireSubcommand(root)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && !a.started {
		err = &usageError{err: err}
	}
	code := exitCode(ctx, err)
	if msg := errorMessage(err); msg != "" {
		if !strings.HasPrefix(msg, "openctl: ") { // the engine's errors name it already
			msg = "openctl: " + msg
		}
		fmt.Fprintln(stderr, msg)
		var ue *usageError
		if errors.As(err, &ue) && cmd != nil {
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
	}
	return code
}

// requireSubcommand makes every command below root that only groups
// subcommands (state, config, a provider's actions, completion) refuse an unknown one
// as a usage error, and print its help when given none. (Cobra itself
// prints the help and succeeds, so "openctl PROVIDER frobnicate KIND x" would
// exit 0 having done nothing.)
func requireSubcommand(root *cobra.Command) {
	for _, c := range root.Commands() {
		if !c.Runnable() && c.HasSubCommands() {
			c.Args = cobra.NoArgs
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
		requireSubcommand(c)
	}
}

// exitCode maps the error a command returned to the process exit code:
// see exitCodesHelp.
func exitCode(ctx context.Context, err error) int {
	if err == nil {
		return exitOK
	}
	var intr *interrupted
	if errors.As(context.Cause(ctx), &intr) {
		return intr.exitCode()
	}
	if errors.Is(err, syscall.EPIPE) {
		// The reader of standard output went away ("| head"): the
		// shell's code for SIGPIPE, as an uncaught one would give.
		return 128 + int(syscall.SIGPIPE)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ue *usageError
	if errors.As(err, &ue) || errcode.Is(err, errcode.Invalid) && !stateDamaged(err) {
		return exitInvalid
	}
	return exitFailure
}

// stateDamaged reports whether err says that the state store holds a
// record (or a key file) that does not decode. The stores classify that as
// Invalid, but it is no fault in the command's input: it is a failure of
// the store (exit 1, like an unreachable store), the same for every
// command, and plan --detailed-exitcode cannot mistake it for changes.
func stateDamaged(err error) bool {
	return errors.Is(err, state.ErrCorrupt) || errors.Is(err, seal.ErrCorrupt)
}

// errorMessage is what run prints for err, "" for nothing.
func errorMessage(err error) string {
	var ee *exitError
	if err == nil || errors.As(err, &ee) && ee.err == nil || errors.Is(err, syscall.EPIPE) {
		return ""
	}
	return strings.TrimRight(err.Error(), "\n")
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   a.name(),
		Short: "Declarative infrastructure from Kubernetes-style manifests",
		Long: `openctl applies Kubernetes-style manifests (apiVersion, kind, metadata, spec)
through the providers compiled into it (` + a.providerSummary() + `) in
dependency order and in parallel, and remembers what it did in its state
(files under ~/.openctl/state, or a database), so that applying the same
manifests again changes nothing.

Try it without any setup against the providers' built-in simulators:

  openctl apply --sandbox -f examples/vms.yaml

Configuration: ~/.openctl/config.yaml (--config, $OPENCTL_CONFIG), or for CI
only environment variables:
` + a.envHelp() + `

` + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.started = true
			return a.setup()
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err: err} })
	pf := root.PersistentFlags()
	pf.StringVar(&a.configPath, "config", "", "configuration file (default $OPENCTL_CONFIG, else ~/.openctl/config.yaml)")
	pf.StringVar(&a.contextName, "context", "", "provider context to use instead of the configured default: NAME for every provider that has it, or PROVIDER=NAME[,PROVIDER=NAME...]")
	pf.StringVar(&a.progress, "progress", "auto", "progress display: auto, tty, plain or quiet")
	pf.BoolVarP(&a.quiet, "quiet", "q", false, "print only errors and requested output (same as --progress quiet)")
	pf.BoolVarP(&a.verbose, "verbose", "v", false, "log debug diagnostics to stderr")

	root.AddGroup(
		&cobra.Group{ID: "resources", Title: "Resources:"},
		&cobra.Group{ID: "state", Title: "State and configuration:"},
	)
	for _, c := range []*cobra.Command{a.applyCmd(), a.planCmd(), a.getCmd(), a.describeCmd(), a.deleteCmd(), a.validateCmd(), a.showCmd()} {
		c.GroupID = "resources"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{a.stateCmd(), a.configCmd(), a.pluginCmd()} {
		c.GroupID = "state"
		root.AddCommand(c)
	}
	for _, c := range a.opts.Commands {
		if c.GroupID == "" {
			c.GroupID = "state"
		}
		root.AddCommand(c)
	}
	root.AddCommand(a.versionCmd())
	for _, c := range a.providerCmds() {
		root.AddCommand(c)
	}
	root.AddGroup(&cobra.Group{ID: "providers", Title: "Provider actions:"})
	return root
}

// name is the program's name.
func (a *app) name() string {
	if a.opts.Name != "" {
		return a.opts.Name
	}
	return "openctl"
}

// providerSummary names the compiled-in providers and their groups, for
// help texts.
func (a *app) providerSummary() string {
	var parts []string
	for _, d := range a.opts.Drivers {
		info := d.Info()
		groups := info.Groups
		if len(groups) == 0 {
			groups = []string{info.Name + manifest.APIGroupSuffix}
		}
		parts = append(parts, info.Name+": "+strings.Join(groups, ", "))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// envHelp lists the environment variables openctl and its drivers read,
// wrapped for help texts.
func (a *app) envHelp() string {
	names := []string{"OPENCTL_HOME", "OPENCTL_STATE_DSN", "OPENCTL_STATE_PASSPHRASE", "OPENCTL_APPLY_CONCURRENCY"}
	for _, d := range a.opts.Drivers {
		for _, v := range d.Info().Env {
			names = append(names, v.Name)
		}
	}
	var b strings.Builder
	line := 0
	for i, n := range names {
		sep := ", "
		switch {
		case i == 0:
			sep = "  "
		case line+len(sep)+len(n) > 78:
			b.WriteString(",\n")
			sep, line = "  ", 0
		}
		b.WriteString(sep + n)
		line += len(sep) + len(n)
	}
	return b.String() + "."
}

// setup runs before every command: it checks the global flags and sets up
// logging.
func (a *app) setup() error {
	m, err := progress.ParseMode(a.progress)
	if err != nil {
		return &usageError{err: fmt.Errorf("--progress: %w", err)}
	}
	a.progress = string(m)
	if a.quiet {
		a.progress = string(progress.Quiet)
	}
	level := slog.LevelWarn
	switch {
	case a.verbose:
		level = slog.LevelDebug
	case a.quiet:
		level = slog.LevelError
	}
	a.log = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
	return nil
}

// note prints a one-line note on stderr unless --quiet.
func (a *app) note(format string, args ...any) {
	if a.quiet {
		return
	}
	fmt.Fprintf(a.stderr, format+"\n", args...)
}
