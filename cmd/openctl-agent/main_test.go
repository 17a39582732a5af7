package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/node"
	"github.com/openctl/openctl/agent/pki"
)

// TestMain lets the test binary stand in for openctl-agent: the serving
// tests re-execute it with OPENCTL_AGENT_TEST_MAIN=1, so the process under
// test is a real one that receives real signals, driving a fake System
// instead of the host's services.
func TestMain(m *testing.M) {
	if os.Getenv("OPENCTL_AGENT_TEST_MAIN") == "1" {
		os.Exit(run(context.Background(), testVersion, os.Args[1:], os.Stdout, os.Stderr, fakeSystemFactory))
	}
	os.Exit(m.Run())
}

// testVersion is the version the agent under test reports.
const testVersion = "v0.0.0-test"

func fakeSystemFactory() (node.System, error) { return fakeSystem{}, nil }

// fakeSystem is a host with k3s v1.30.2+k3s1 running as a server.
type fakeSystem struct{}

func (fakeSystem) Facts(context.Context) (agent.Facts, error) {
	return agent.Facts{Hostname: "test-node", OS: "linux", Arch: "amd64", Kernel: "6.1.0", Distro: "Test Linux 1", Init: agent.Systemd}, nil
}
func (fakeSystem) Role(context.Context) (agent.Role, error)           { return agent.RoleServer, nil }
func (fakeSystem) ServiceState(context.Context) (string, error)       { return agent.StateActive, nil }
func (fakeSystem) Service(context.Context, agent.ServiceAction) error { return nil }
func (f fakeSystem) FollowLogs(ctx context.Context, n int, w io.Writer) error {
	return f.Logs(ctx, n, w)
}

func (fakeSystem) Logs(_ context.Context, n int, w io.Writer) error {
	for i := range n {
		if _, err := fmt.Fprintf(w, "log line %d\n", i+1); err != nil {
			return err
		}
	}
	return nil
}
func (fakeSystem) K3sBinary() string { return "/usr/local/bin/k3s" }
func (fakeSystem) K3sVersion(context.Context, string) (string, error) {
	return "v1.30.2+k3s1", nil
}

// creds is a cluster CA with a server certificate for 127.0.0.1 and a
// client certificate, written to dir as ca.pem, server.pem and server.key.
type creds struct {
	dir    string
	ca     *pki.CA
	client *pki.Leaf
}

func newCreds(t *testing.T, dir string) creds {
	t.Helper()
	ca, err := pki.NewCA("openctl test CA")
	require.NoError(t, err)
	srv, err := ca.IssueServer("test-node", []net.IP{net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	cli, err := ca.IssueClient(pki.ControllerName)
	require.NoError(t, err)
	key, err := srv.KeyPEM()
	require.NoError(t, err)
	require.NoError(t, pki.WriteFiles(dir, map[string][]byte{
		pki.CACertFile:     pki.NewBundle(ca.Cert).PEM(),
		pki.ServerCertFile: srv.CertPEM(),
		pki.ServerKeyFile:  key,
	}))
	return creds{dir: dir, ca: ca, client: cli}
}

func (c creds) args() []string {
	return []string{
		"--ca", filepath.Join(c.dir, pki.CACertFile),
		"--cert", filepath.Join(c.dir, pki.ServerCertFile),
		"--key", filepath.Join(c.dir, pki.ServerKeyFile),
	}
}

// httpClient trusts c's CA and presents c's client certificate (none if
// withCert is false).
func (c creds) httpClient(withCert bool) *http.Client {
	cfg := &tls.Config{RootCAs: pki.NewBundle(c.ca.Cert).Pool(), MinVersion: tls.VersionTLS13}
	if withCert {
		cfg.Certificates = []tls.Certificate{c.client.TLSCertificate()}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
}

// agentProc is an openctl-agent process under test.
type agentProc struct {
	cmd  *exec.Cmd
	addr string
	done chan error // receives the result of Wait

	mu     sync.Mutex // guards stderr
	stderr bytes.Buffer
	lines  chan string // every stderr line, as it arrives
}

// startAgent starts the agent on 127.0.0.1:0 and waits until it logs that
// it is serving.
func startAgent(t *testing.T, args ...string) *agentProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	p := &agentProc{done: make(chan error, 1), lines: make(chan string, 1000)}
	p.cmd = exec.CommandContext(ctx, os.Args[0], append([]string{"--listen", "127.0.0.1:0"}, args...)...)
	p.cmd.Env = append(os.Environ(), "OPENCTL_AGENT_TEST_MAIN=1")
	pipe, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default: // nobody is waiting for lines right now
			}
		}
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	line := p.waitLog(t, "openctl-agent: serving")
	var entry struct {
		Addr    string `json:"addr"`
		Version string `json:"version"`
	}
	require.NoError(t, json.Unmarshal([]byte(line), &entry), line)
	require.NotEmpty(t, entry.Addr)
	assert.Equal(t, testVersion, entry.Version)
	p.addr = entry.Addr
	return p
}

// waitLog waits for a JSON log line whose msg is msg and returns it.
func (p *agentProc) waitLog(t *testing.T, msg string) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line := <-p.lines:
			var entry struct {
				Msg string `json:"msg"`
			}
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == msg {
				return line
			}
		case err := <-p.done:
			p.done <- err
			t.Fatalf("agent exited (%v) before logging %q; stderr:\n%s", err, msg, p.Stderr())
		case <-timeout:
			t.Fatalf("agent did not log %q; stderr:\n%s", msg, p.Stderr())
		}
	}
}

func (p *agentProc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// wait waits for the process to exit and returns its exit status.
func (p *agentProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-p.done:
		if err != nil {
			ee, ok := err.(*exec.ExitError)
			require.True(t, ok, "%v", err)
			return ee.ExitCode()
		}
		return 0
	case <-time.After(40 * time.Second):
		t.Fatalf("agent did not exit; stderr:\n%s", p.Stderr())
		return -1
	}
}

func getInfo(c *http.Client, addr string) (*agent.Info, error) {
	resp, err := c.Get("https://" + addr + "/v1/info")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET /v1/info: %s: %s", resp.Status, b)
	}
	var info agent.Info
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		return nil, err
	}
	return &info, nil
}

func TestServeAndStop(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			c := newCreds(t, t.TempDir())
			p := startAgent(t, c.args()...)

			info, err := getInfo(c.httpClient(true), p.addr)
			require.NoError(t, err)
			assert.Equal(t, "test-node", info.Hostname)
			assert.Equal(t, agent.Systemd, info.Init)
			assert.Equal(t, agent.RoleServer, info.Role)
			assert.Equal(t, "v1.30.2+k3s1", info.K3sVersion)
			assert.Equal(t, agent.StateActive, info.ServiceState)
			assert.Equal(t, testVersion, info.AgentVersion)

			_, err = getInfo(c.httpClient(false), p.addr)
			require.Error(t, err, "a client without a certificate is refused")

			require.NoError(t, p.cmd.Process.Signal(sig))
			assert.Equal(t, 0, p.wait(t), p.Stderr())
			stderr := p.Stderr()
			assert.Contains(t, stderr, `"msg":"openctl-agent: shutting down"`)
			assert.Contains(t, stderr, `"msg":"openctl-agent: stopped"`)
			for line := range strings.Lines(stderr) {
				assert.True(t, json.Valid([]byte(line)), "every stderr line is JSON: %s", line)
			}
		})
	}
}

// TestReloadOnSIGHUP rotates the node to a new CA: after SIGHUP the agent
// presents the new server certificate and accepts only the new CA's
// clients; an invalid file on a later SIGHUP keeps the credentials.
func TestReloadOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	old := newCreds(t, dir)
	p := startAgent(t, old.args()...)
	_, err := getInfo(old.httpClient(true), p.addr)
	require.NoError(t, err)

	rotated := newCreds(t, dir) // overwrites the files with a new CA's
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	p.waitLog(t, "openctl-agent: credentials reloaded")
	_, err = getInfo(rotated.httpClient(true), p.addr)
	require.NoError(t, err)
	_, err = getInfo(old.httpClient(true), p.addr)
	require.Error(t, err, "the old CA was rotated out")

	require.NoError(t, os.WriteFile(filepath.Join(dir, pki.CACertFile), []byte("not PEM"), 0o600))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	p.waitLog(t, "openctl-agent: credentials not reloaded, keeping the old ones")
	_, err = getInfo(rotated.httpClient(true), p.addr)
	require.NoError(t, err)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, p.wait(t))
}

func TestRunFailures(t *testing.T) {
	dir := t.TempDir()
	c := newCreds(t, dir)
	missing := filepath.Join(dir, "nope", "server.pem")
	garbage := filepath.Join(dir, "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("-----BEGIN NOTHING-----\n"), 0o600))
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	args := func(extra ...string) []string { return append(c.args(), extra...) }
	otherKey := filepath.Join(newCreds(t, t.TempDir()).dir, pki.ServerKeyFile)

	tests := []struct {
		name       string
		args       []string
		system     func() (node.System, error)
		wantStatus int
		wantStderr []string
	}{
		{"missing cert file", args("--cert", missing), nil, 2, []string{"--cert file", missing, "no such file or directory"}},
		{"missing ca file", args("--ca", missing), nil, 2, []string{"--ca file", missing}},
		{"missing key file", args("--key", missing), nil, 2, []string{"--key file", missing}},
		{"invalid ca file", args("--ca", garbage), nil, 2, []string{"CA bundle"}},
		{"key of another certificate", args("--key", otherKey), nil, 2, []string{"invalid configuration", otherKey}},
		{"invalid release URL", args("--release-url", "ftp://example.com/k3s"), nil, 2, []string{"release URL"}},
		{"zero health timeout", args("--health-timeout", "0s"), nil, 2, []string{"--health-timeout 0s: must be positive"}},
		{"malformed health timeout", args("--health-timeout", "soon"), nil, 2, []string{`invalid value "soon" for flag -health-timeout`}},
		{"unknown flag", args("--nope"), nil, 2, []string{"flag provided but not defined: -nope", "Usage of openctl-agent"}},
		{"unexpected argument", args("serve"), nil, 2, []string{`unexpected argument "serve"`}},
		{"no init system", args(), func() (node.System, error) { return nil, node.ErrNoInit }, 1, []string{"no supported init system"}},
		{"address in use", args("--listen", busy.Addr().String()), nil, 1, []string{"cannot listen", "address already in use"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys := tt.system
			if sys == nil {
				sys = fakeSystemFactory
			}
			var stdout, stderr bytes.Buffer
			got := run(t.Context(), testVersion, tt.args, &stdout, &stderr, sys)
			assert.Equal(t, tt.wantStatus, got, stderr.String())
			for _, s := range tt.wantStderr {
				assert.Contains(t, stderr.String(), s)
			}
			assert.Empty(t, stdout.String())
		})
	}
}

func TestRunVersionAndHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 0, run(t.Context(), testVersion, []string{"--version"}, &stdout, &stderr, nil))
	assert.Equal(t, testVersion+"\n", stdout.String())
	assert.Empty(t, stderr.String())

	stdout.Reset()
	assert.Equal(t, 0, run(t.Context(), testVersion, []string{"--help"}, &stdout, &stderr, nil))
	for _, f := range []string{"-listen", "-ca", "-cert", "-key", "-release-url", "-health-timeout", "-version", "/etc/openctl-agent/server.key", `":9443"`} {
		assert.Contains(t, stderr.String(), f)
	}
}

// TestRunStopsWithContext serves in process until the context is
// cancelled, as an embedder's supervisor would.
func TestRunStopsWithContext(t *testing.T) {
	c := newCreds(t, t.TempDir())
	ctx, cancel := context.WithCancel(t.Context())
	var stderr syncBuffer
	status := make(chan int, 1)
	go func() {
		status <- run(ctx, testVersion, append(c.args(), "--listen", "127.0.0.1:0"), io.Discard, &stderr, fakeSystemFactory)
	}()
	stderr.waitFor(t, "openctl-agent: serving", 30*time.Second)
	cancel()
	select {
	case s := <-status:
		assert.Equal(t, 0, s, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return")
	}
}

// syncBuffer is a concurrency-safe buffer that signals every write, so a
// test can wait for a line without polling on a timer.
type syncBuffer struct {
	mu      sync.Mutex // guards b
	b       bytes.Buffer
	written chan struct{} // receives (without blocking the writer) after each write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == nil {
		s.written = make(chan struct{}, 1)
	}
	n, err := s.b.Write(p)
	select {
	case s.written <- struct{}{}:
	default: // a signal is already pending
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until the buffer contains substr, failing t after timeout.
func (s *syncBuffer) waitFor(t *testing.T, substr string, timeout time.Duration) {
	t.Helper()
	s.mu.Lock()
	if s.written == nil {
		s.written = make(chan struct{}, 1)
	}
	written := s.written
	s.mu.Unlock()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !strings.Contains(s.String(), substr) {
		select {
		case <-written:
		case <-deadline.C:
			t.Fatalf("%q not written within %v: %s", substr, timeout, s.String())
		}
	}
}
