package kubeconfig_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/internal/testenv"
	"github.com/openctl/openctl/k3s/kubeconfig"
)

// TestStandin runs the whole kubeconfig step against the real
// kube-apiserver of the k3s stand-in (k3s/k3stest/standin, built by `make
// standin` into bin/k3s-standin and named by $K3S_STANDIN_BINARY): the
// k3s.yaml it writes is rewritten to its address on 127.0.0.N and the name
// "lab", merged into a kubeconfig file, and the cluster is checked through
// it with Ready and Nodes.
func TestStandin(t *testing.T) {
	bin := os.Getenv("K3S_STANDIN_BINARY")
	if bin == "" {
		testenv.Unavailable(t, "kubeconfig: K3S_STANDIN_BINARY is not set: run `make standin` and set K3S_STANDIN_BINARY=$PWD/bin/k3s-standin (make test does both) to test against the real kube-apiserver")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("K3S_STANDIN_BINARY: %v", err)
	}
	version := standinVersion(t, bin)

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	s := startStandin(ctx, t, bin)

	// The kubeconfig k3s writes: "default" everywhere, 127.0.0.N, 0600.
	assert.Equal(t, os.FileMode(0o600), mode(t, s.kubeconfig))
	raw := loadConfig(t, s.raw)
	assert.Equal(t, "default", raw.CurrentContext)
	require.Contains(t, raw.Clusters, "default")
	assert.Equal(t, s.url, raw.Clusters["default"].Server)

	kc, err := kubeconfig.Rewrite(s.raw, s.url, "lab")
	require.NoError(t, err)
	cfg := loadConfig(t, kc)
	clusters, users, contexts := keys(cfg)
	assert.Equal(t, []string{"lab"}, clusters)
	assert.Equal(t, []string{"lab"}, users)
	assert.Equal(t, []string{"lab"}, contexts)
	assert.Equal(t, raw.Clusters["default"].CertificateAuthorityData, cfg.Clusters["lab"].CertificateAuthorityData)

	// Into a user's kubeconfig that has another cluster, then used from
	// there: the file is what a user's kubectl would read.
	home := filepath.Join(t.TempDir(), ".kube", "config")
	require.NoError(t, kubeconfig.Merge(t.Context(), home, oneCluster(t, "prod", "https://prod.example:6443")))
	require.NoError(t, kubeconfig.Merge(t.Context(), home, kc))
	merged, err := os.ReadFile(home)
	require.NoError(t, err)
	mcfg := loadConfig(t, merged)
	assert.Equal(t, "prod", mcfg.CurrentContext)
	mcfg.CurrentContext = "lab"
	cl, err := kubeconfig.Client(encode(t, mcfg))
	require.NoError(t, err)
	assert.Equal(t, s.url, cl.Server())

	// The apiserver may still be starting: poll /readyz until "ok".
	require.NoError(t, poll(ctx, s, func() error { return cl.Ready(ctx) }), "Ready")

	// The Node registers after the apiserver is ready: poll until it is.
	var nodes []kubeconfig.Node
	require.NoError(t, poll(ctx, s, func() error {
		var err error
		if nodes, err = cl.Nodes(ctx); err != nil {
			return err
		}
		if len(nodes) == 0 || !nodes[0].Ready {
			return errcode.New(errcode.Transient, fmt.Sprintf("kubeconfig: node n1 not ready yet: %+v", nodes))
		}
		return nil
	}), "Nodes")
	require.Len(t, nodes, 1)
	n := nodes[0]
	assert.Equal(t, "n1", n.Name)
	assert.True(t, n.Ready)
	assert.Equal(t, []string{"control-plane", "etcd", "master"}, n.Roles)
	assert.Equal(t, version, n.KubeletVersion)
	assert.Equal(t, s.ip, n.InternalIP)
	assert.False(t, n.Unschedulable)
	// The apiserver's admission adds node.kubernetes.io/not-ready at
	// registration, and no node controller runs in the stand-in to lift it.
	assert.Contains(t, n.Taints, "dedicated=lab:NoSchedule")

	// The same kubeconfig expecting a name the serving certificate does not
	// hold (an address missing from --tls-san) is refused for good.
	badCfg := loadConfig(t, kc)
	badCfg.Clusters["lab"].TLSServerName = "not-in-the-sans.example"
	bc, err := kubeconfig.Client(encode(t, badCfg))
	require.NoError(t, err)
	requireCode(t, bc.Ready(ctx), errcode.Invalid)
}

// standinVersion returns the version the binary reports, which its Node
// gives as kubeletVersion.
func standinVersion(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	m := regexp.MustCompile(`^k3s version (v\S+) `).FindSubmatch(out)
	require.NotNil(t, m, "k3s --version: %s", out)
	return string(m[1])
}

// standin is a running `k3s server --cluster-init`.
type standin struct {
	ip, url    string
	port       int
	kubeconfig string
	raw        []byte        // the kubeconfig as written
	exited     chan struct{} // closed when the process has exited
	logs       *lockedBuffer
}

// startStandin starts the stand-in on a random 127.0.0.N with free ports
// and returns once its kubeconfig is written; it is stopped with SIGTERM
// at the end of the test. A start that loses a port race (a free port
// taken before the server binds it) is tried again.
func startStandin(ctx context.Context, t *testing.T, bin string) *standin {
	t.Helper()
	var lastLog string
	for range 3 {
		s, err := tryStart(ctx, t, bin)
		if err == nil {
			return s
		}
		lastLog = s.logs.String()
		if !strings.Contains(lastLog, "address already in use") {
			t.Fatalf("k3s stand-in: %v\n%s", err, lastLog)
		}
		t.Logf("k3s stand-in lost a port race, starting again: %v", err)
	}
	t.Fatalf("k3s stand-in did not start:\n%s", lastLog)
	return nil
}

func tryStart(ctx context.Context, t *testing.T, bin string) (*standin, error) {
	dir := t.TempDir()
	s := &standin{
		ip:         fmt.Sprintf("127.0.0.%d", 2+rand.IntN(250)),
		kubeconfig: filepath.Join(dir, "k3s.yaml"),
		exited:     make(chan struct{}),
		logs:       &lockedBuffer{},
	}
	s.port = freePort(t, s.ip)
	s.url = "https://" + net.JoinHostPort(s.ip, strconv.Itoa(s.port))
	cmd := exec.Command(bin, "server", "--cluster-init",
		"--bind-address", s.ip, "--https-listen-port", strconv.Itoa(s.port),
		"--data-dir", filepath.Join(dir, "data"), "--write-kubeconfig", s.kubeconfig,
		"--standin-etcd-client-port", strconv.Itoa(freePort(t, "127.0.0.1")),
		"--standin-etcd-peer-port", strconv.Itoa(freePort(t, "127.0.0.1")),
		"--node-name", "n1", "--node-taint", "dedicated=lab:NoSchedule",
		// Not the machine's /etc/rancher/node/password: this runs outside
		// the test hosts.
		"--standin-node-password-file", filepath.Join(dir, "node-password"))
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		return s, err
	}
	go func() { cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			t.Errorf("k3s stand-in still running 30s after SIGTERM; killed")
			cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("k3s stand-in log:\n%s", s.logs.String())
		}
	})

	// Wait for a complete kubeconfig: one that decodes with its server set
	// (the file may be seen before it is fully written).
	err := poll(ctx, s, func() error {
		b, err := os.ReadFile(s.kubeconfig)
		if err != nil {
			return errcode.Wrap(errcode.Transient, "kubeconfig: not written yet", err)
		}
		if _, err := kubeconfig.Rewrite(b, s.url, "probe"); err != nil {
			return errcode.Wrap(errcode.Transient, "kubeconfig: not complete yet", err)
		}
		s.raw = b
		return nil
	})
	return s, err
}

// poll calls f until it returns nil, backing off from 20ms to 1s; it stops
// at a non-Transient error, when the stand-in exits, or when ctx ends.
func poll(ctx context.Context, s *standin, f func() error) error {
	delay := 20 * time.Millisecond
	for {
		err := f()
		if err == nil || !errcode.Retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up: %w (last: %w)", ctx.Err(), err)
		case <-s.exited:
			return fmt.Errorf("k3s stand-in exited (last: %w)", err)
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// freePort returns a TCP port free on ip right now.
func freePort(t *testing.T, ip string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		testenv.Unavailable(t, "kubeconfig: cannot listen on %s (127.0.0.0/8 is all loopback on Linux): %v", ip, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// lockedBuffer collects the stand-in's output from its two pipes.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
