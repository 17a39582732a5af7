package standin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openctl/openctl/internal/k3semu"
	"github.com/openctl/openctl/k3s/k3stest/standin"
)

// binary returns the stand-in binary: $K3S_STANDIN_BINARY, or one built now.
func binary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("K3S_STANDIN_BINARY"); p != "" {
		return p
	}
	if testing.Short() {
		t.Skip("standin: -short: not building the k3s stand-in (set K3S_STANDIN_BINARY)")
	}
	out := filepath.Join(t.TempDir(), "k3s")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./cmd/k3s")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", b)
	return out
}

func sha(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestVersionOverride(t *testing.T) {
	bin := binary(t)
	out, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	assert.Regexp(t, `^k3s version v1\.37\.2\+k3s1 \([0-9a-f]{8}\)\ngo version go1\.\d+`, string(out))

	dir := t.TempDir()
	next := filepath.Join(dir, "k3s")
	require.NoError(t, standin.WriteVersioned(bin, next, k3semu.Version{K3s: "v1.38.0+k3s1", Commit: "abcdef12"}))
	out, err = exec.Command(next, "--version").Output()
	require.NoError(t, err)
	assert.Equal(t, "k3s version v1.38.0+k3s1 (abcdef12)\ngo version "+runtime.Version()+"\n", string(out))
	assert.NotEqual(t, sha(t, bin), sha(t, next))

	// Re-versioning replaces the trailer rather than stacking one.
	again := filepath.Join(dir, "k3s-again")
	require.NoError(t, standin.WriteVersioned(next, again, k3semu.Version{K3s: "v1.37.2+k3s1"}))
	v, err := standin.ReadVersion(again)
	require.NoError(t, err)
	assert.Equal(t, "v1.37.2+k3s1", v.K3s)
	st1, _ := os.Stat(next)
	st2, _ := os.Stat(again)
	assert.InDelta(t, st1.Size(), st2.Size(), 16)
}

func TestServerClusterInit(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	kubeconfig := filepath.Join(dir, "k3s.yaml")
	port := freePort(t)

	notifyPath := filepath.Join(dir, "notify")
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyPath, Net: "unixgram"})
	require.NoError(t, err)
	defer notify.Close()

	var logs lockedBuffer
	cmd := exec.Command(bin, "server", "--cluster-init",
		"--data-dir", dataDir, "--bind-address", "127.0.0.1",
		"--https-listen-port", strconv.Itoa(port), "--token", "s3cret",
		"--tls-san", "k3s.example.test", "--node-name", "standin-0",
		"--write-kubeconfig", kubeconfig, "--write-kubeconfig-mode", "0640",
		"--standin-etcd-client-port", strconv.Itoa(freePort(t)),
		"--standin-etcd-peer-port", strconv.Itoa(freePort(t)),
		"--standin-node-password-file", filepath.Join(dir, "node-password"))
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+notifyPath)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	start := time.Now()
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	}()

	// READY=1 arrives on $NOTIFY_SOCKET once the API serves.
	ready := make(chan string, 1)
	go func() {
		buf := make([]byte, 256)
		notify.SetReadDeadline(time.Now().Add(3 * time.Minute))
		n, _, err := notify.ReadFrom(buf)
		if err == nil {
			ready <- string(buf[:n])
		}
		close(ready)
	}()
	select {
	case msg := <-ready:
		require.Equal(t, "READY=1", msg)
	case err := <-exited:
		t.Fatalf("server exited before ready: %v", err)
	}
	t.Logf("READY=1 after %s", time.Since(start).Round(time.Millisecond))

	// Kubeconfig: mode, names, server.
	st, err := os.Stat(kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), st.Mode().Perm())
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, "default", kc.CurrentContext)
	require.Contains(t, kc.Clusters, "default")
	require.Contains(t, kc.AuthInfos, "default")
	assert.Equal(t, "https://127.0.0.1:"+strconv.Itoa(port), kc.Clusters["default"].Server)

	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	client, err := kubernetes.NewForConfig(restCfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	require.NoError(t, err)
	assert.Equal(t, "ok", string(body))
	t.Logf("/readyz ok after %s", time.Since(start).Round(time.Millisecond))
	sv, err := client.Discovery().ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, "v1.37.2+k3s1", sv.GitVersion)

	// Token: K10<sha256 of the CA PEM>::server:<password>, 0600, links.
	caPEM, err := os.ReadFile(filepath.Join(dataDir, "server", "tls", "server-ca.crt"))
	require.NoError(t, err)
	tokenPath := filepath.Join(dataDir, "server", "token")
	tok, err := os.ReadFile(tokenPath)
	require.NoError(t, err)
	assert.Equal(t, k3semu.FormatToken(caPEM, "server", "s3cret")+"\n", string(tok))
	assert.Regexp(t, `^K10[0-9a-f]{64}::server:s3cret\n$`, string(tok))
	st, err = os.Stat(tokenPath)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	link, err := os.Readlink(filepath.Join(dataDir, "server", "node-token"))
	require.NoError(t, err)
	assert.Equal(t, tokenPath, link)

	// kubectl through the binary, as `k3s kubectl` and as `kubectl`.
	kubectl := func(name string, args ...string) string {
		t.Helper()
		c := exec.Command(name, args...)
		c.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		out, err := c.CombinedOutput()
		require.NoError(t, err, "%s %v: %s", name, args, out)
		return string(out)
	}
	out := kubectl(bin, "kubectl", "get", "nodes", "--no-headers")
	assert.Regexp(t, regexp.MustCompile(`^standin-0\s+Ready\s+control-plane,etcd,master\s+\S+\s+v1\.37\.2\+k3s1\n$`), out)
	link = filepath.Join(dir, "kubectl")
	require.NoError(t, os.Symlink(bin, link))
	out = kubectl(link, "get", "serviceaccount", "default", "-n", "default", "-o", "name")
	assert.Equal(t, "serviceaccount/default\n", out)

	if b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmRSS:") || strings.HasPrefix(l, "VmHWM:") {
				t.Log(strings.Join(strings.Fields(l), " "))
			}
		}
	}
	for _, line := range []string{"ETCD server is now running", "Kube API server is now running", "k3s is up and running"} {
		assert.Contains(t, logs.String(), line)
	}

	// SIGTERM: clean exit.
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "exit after SIGTERM")
	case <-time.After(60 * time.Second):
		t.Fatal("server did not exit within 60s of SIGTERM")
	}
}

// lockedBuffer is a bytes.Buffer safe for the process's writers and the test.
type lockedBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
