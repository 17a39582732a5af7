package cli

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

// Options say what a CLI is made of.
type Options struct {
	// Name is the program's name in help and completion scripts; empty
	// means "openctl".
	Name string
	// Drivers are the providers compiled in, in the order their action
	// commands are listed. Each is opened only by the commands that need
	// it.
	Drivers []registry.Driver
	// Backends are the state stores the CLI can open by DSN
	// (state.dsn, OPENCTL_STATE_DSN, state migrate --to); without them
	// only the file store (file:DIR) is known.
	Backends []state.Backend
	// Commands are further top-level commands, e.g. a simulator server
	// of the program's own. They run after the global flags are parsed.
	Commands []*cobra.Command
	// Env reads the environment; nil means os.Getenv. Tests and embedders
	// set it to run the CLI with an environment of their own.
	Env func(string) string
}

// Main runs the command line of the process (os.Args) with opts, stops
// work in flight on SIGINT or SIGTERM (a second one quits at once), and
// exits with the code Run returns.
func Main(opts Options) {
	stderr := newSwitchWriter(os.Stderr)
	ctx, stop := notifyContext(context.Background(), stderr)
	code := run(ctx, opts, os.Args[1:], os.Stdin, os.Stdout, stderr)
	stop()
	os.Exit(code)
}

// Run executes the command line args (without the program name) and
// returns the process exit code (see the root command's help: 0 ok,
// 1 failure, 2 invalid input or usage, 130/143 interrupted). Cancelling
// ctx cancels the command the way Ctrl-C does when its cause is an
// interruption; Main sets that up.
func Run(ctx context.Context, opts Options, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(ctx, opts, args, stdin, stdout, newSwitchWriter(stderr))
}

// newApp returns the state one run shares.
func newApp(opts Options, stdin io.Reader, stdout io.Writer, stderr *switchWriter) (*app, error) {
	a := &app{opts: opts, stdin: stdin, stdout: stdout, stderr: stderr, env: opts.Env, log: slog.New(slog.DiscardHandler)}
	if err := a.backends.Register(state.FileBackend{}); err != nil {
		return nil, err
	}
	for _, b := range opts.Backends {
		if _, isFile := b.(state.FileBackend); isFile {
			continue
		}
		if err := a.backends.Register(b); err != nil {
			return nil, err
		}
	}
	return a, nil
}
