package node_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent/agenttest"
	"github.com/openctl/openctl/agent/node"
	"github.com/openctl/openctl/agent/pki"
)

// TestCommandHooks: a Command reads its credentials through ReadFile,
// listens through Listen and re-reads the credentials on Reload — how a
// sandbox runs the agent inside a simulated host.
func TestCommandHooks(t *testing.T) {
	ca, err := pki.NewCA("openctl test CA")
	require.NoError(t, err)
	srv, err := ca.IssueServer("node-1", []net.IP{net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	key, err := srv.KeyPEM()
	require.NoError(t, err)
	files := map[string][]byte{"/h/ca.pem": pki.NewBundle(ca.Cert).PEM(), "/h/server.pem": srv.CertPEM(), "/h/server.key": key}
	var mu sync.Mutex
	var read []string
	readFile := func(p string) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		read = append(read, p)
		return files[p], nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var asked string
	listen := func(network, addr string) (net.Listener, error) { asked = network + " " + addr; return ln, nil }
	reload := make(chan struct{})
	var stderr agenttest.LogBuffer
	cmd := node.Command{
		Version: "v9", Stderr: &stderr, ReadFile: readFile, Listen: listen, Reload: reload,
		NewSystem: func() (node.System, error) { return agenttest.NewSystem(t), nil },
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() {
		done <- cmd.Run(ctx, []string{"--listen", ":9443", "--ca", "/h/ca.pem", "--cert", "/h/server.pem", "--key", "/h/server.key"})
	}()
	reload <- struct{}{} // taken once the command serves
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "credentials reloaded") }, 30*time.Second, 5*time.Millisecond)
	cancel()
	assert.Equal(t, 0, <-done, stderr.String())
	assert.Equal(t, "tcp :9443", asked)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"/h/ca.pem", "/h/server.pem", "/h/server.key", "/h/ca.pem", "/h/server.pem", "/h/server.key"}, read)
}
