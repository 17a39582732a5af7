package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Runner runs the host programs a [HostSystem] needs (systemctl, journalctl,
// rc-service, k3s --version). Programs are always run directly with an
// argument vector, never through a shell.
//
// [ExecRunner] is the real implementation; tests pass a fake so that they
// run unprivileged and never touch the host's services. Implementations must
// be safe for concurrent use.
type Runner interface {
	// Run runs name with args and returns what it wrote to standard output.
	// A program that ran and exited with a non-zero status yields its
	// standard output together with an *[ExitError].
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
	// Stream runs name with args and copies its standard output to w as it
	// is produced, without buffering it. A non-zero exit yields an
	// *[ExitError].
	Stream(ctx context.Context, w io.Writer, name string, args ...string) error
}

// ExitError reports that a program ran and exited with a non-zero status.
// [HostSystem] uses the status and the output to tell "the service is
// inactive" (systemctl is-active exits 3) from "systemctl failed".
type ExitError struct {
	Cmd    string // the program and its arguments, for messages
	Code   int    // the exit status; -1 if the program was killed by a signal
	Signal string // the signal that killed it ("segmentation fault"); "" if it exited
	Stderr string // the start of what the program wrote to standard error
}

// Error describes the command, its status or the signal that killed it,
// and its standard error.
func (e *ExitError) Error() string {
	msg := fmt.Sprintf("agent: %s: exit status %d", e.Cmd, e.Code)
	if e.Signal != "" {
		msg = fmt.Sprintf("agent: %s: killed by signal: %s", e.Cmd, e.Signal)
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

// Output limits of [ExecRunner].
const (
	maxRunOutput = 1 << 20 // standard output kept by Run
	maxStderr    = 4 << 10 // standard error kept in an ExitError
)

// ExecRunner is the [Runner] that runs host programs with os/exec. Programs
// run with the agent's environment plus LC_ALL=C, so that their output is
// not localised. The zero value is ready to use and safe for concurrent use.
type ExecRunner struct{}

var _ Runner = ExecRunner{}

// Run implements [Runner]. At most 1 MiB of standard output is kept.
func (ExecRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	var stdout headWriter
	stdout.max = maxRunOutput
	err := runCmd(ctx, &stdout, name, args)
	return stdout.buf.Bytes(), err
}

// Stream implements [Runner].
func (ExecRunner) Stream(ctx context.Context, w io.Writer, name string, args ...string) error {
	return runCmd(ctx, w, name, args)
}

func runCmd(ctx context.Context, stdout io.Writer, name string, args []string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Stdout = stdout
	stderr := headWriter{max: maxStderr}
	cmd.Stderr = &stderr
	// A child that leaves a grandchild holding its pipes open must not
	// hang the request once the child itself has gone.
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if err == nil {
		return nil
	}
	desc := strings.Join(append([]string{name}, args...), " ")
	if ee, ok := errors.AsType[*exec.ExitError](err); ok && ctx.Err() == nil {
		xe := &ExitError{Cmd: desc, Code: ee.ExitCode(), Stderr: stderr.buf.String()}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			xe.Signal = ws.Signal().String()
		}
		return xe
	}
	if ctx.Err() != nil {
		return fmt.Errorf("agent: %s: %w", desc, ctx.Err())
	}
	return fmt.Errorf("agent: %s: %w", desc, err)
}

// headWriter keeps the first max bytes written to it and discards the rest,
// so a chatty program cannot exhaust the agent's memory.
type headWriter struct {
	buf bytes.Buffer
	max int
}

// Write keeps what fits and reports everything written.
func (w *headWriter) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
