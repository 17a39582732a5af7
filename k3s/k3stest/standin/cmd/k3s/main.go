// Command k3s is the openctl k3s stand-in; see package standin.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/openctl/openctl/k3s/k3stest/standin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := standin.Main(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
