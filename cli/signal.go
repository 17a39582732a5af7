package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// interrupted is the cause of a context cancelled by SIGINT or SIGTERM. It
// matches context.Canceled.
type interrupted struct{ sig os.Signal }

func (e *interrupted) Error() string { return fmt.Sprintf("interrupted (%v)", e.sig) }

// Is reports true for context.Canceled, so that code checking for a
// cancelled context sees one.
func (e *interrupted) Is(target error) bool { return target == context.Canceled }

// exitCode is the shell's code for a process ended by the signal:
// 128 + its number (130 for SIGINT, 143 for SIGTERM).
func (e *interrupted) exitCode() int {
	if s, ok := e.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

// notifyContext returns a context cancelled, with an *interrupted cause,
// by the first SIGINT or SIGTERM. That first signal is announced on
// stderr; the work in flight is cancelled through the context, so the
// engine stops starting work, providers abandon their calls and the state
// lock is released. After it the signals have their default effect
// again, so a second Ctrl-C ends the process at once. stop releases the
// signal handler.
//
// SIGPIPE is ignored from then on: when standard output is a pipe whose
// reader went away ("openctl apply ... | head"), writes to it fail instead
// of killing the process in the middle of its work with the state lock
// held; the work goes on to its end.
func notifyContext(parent context.Context, stderr io.Writer) (ctx context.Context, stop func()) {
	signal.Ignore(syscall.SIGPIPE)
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			fmt.Fprintf(stderr, "\nopenctl: %v: cancelling the work in flight and releasing locks (press Ctrl-C again to quit at once)\n", s)
			cancel(&interrupted{sig: s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}
