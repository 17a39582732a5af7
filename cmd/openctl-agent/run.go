package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/openctl/openctl/agent/node"
)

// run is the whole program: node.Command with the process's signals —
// SIGINT or SIGTERM end it (a second one kills the process at once),
// SIGHUP re-reads the credentials. It returns the exit status. version
// is the agent's version; newSystem builds the System the agent drives
// (tests pass a fake).
func run(ctx context.Context, version string, args []string, stdout, stderr io.Writer, newSystem func() (node.System, error)) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reload := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				select {
				case reload <- struct{}{}:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return node.Command{Version: version, Stdout: stdout, Stderr: stderr, NewSystem: newSystem, Reload: reload}.Run(ctx, args)
}
