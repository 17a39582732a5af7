package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/cli"
	"github.com/openctl/openctl/sandbox"
)

func TestSandbox(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { testSandbox(t, sig) })
	}
}

// sandboxProcess is `openctl sandbox` running as a process.
type sandboxProcess struct {
	cmd    *exec.Cmd
	info   sandbox.ServerInfo
	stderr *bytes.Buffer
	done   chan error
	exited bool
}

// startSandbox runs `openctl sandbox args...` and waits for its JSON
// line; the process is killed at the end of the test unless it exited.
func startSandbox(t *testing.T, ctx context.Context, args ...string) *sandboxProcess {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"sandbox"}, args...)...)
	cmd.Env = append(os.Environ(), "OPENCTL_TEST_MAIN=1", "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	p := &sandboxProcess{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	first := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		if lines.Scan() {
			first <- lines.Text()
		}
		close(first)
		for lines.Scan() {
			t.Errorf("unexpected extra stdout line: %s", lines.Text())
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if !p.exited {
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	var line string
	select {
	case l, ok := <-first:
		require.True(t, ok, "no JSON line on stdout")
		line = l
	case <-ctx.Done():
		t.Fatal("sandbox printed nothing")
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&p.info), line)
	return p
}

func testSandbox(t *testing.T, sig syscall.Signal) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	p := startSandbox(t, ctx, "--listen", "127.0.0.1:0", "--nodes", "2", "--seed", "7", "--speed", "10")
	cmd, stderr, done := p.cmd, p.stderr, p.done
	info := map[string]string{"url": p.info.URL, "tokenId": p.info.TokenID, "tokenSecret": p.info.TokenSecret, "fingerprint": p.info.Fingerprint}
	assert.Regexp(t, `^https://127\.0\.0\.1:[1-9][0-9]*/api2/json$`, info["url"])
	assert.Regexp(t, `^[^@]+@[^!]+![A-Za-z][A-Za-z0-9._-]*$`, info["tokenId"])
	assert.NotEmpty(t, info["tokenSecret"])
	assert.Regexp(t, `^([0-9A-F]{2}:){31}[0-9A-F]{2}$`, info["fingerprint"])
	assert.Regexp(t, `^http://127\.0\.0\.1:[0-9]+$`, p.info.K3s.ReleaseURL)
	assert.Equal(t, 2222, p.info.K3s.SSHPort)
	assert.FileExists(t, p.info.K3s.IdentityFile)
	assert.Regexp(t, `^127\.[0-9]+\.0\.0/16$`, p.info.K3s.AddressMap)

	client := pinnedClient(info["fingerprint"])
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, info["url"]+"/version", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", fmt.Sprintf("PVEAPIToken=%s=%s", info["tokenId"], info["tokenSecret"]))
	resp, err := client.Do(req)
	require.NoError(t, err)
	var body struct {
		Data map[string]any `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.NotEmpty(t, body.Data["version"])

	// --nodes 2: pve1 and pve2.
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, info["url"]+"/nodes", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", fmt.Sprintf("PVEAPIToken=%s=%s", info["tokenId"], info["tokenSecret"]))
	resp, err = client.Do(req)
	require.NoError(t, err)
	var nodes struct {
		Data []struct {
			Node string `json:"node"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&nodes))
	_ = resp.Body.Close()
	var names []string
	for _, n := range nodes.Data {
		names = append(names, n.Node)
	}
	assert.ElementsMatch(t, []string{"pve1", "pve2"}, names)

	// A client pinned to another fingerprint must not get through.
	_, err = pinnedClient(strings.Repeat("00:", 31) + "00").Get(info["url"] + "/version")
	assert.Error(t, err)

	require.NoError(t, cmd.Process.Signal(sig))
	select {
	case err := <-done:
		p.exited = true
		assert.NoError(t, err, "exit after %v; stderr: %s", sig, stderr.String())
		assert.Contains(t, stderr.String(), info["url"], "stderr tells a human where it serves")
		assert.Equal(t, 0, cmd.ProcessState.ExitCode())
	case <-ctx.Done():
		t.Fatalf("sandbox did not exit after %v", sig)
	}
}

// TestSandboxFaultFlags runs the command in-process: the fault flags reach
// the simulator, and cancelling the context stops it with exit code 0.
func TestSandboxFaultFlags(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		c := cli.Run(runCtx, options(), []string{"sandbox", "--listen", "127.0.0.1:0", "--nodes", "1",
			"--fault-error-rate", "1", "--fault-routes", "GET /nodes"}, strings.NewReader(""), pw, &stderr)
		_ = pw.Close()
		code <- c
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	var info sandbox.ServerInfo
	require.NoError(t, json.Unmarshal([]byte(line), &info))
	client := pinnedClient(info.Fingerprint)
	get := func(path string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, info.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "PVEAPIToken="+info.TokenID+"="+info.TokenSecret)
		resp, err := client.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, get("/version"))
	assert.Equal(t, http.StatusInternalServerError, get("/nodes"))

	stop()
	select {
	case c := <-code:
		assert.Equal(t, 0, c, stderr.String())
	case <-ctx.Done():
		t.Fatal("sandbox did not stop when its context ended")
	}
}

func TestSandboxFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"sandbox", "--nodes", "0"},
		{"sandbox", "--speed", "0"},
		{"sandbox", "--fault-error-rate", "2"},
		{"sandbox", "--listen", "nonsense"},
		{"sandbox", "extra"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := cli.Run(t.Context(), options(), args, strings.NewReader(""), &out, &errOut)
			assert.Equal(t, 2, code, "invalid flags are usage errors")
			assert.Empty(t, out.String())
			assert.True(t, strings.HasPrefix(errOut.String(), "openctl: "), errOut.String())
		})
	}
}

// pinnedClient trusts exactly the certificate with this SHA-256
// fingerprint, the way a user would configure a Proxmox client.
func pinnedClient(fp string) *http.Client {
	want := strings.ReplaceAll(fp, ":", "")
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, // verified by fingerprint below
			VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
				if len(raw) > 0 && fmt.Sprintf("%X", sha256.Sum256(raw[0])) == want {
					return nil
				}
				return errors.New("certificate fingerprint mismatch")
			},
		}},
	}
}

// TestSandboxK3sFromAnotherProcess is README's CI recipe for clusters: an
// `openctl sandbox` process, and openctl run with the configuration it
// wrote (--config-out) plans, applies, re-plans and deletes the K3s
// example on it — the K3s provider reaching the simulated VMs' hosts over
// SSH with the sandbox's key, port and address map.
func TestSandboxK3sFromAnotherProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("applies a whole cluster")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ci.yaml")
	startSandbox(t, ctx, "--listen", "127.0.0.1:0", "--speed", "10", "--config-out", cfg)
	st, err := os.Stat(cfg)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	env := map[string]string{"OPENCTL_HOME": filepath.Join(dir, "home"), "OPENCTL_STATE_PASSPHRASE": "ci", "HOME": filepath.Join(dir, "user")}
	opts := options()
	opts.Env = func(k string) string { return env[k] }
	run := func(args ...string) (int, string) {
		var out bytes.Buffer
		code := cli.Run(ctx, opts, append([]string{"--config", cfg}, args...), strings.NewReader(""), &out, &out)
		return code, out.String()
	}
	example := "../../examples/k3s-proxmox.yaml"
	code, out := run("plan", "--detailed-exitcode", "-f", example)
	require.Equal(t, 2, code, out)
	code, out = run("apply", "-f", example)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Apply complete: 11 created")
	assert.Regexp(t, `dev +Ready +v1\.37\.2\+k3s1 +https://127\.[0-9]+\.1\.49:6443 +5/5`, out)
	code, out = run("plan", "--detailed-exitcode", "-f", example)
	assert.Equal(t, 0, code, "converged: %s", out)
	code, out = run("delete", "-f", example)
	assert.Equal(t, 0, code, out)
	assert.NoDirExists(t, filepath.Join(dir, "user", ".kube"), "the user's kubeconfig is not touched")
}
