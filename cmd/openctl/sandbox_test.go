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
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/cli"
)

func TestSandbox(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { testSandbox(t, sig) })
	}
}

func testSandbox(t *testing.T, sig syscall.Signal) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "sandbox", "--listen", "127.0.0.1:0", "--nodes", "2", "--seed", "7", "--speed", "10")
	cmd.Env = append(os.Environ(), "OPENCTL_TEST_MAIN=1", "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	first := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		if lines.Scan() {
			first <- lines.Text()
		}
		close(first)
		for lines.Scan() {
			t.Errorf("unexpected extra stdout line: %s", lines.Text())
		}
		done <- cmd.Wait()
	}()
	exited := false
	defer func() {
		if !exited {
			_ = cmd.Process.Kill()
			<-done
		}
	}()

	var line string
	select {
	case l, ok := <-first:
		require.True(t, ok, "no JSON line on stdout")
		line = l
	case <-ctx.Done():
		t.Fatal("sandbox printed nothing")
	}

	var info map[string]string
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&info), line)
	assert.ElementsMatch(t, []string{"url", "tokenId", "tokenSecret", "fingerprint"}, keys(info))
	assert.Regexp(t, `^https://127\.0\.0\.1:[1-9][0-9]*/api2/json$`, info["url"])
	assert.Regexp(t, `^[^@]+@[^!]+![A-Za-z][A-Za-z0-9._-]*$`, info["tokenId"])
	assert.NotEmpty(t, info["tokenSecret"])
	assert.Regexp(t, `^([0-9A-F]{2}:){31}[0-9A-F]{2}$`, info["fingerprint"])

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
		exited = true
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
	var info sandboxInfo
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

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
