package k3slite_test

import (
	"bytes"
	"context"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openctl/openctl/sandbox/k3slite"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// testOpts are quick timings for tests.
var testOpts = k3slite.NetworkOptions{
	PromoteDelay:      300 * time.Millisecond,
	HeartbeatInterval: 500 * time.Millisecond,
	PodSyncInterval:   100 * time.Millisecond,
}

func newNetwork(t *testing.T) *k3slite.Network {
	t.Helper()
	n := k3slite.NewNetwork(testOpts)
	t.Cleanup(func() { n.Close() })
	return n
}

// newHost makes a sandbox host with address addr on eth0, the k3s
// program registered and /usr/local/bin/k3s of version.
func newHost(t *testing.T, n *k3slite.Network, name, addr, version string) *vmhost.Host {
	t.Helper()
	h, err := vmhost.New(t.TempDir(), vmhost.Options{
		Hostname:  name,
		Init:      vmhost.InitSystemd,
		Addresses: []vmhost.Address{{Interface: "eth0", Prefix: netip.PrefixFrom(netip.MustParseAddr(addr), 16)}},
		Programs:  map[string]vmhost.Program{k3slite.ProgramPath: n.Program()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	install(t, h, version)
	return h
}

// install writes the k3s binary of version and the kubectl link.
func install(t *testing.T, h *vmhost.Host, version string) {
	t.Helper()
	run(t, h, "cat > /usr/local/bin/k3s.tmp && chmod 755 /usr/local/bin/k3s.tmp && mv -f /usr/local/bin/k3s.tmp /usr/local/bin/k3s && ln -sf k3s /usr/local/bin/kubectl", k3slite.Binary(version))
}

// run runs script on h as root; a non-zero status fails the test.
func run(t *testing.T, h *vmhost.Host, script string, stdin []byte) string {
	t.Helper()
	out, errOut, st := sh(h, script, stdin)
	if st != 0 {
		t.Fatalf("%s: %s: status %d: %s%s", h.Hostname(), script, st, out, errOut)
	}
	return out
}

func sh(h *vmhost.Host, script string, stdin []byte) (string, string, int) {
	var out, errOut bytes.Buffer
	st, err := h.Run(context.Background(), script, bytes.NewReader(stdin), &out, &errOut, nil, "root")
	if err != nil {
		return "", err.Error(), -1
	}
	return out.String(), errOut.String(), st
}

// syncBuffer is a log a program writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	ch chan struct{} // signalled on every write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	select {
	case s.ch <- struct{}{}:
	default:
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is k3s run as a service's main process: ready is closed when it
// notifies readiness, done receives its status.
type proc struct {
	h      *vmhost.Host
	cancel context.CancelFunc
	ready  chan struct{}
	done   chan int
	status int
	exited bool
	log    *syncBuffer
}

// start runs /usr/local/bin/k3s args as a Type=notify service would, with
// env (NAME=value).
func start(t *testing.T, n *k3slite.Network, h *vmhost.Host, env []string, args ...string) *proc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &proc{h: h, cancel: cancel, ready: make(chan struct{}), done: make(chan int, 1), log: &syncBuffer{ch: make(chan struct{}, 1)}}
	var once sync.Once
	c := (&vmhost.Call{
		Args:   append([]string{"/usr/local/bin/k3s"}, args...),
		Stdin:  strings.NewReader(""),
		Stdout: p.log,
		Stderr: p.log,
		Env:    append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"}, env...),
		Host:   h,
		User:   "root",
		Dir:    "/",
	}).WithService(&vmhost.ServiceHooks{Ready: func() { once.Do(func() { close(p.ready) }) }})
	prog := n.Program()
	go func() { p.done <- prog(ctx, c) }()
	t.Cleanup(func() { p.stop() })
	return p
}

// waitReady waits until p is ready; its exit first fails the test.
func (p *proc) waitReady(t *testing.T) {
	t.Helper()
	select {
	case <-p.ready:
	case st := <-p.done:
		p.exited, p.status = true, st
		t.Fatalf("%s: k3s exited with %d before ready:\n%s", p.h.Hostname(), st, p.log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: k3s not ready after 30s:\n%s", p.h.Hostname(), p.log.String())
	}
}

// wait waits for p to exit and returns its status.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	if p.exited {
		return p.status
	}
	select {
	case st := <-p.done:
		p.exited, p.status = true, st
		return st
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: k3s still running after 30s:\n%s", p.h.Hostname(), p.log.String())
		return -1
	}
}

// stop ends p as a service stop does and waits for it.
func (p *proc) stop() int {
	p.cancel()
	if !p.exited {
		p.status = <-p.done
		p.exited = true
	}
	return p.status
}

// waitLog waits until p's log holds s.
func (p *proc) waitLog(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(p.log.String(), s) {
		select {
		case <-p.log.ch:
		case <-deadline:
			t.Fatalf("%s: no %q in the log after 30s:\n%s", p.h.Hostname(), s, p.log.String())
		}
	}
}

// clientFor returns a client-go clientset from the kubeconfig k3s wrote on
// h, pointed at addr:6443.
func clientFor(t *testing.T, h *vmhost.Host, addr string) kubernetes.Interface {
	t.Helper()
	raw := run(t, h, "cat /etc/rancher/k3s/k3s.yaml", nil)
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Host = "https://" + addr + ":6443"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// eventually polls cond every 20 ms for up to 20 s; cond's last error
// fails the test.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
