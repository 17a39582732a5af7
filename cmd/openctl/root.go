package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// run executes the command line args and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "openctl:", err)
		return 1
	}
	return 0
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "openctl",
		Short:         "Declarative infrastructure from Kubernetes-style manifests",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newSandboxCmd())
	return root
}
