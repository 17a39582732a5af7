package k3slite

import (
	"context"
	"fmt"

	"github.com/openctl/openctl/sandbox/vmhost"
)

func (n *Network) runTokenCmd(ctx context.Context, c *vmhost.Call, args []string, lookupEnv func(string) (string, bool)) int {
	fmt.Fprintln(c.Stderr, "k3s token: not implemented by the k3s sandbox yet")
	return 1
}

func (n *Network) runCertificateCmd(ctx context.Context, c *vmhost.Call, args []string, lookupEnv func(string) (string, bool)) int {
	fmt.Fprintln(c.Stderr, "k3s certificate: not implemented by the k3s sandbox yet")
	return 1
}
