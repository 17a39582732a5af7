package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// tryLine is apply's suggestion for a K3s cluster.
var tryLine = regexp.MustCompile(`^Try: kubectl --kubeconfig (\S+) get nodes -o wide$`)

// TestApplyHold: `openctl apply --sandbox --hold` keeps the sandbox
// serving after the apply, and kubectl works against its cluster through
// the kubeconfig apply names — the real kubectl (the k3s stand-in's, as
// k3s embeds it) when $K3S_STANDIN_BINARY is set, as in make test, else
// client-go — until Ctrl-C ends it with status 0 and removes the
// sandbox's files.
func TestApplyHold(t *testing.T) {
	if testing.Short() {
		t.Skip("applies a whole cluster in the sandbox")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, os.Args[0], "apply", "--sandbox", "--hold", "-f", "../../examples/k3s-proxmox.yaml")
	cmd.Env = append(os.Environ(), "OPENCTL_TEST_MAIN=1", "TMPDIR="+dir, "HOME="+dir,
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	kubeconfig := make(chan string, 1)
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			out.WriteString(lines.Text() + "\n")
			if m := tryLine.FindStringSubmatch(lines.Text()); m != nil {
				kubeconfig <- m[1]
			}
		}
		close(kubeconfig)
		done <- cmd.Wait()
	}()
	path, ok := <-kubeconfig
	require.True(t, ok, "no kubectl line")

	if bin := os.Getenv("K3S_STANDIN_BINARY"); bin != "" {
		kubectl := filepath.Join(t.TempDir(), "kubectl")
		require.NoError(t, os.Symlink(bin, kubectl))
		run := func(args ...string) string {
			b, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", path}, args...)...).CombinedOutput()
			require.NoError(t, err, "kubectl %s: %s", strings.Join(args, " "), b)
			return string(b)
		}
		assert.Regexp(t, `(?m)^dev-cp-0 +Ready +control-plane,etcd,master .* 127\.[0-9]+\.1\.50 `, run("get", "nodes", "-o", "wide"))
		assert.Contains(t, run("cordon", "dev-worker-1"), "node/dev-worker-1 cordoned")
		assert.Contains(t, run("drain", "dev-worker-1", "--ignore-daemonsets"), "node/dev-worker-1 drained")
		assert.Regexp(t, `(?m)^dev-worker-1 +Ready,SchedulingDisabled `, run("get", "nodes"))
	} else {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		rc, err := clientcmd.RESTConfigFromKubeConfig(b)
		require.NoError(t, err)
		cs, err := kubernetes.NewForConfig(rc)
		require.NoError(t, err)
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, nodes.Items, 5)
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					assert.Equal(t, corev1.ConditionTrue, c.Status, n.Name)
				}
			}
		}
	}

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-done:
		require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out.String(), stderr.String())
	case <-ctx.Done():
		t.Fatal("apply --hold did not end after SIGINT")
	}
	assert.Contains(t, stderr.String(), "openctl: --hold: the sandbox keeps serving; stop it with Ctrl-C")
	assert.NoFileExists(t, path, "the sandbox's files are removed at the end")
}
