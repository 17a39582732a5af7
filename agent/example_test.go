package agent_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/node"
	"github.com/openctl/openctl/agent/pki"
)

// exampleHost is a minimal node.System: a k3s server that is running.
type exampleHost struct{}

func (exampleHost) Facts(context.Context) (agent.Facts, error) {
	return agent.Facts{Hostname: "dev-cp-0", OS: "linux", Arch: "arm64", Kernel: "6.6.0", Distro: "Alpine Linux v3.20", Init: agent.OpenRC}, nil
}
func (exampleHost) Role(context.Context) (agent.Role, error)           { return agent.RoleServer, nil }
func (exampleHost) ServiceState(context.Context) (string, error)       { return agent.StateActive, nil }
func (exampleHost) Service(context.Context, agent.ServiceAction) error { return nil }
func (exampleHost) Logs(_ context.Context, n int, w io.Writer) error {
	_, err := fmt.Fprintf(w, "k3s is fine (%d lines asked)\n", n)
	return err
}
func (h exampleHost) FollowLogs(ctx context.Context, n int, w io.Writer) error {
	return h.Logs(ctx, n, w)
}
func (exampleHost) K3sBinary() string { return "/usr/local/bin/k3s" }
func (exampleHost) K3sVersion(context.Context, string) (string, error) {
	return "v1.31.2+k3s1", nil
}

// A node agent and the controller's client, over mutual TLS with a
// per-cluster CA.
func Example() {
	ctx := context.Background()

	// Once per cluster (the controller keeps these).
	ca, _ := pki.NewCA("openctl dev CA")
	nodeLeaf, _ := ca.IssueServer("dev-cp-0", []net.IP{net.IPv4(127, 0, 0, 1)})
	controller, _ := ca.IssueClient(pki.ControllerName)
	bundle := pki.NewBundle(ca.Cert).PEM()
	nodeKey, _ := nodeLeaf.KeyPEM()
	controllerKey, _ := controller.KeyPEM()

	// On the node: /etc/openctl-agent/{ca.pem,server.pem,server.key}.
	srv, err := node.NewServer(node.ServerConfig{
		CABundle: bundle, CertPEM: nodeLeaf.CertPEM(), KeyPEM: nodeKey,
		System: exampleHost{}, // node.HostSystem on a real node
	})
	if err != nil {
		panic(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ln)
	defer srv.Shutdown(ctx)

	// On the controller.
	c, err := agent.NewClient(agent.ClientConfig{
		Address:  ln.Addr().String(),
		CABundle: bundle, CertPEM: controller.CertPEM(), KeyPEM: controllerKey,
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	info, err := c.Info(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Hostname, info.Arch, info.Init, info.Role, info.ServiceState, info.K3sVersion)
	fmt.Println(info.Capabilities)
	_ = c.Logs(ctx, 20, os.Stdout)
	// Output:
	// dev-cp-0 arm64 openrc server active v1.31.2+k3s1
	// [info logs logs-follow service upgrade upgrade-rollback]
	// k3s is fine (20 lines asked)
}

func ExampleValidateK3sVersion() {
	for _, v := range []string{"v1.31.2+k3s1", "v1.31.2+k3s1;reboot", "v1.31.2%2Bk3s1"} {
		fmt.Println(v, agent.ValidateK3sVersion(v) == nil)
	}
	// Output:
	// v1.31.2+k3s1 true
	// v1.31.2+k3s1;reboot false
	// v1.31.2%2Bk3s1 false
}
