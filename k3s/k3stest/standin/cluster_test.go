package standin_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
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
)

// cluster runs stand-in nodes of one test on their own loopback addresses
// 127.A.B.x (random A and B), each with the default ports 6443, 2379 and
// 2380, its own data dir, kubeconfig, node password file and notify
// socket.
type cluster struct {
	t      *testing.T
	bin    string
	dir    string
	prefix string // "127.A.B."
	mu     sync.Mutex
	nodes  []*proc
}

// proc is one stand-in process.
type proc struct {
	name   string
	ip     string
	dir    string
	cmd    *exec.Cmd
	logs   *lockedBuffer
	ready  chan struct{} // closed on READY=1
	exited chan struct{} // closed when the process has exited
	err    error         // Wait's result, once exited is closed
}

func newCluster(t *testing.T) *cluster {
	c := &cluster{t: t, bin: binary(t), dir: t.TempDir(),
		prefix: fmt.Sprintf("127.%d.%d.", 1+rand.IntN(250), 1+rand.IntN(250))}
	t.Cleanup(c.stopAll)
	return c
}

func (c *cluster) addr(i int) string { return c.prefix + strconv.Itoa(i) }

// start runs `k3s <args>` as node name on address 127.A.B.i.
func (c *cluster) start(name string, i int, args ...string) *proc {
	t := c.t
	t.Helper()
	p := &proc{name: name, ip: c.addr(i), dir: filepath.Join(c.dir, fmt.Sprintf("%s-%d", name, i)), logs: &lockedBuffer{},
		ready: make(chan struct{}), exited: make(chan struct{})}
	require.NoError(t, os.MkdirAll(p.dir, 0o700))
	notifyPath := filepath.Join(p.dir, "notify")
	os.Remove(notifyPath) // a restarted node's
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyPath, Net: "unixgram"})
	require.NoError(t, err)
	args = append(args, "--data-dir", filepath.Join(p.dir, "data"), "--node-name", name,
		"--standin-node-password-file", filepath.Join(p.dir, "password"))
	if args[0] == "server" {
		args = append(args, "--bind-address", p.ip, "--write-kubeconfig", filepath.Join(p.dir, "k3s.yaml"))
	} else {
		args = append(args, "--node-ip", p.ip)
	}
	p.cmd = exec.Command(c.bin, args...)
	p.cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+notifyPath)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
		notify.Close()
	}()
	go func() {
		buf := make([]byte, 64)
		n, _, err := notify.ReadFrom(buf)
		if err == nil && string(buf[:n]) == "READY=1" {
			close(p.ready)
		}
	}()
	c.mu.Lock()
	c.nodes = append(c.nodes, p)
	c.mu.Unlock()
	return p
}

// stopAll sends SIGTERM to every node still running, all at once, and
// kills those not gone within 30 s; on failure it prints their logs.
func (c *cluster) stopAll() {
	c.mu.Lock()
	nodes := c.nodes
	c.mu.Unlock()
	for _, p := range nodes {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	expired := false
	for _, p := range nodes {
		if !expired {
			select {
			case <-p.exited:
				continue
			case <-deadline.C:
				expired = true
			}
		}
		p.cmd.Process.Kill()
		<-p.exited
	}
	if c.t.Failed() {
		for _, p := range nodes {
			c.t.Logf("---- %s log (last 6000 bytes):\n%s", p.name, tail(p.logs.String(), 6000))
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// waitReady waits for READY=1; the process exiting first is a failure.
func (p *proc) waitReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-p.ready:
	case <-p.exited:
		t.Fatalf("%s exited before READY=1: %v\n%s", p.name, p.err, tail(p.logs.String(), 4000))
	case <-time.After(timeout):
		t.Fatalf("%s not ready within %s\n%s", p.name, timeout, tail(p.logs.String(), 4000))
	}
}

// waitExit waits for the process to exit and returns its log.
func (p *proc) waitExit(t *testing.T, timeout time.Duration) (exitCode int, log string) {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		t.Fatalf("%s still running after %s\n%s", p.name, timeout, tail(p.logs.String(), 4000))
	}
	return p.cmd.ProcessState.ExitCode(), p.logs.String()
}

// waitLog waits until the log holds re at least n times.
func (p *proc) waitLog(t *testing.T, re *regexp.Regexp, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for len(re.FindAllString(p.logs.String(), -1)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q not logged %d times within %s\n%s", p.name, re, n, timeout, tail(p.logs.String(), 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *proc) kubeconfig() string { return filepath.Join(p.dir, "k3s.yaml") }
func (p *proc) url() string        { return "https://" + p.ip + ":6443" }

func (p *proc) token(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dir, "data", "server", "token"))
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

func (p *proc) rssKB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/status")
	require.NoError(t, err)
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	require.NotNil(t, m)
	kb, _ := strconv.Atoi(string(m[1]))
	return kb
}

// kubectl runs `k3s kubectl` with server's kubeconfig.
func (c *cluster) kubectl(server *proc, args ...string) (string, error) {
	cmd := exec.Command(c.bin, append([]string{"kubectl"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+server.kubeconfig())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c *cluster) mustKubectl(server *proc, args ...string) string {
	c.t.Helper()
	out, err := c.kubectl(server, args...)
	require.NoError(c.t, err, "kubectl %v: %s", args, out)
	return out
}

// eventually runs kubectl args against server until ok(output) holds.
func (c *cluster) eventually(server *proc, d time.Duration, what string, ok func(string) bool, args ...string) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		out, err := c.kubectl(server, args...)
		if err == nil && ok(out) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not within %s (last: %q, %v)", what, d, out, err)
		}
		time.Sleep(time.Second)
	}
}

// supervisorGet fetches path from server's https port, verified against
// the cluster CA, with Basic auth when user is not empty.
func supervisorGet(t *testing.T, server *proc, path, user, pw string) (int, string) {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(server.dir, "data", "server", "tls", "server-ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequest(http.MethodGet, server.url()+path, nil)
	require.NoError(t, err)
	if user != "" {
		req.SetBasicAuth(user, pw)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestHACluster forms a 3-server + 2-agent cluster the way the provider
// will (servers joined one at a time, agents in parallel), then checks
// nodes, roles, versions, etcd membership, leases, the supervisor routes,
// drain, the refusals k3s gives (node password, CA hash, bad password) and
// a server restart on its existing datastore.
func TestHACluster(t *testing.T) {
	c := newCluster(t)
	start := time.Now()
	grace := "--standin-node-monitor-grace-period=15s"
	s1 := c.start("server-1", 1, "server", "--cluster-init", "--token", "s3cret", grace)
	s1.waitReady(t, 2*time.Minute)
	t.Logf("server-1 ready after %s", time.Since(start).Round(time.Millisecond))
	token := s1.token(t)
	s2 := c.start("server-2", 2, "server", "--server", s1.url(), "--token", token, grace)
	s2.waitReady(t, 2*time.Minute)
	t.Logf("server-2 ready after %s", time.Since(start).Round(time.Millisecond))
	s3 := c.start("server-3", 3, "server", "--server", s2.url(), "--token", token, grace)
	s3.waitReady(t, 2*time.Minute)
	t.Logf("server-3 ready after %s", time.Since(start).Round(time.Millisecond))
	a1 := c.start("agent-1", 11, "agent", "--server", s1.url(), "--token", token)
	a2 := c.start("agent-2", 12, "agent", "--server", s3.url(), "--token", token)
	a1.waitReady(t, time.Minute)
	a2.waitReady(t, time.Minute)
	formation := time.Since(start)
	t.Logf("3 servers + 2 agents ready after %s", formation.Round(time.Millisecond))
	assert.Less(t, formation, 60*time.Second)

	rss := 0
	for _, p := range []*proc{s1, s2, s3, a1, a2} {
		kb := p.rssKB(t)
		t.Logf("%s RSS %d MB", p.name, kb/1024)
		rss += kb
	}
	t.Logf("total RSS %d MB", rss/1024)
	assert.Less(t, rss/1024, 2500)

	// Nodes: 5 Ready, roles, versions; through any server.
	out := c.mustKubectl(s3, "get", "nodes", "--no-headers")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 5, out)
	for _, l := range lines {
		f := strings.Fields(l)
		require.Len(t, f, 5, l)
		assert.Equal(t, "Ready", f[1], l)
		if strings.HasPrefix(f[0], "server-") {
			assert.Equal(t, "control-plane,etcd,master", f[2], l)
		} else {
			assert.Equal(t, "<none>", f[2], l)
		}
		assert.Equal(t, "v1.37.2+k3s1", f[4], l)
	}
	out = c.mustKubectl(s1, "get", "lease", "-n", "kube-node-lease", "-o", "name")
	assert.ElementsMatch(t, []string{"lease.coordination.k8s.io/server-1", "lease.coordination.k8s.io/server-2",
		"lease.coordination.k8s.io/server-3", "lease.coordination.k8s.io/agent-1", "lease.coordination.k8s.io/agent-2"},
		strings.Fields(out))
	out = c.mustKubectl(s1, "get", "secret", "-n", "kube-system", "-o", "name")
	for _, n := range []string{"server-1", "server-2", "server-3", "agent-1", "agent-2"} {
		assert.Contains(t, out, "secret/"+n+".node-password.k3s")
	}

	// etcd: three voting members.
	code, body := supervisorGet(t, s2, "/db/info", "server", "s3cret")
	require.Equal(t, http.StatusOK, code, body)
	var info struct {
		Members []struct {
			Name      string `json:"name"`
			IsLearner bool   `json:"isLearner"`
		} `json:"members"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &info))
	require.Len(t, info.Members, 3, body)
	for _, m := range info.Members {
		assert.False(t, m.IsLearner, body)
		assert.Regexp(t, `^server-[123]-[0-9a-f]{8}$`, m.Name)
	}

	// Supervisor routes.
	code, body = supervisorGet(t, s3, "/ping", "", "")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "pong", body)
	caPEM, err := os.ReadFile(filepath.Join(s1.dir, "data", "server", "tls", "server-ca.crt"))
	require.NoError(t, err)
	_, body = supervisorGet(t, s3, "/cacerts", "", "")
	assert.Equal(t, string(caPEM), body)
	code, body = supervisorGet(t, s2, "/v1-k3s/readyz", "node", "s3cret")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)
	code, _ = supervisorGet(t, s2, "/v1-k3s/server-bootstrap", "node", "s3cret")
	assert.Equal(t, http.StatusForbidden, code)
	code, _ = supervisorGet(t, s2, "/v1-k3s/server-bootstrap", "server", "wrong")
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = supervisorGet(t, s2, "/readyz", "", "")
	assert.Equal(t, http.StatusUnauthorized, code, "the apiserver runs with anonymous-auth=false")
	assert.Equal(t, "ok", c.mustKubectl(s2, "get", "--raw", "/readyz"))

	// Drain an agent: a bare pod and a ReplicaSet's pod bound to it.
	manifest := `apiVersion: v1
kind: Pod
metadata: {name: bare, namespace: default}
spec: {nodeName: agent-1, containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: Pod
metadata: {name: bare-2, namespace: default}
spec: {nodeName: agent-1, containers: [{name: c, image: busybox}]}
`
	f := filepath.Join(c.dir, "pods.yaml")
	require.NoError(t, os.WriteFile(f, []byte(manifest), 0o600))
	c.mustKubectl(s1, "apply", "-f", f)
	c.mustKubectl(s1, "wait", "--for=jsonpath={.status.phase}=Running", "pod/bare", "pod/bare-2", "--timeout=30s")
	drainStart := time.Now()
	out = c.mustKubectl(s1, "drain", "agent-1", "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=60s")
	t.Logf("drain took %s", time.Since(drainStart).Round(time.Millisecond))
	assert.Contains(t, out, "node/agent-1 drained")
	out = c.mustKubectl(s1, "get", "pods", "-n", "default", "-o", "name")
	assert.Empty(t, strings.TrimSpace(out))
	out = c.mustKubectl(s1, "get", "node", "agent-1", "-o", "jsonpath={.spec.unschedulable}")
	assert.Equal(t, "true", out)

	// An agent that stops heartbeating turns NotReady (Unknown) with the
	// unreachable taints once its Lease is older than the grace period
	// (15 s here); back, it is Ready and untainted.
	require.NoError(t, a1.cmd.Process.Kill())
	<-a1.exited
	killed := time.Now()
	c.eventually(s1, 60*time.Second, "agent-1 NotReady", func(out string) bool {
		return out == "Unknown node.kubernetes.io/unreachable:NoSchedule node.kubernetes.io/unreachable:NoExecute "
	}, "get", "node", "agent-1", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}{range .spec.taints[*]} {.key}:{.effect}{end} `)
	t.Logf("agent-1 NotReady %s after it stopped", time.Since(killed).Round(time.Second))
	out = c.mustKubectl(s1, "get", "node", "agent-1", "--no-headers")
	assert.Regexp(t, `^agent-1\s+NotReady,SchedulingDisabled\s`, out)
	a1b := c.start("agent-1", 11, "agent", "--server", s1.url(), "--token", token)
	a1b.waitReady(t, time.Minute)
	c.eventually(s1, 30*time.Second, "agent-1 Ready again", func(out string) bool { return out == "True " },
		"get", "node", "agent-1", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}{range .spec.taints[*]} {.key}:{.effect}{end} `)

	// Same node name, other node password: refused until the Node goes.
	dup := c.start("agent-2", 13, "agent", "--server", s1.url(), "--token", token)
	dup.waitLog(t, regexp.MustCompile(regexp.QuoteMeta(`level=info msg="Waiting to retrieve agent configuration; server is not ready: Node password rejected, duplicate hostname or contents of '/etc/rancher/node/password' may not match server node-passwd entry, try enabling a unique node name with the --with-node-id flag"`)), 1, 30*time.Second)
	s1.waitLog(t, regexp.MustCompile(`Node password validation failed for 'agent-2'`), 1, 10*time.Second)

	// Agents with a wrong CA hash or password retry every 2 s.
	hash := token[3:67]
	wrongHash := strings.Repeat("0", 64)
	badCA := c.start("agent-badca", 14, "agent", "--server", s1.url(), "--token", "K10"+wrongHash+token[67:])
	badPW := c.start("agent-badpw", 15, "agent", "--server", s1.url(), "--token", "K10"+hash+"::server:wrong")
	badCA.waitLog(t, regexp.MustCompile(regexp.QuoteMeta(`level=error msg="token CA hash does not match the Cluster CA certificate hash: `+wrongHash+` != `+hash+`"`)), 2, 20*time.Second)
	badPW.waitLog(t, regexp.MustCompile(regexp.QuoteMeta(`level=error msg="token is not valid: `+s1.url()+`/v1-k3s/readyz: 401 Unauthorized"`)), 2, 20*time.Second)
	for _, p := range []*proc{dup, badCA, badPW} {
		select {
		case <-p.ready:
			t.Errorf("%s became ready", p.name)
		case <-p.exited:
			t.Errorf("%s exited: %v", p.name, p.err)
		default:
		}
	}
	retries := regexp.MustCompile(`time=(\S+) level=error msg="token CA hash`).FindAllStringSubmatch(badCA.logs.String(), -1)
	if len(retries) >= 2 {
		t0, err0 := time.Parse(time.RFC3339, retries[0][1])
		t1, err1 := time.Parse(time.RFC3339, retries[1][1])
		if err0 == nil && err1 == nil {
			assert.InDelta(t, 2, t1.Sub(t0).Seconds(), 1.01, "retry interval")
		}
	}

	// Servers with a wrong password or CA hash: FATA and exit 1.
	x1 := c.start("server-badpw", 21, "server", "--server", s1.url(), "--token", "K10"+hash+"::server:wrong")
	codeX, logX := x1.waitExit(t, time.Minute)
	assert.Equal(t, 1, codeX)
	assert.Contains(t, logX, `level=fatal msg="starting kubernetes: preparing server: `+s1.url()+`/v1-k3s/server-bootstrap: 401 Unauthorized"`)
	x2 := c.start("server-badca", 22, "server", "--server", s1.url(), "--token", "K10"+wrongHash+token[67:])
	codeX, logX = x2.waitExit(t, time.Minute)
	assert.Equal(t, 1, codeX)
	assert.Contains(t, logX, `level=fatal msg="starting kubernetes: preparing server: failed to validate token: token CA hash does not match the Cluster CA certificate hash: `+wrongHash+` != `+hash+`"`)
	s1.waitLog(t, regexp.MustCompile(`Failed to authenticate request from \S+: invalid username/password combination`), 1, 10*time.Second)
	x3 := c.start("server-2", 23, "server", "--server", s1.url(), "--token", token)
	codeX, logX = x3.waitExit(t, time.Minute)
	assert.Equal(t, 1, codeX)
	assert.Contains(t, logX, `level=fatal msg="starting kubernetes: preparing server: start managed database: joining etcd cluster: Failed to join etcd cluster due to duplicate node names, please use unique node name for the server"`)

	// Restart a joined server: the datastore on disk wins over --server.
	require.NoError(t, s2.cmd.Process.Signal(syscall.SIGTERM))
	code2, _ := s2.waitExit(t, time.Minute)
	assert.Equal(t, 0, code2)
	s2b := c.start("server-2", 2, "server", "--server", s1.url(), "--token", token, grace)
	s2b.waitReady(t, 2*time.Minute)
	assert.Contains(t, s2b.logs.String(), "Managed etcd cluster bootstrap already complete and initialized")
	assert.NotContains(t, s2b.logs.String(), "as a learner")
	out = c.mustKubectl(s2b, "get", "nodes", "--no-headers")
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 5, out)

	// Deleting a server's Node removes its etcd member and node-password
	// secret; that server's etcd stops and k3s exits, and keeps exiting
	// until its database is deleted.
	c.mustKubectl(s1, "delete", "node", "server-3")
	code3, log3 := s3.waitExit(t, time.Minute)
	assert.Equal(t, 1, code3)
	assert.Contains(t, log3, `level=fatal msg="etcd member stopped: it was removed from the etcd cluster`)
	_, body = supervisorGet(t, s1, "/db/info", "server", "s3cret")
	require.NoError(t, json.Unmarshal([]byte(body), &info))
	assert.Len(t, info.Members, 2, body)
	out = c.mustKubectl(s1, "get", "secret", "-n", "kube-system", "-o", "name")
	assert.NotContains(t, out, "server-3.node-password.k3s")
	s3b := c.start("server-3", 3, "server", "--server", s1.url(), "--token", token)
	code3, _ = s3b.waitExit(t, time.Minute)
	assert.Equal(t, 1, code3)

	// agent-2 joined through server-3: its load balancer moves to another
	// server and its Lease keeps being renewed.
	gone := time.Now()
	c.eventually(s1, 40*time.Second, "agent-2's Lease renewed after server-3 left", func(out string) bool {
		renewed, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(out))
		return err == nil && renewed.After(gone)
	}, "get", "lease", "-n", "kube-node-lease", "agent-2", "-o", "jsonpath={.spec.renewTime}")
	assert.Contains(t, a2.logs.String(), "Load balancer k3s-agent-load-balancer now uses server ")

	// The last server of a cluster that lost its quorum still stops
	// promptly on SIGTERM (it waited 40 s, its watches spinning on
	// "etcdserver: no leader", before the waits were bounded).
	require.NoError(t, s2b.cmd.Process.Signal(syscall.SIGTERM))
	code2, _ = s2b.waitExit(t, time.Minute)
	assert.Equal(t, 0, code2)
	require.NoError(t, s1.cmd.Process.Signal(syscall.SIGTERM))
	code1, log1 := s1.waitExit(t, 20*time.Second)
	assert.Equal(t, 0, code1, "%s", tail(log1, 4000))
}

// TestParallelJoinAndAgentToken: a second server joining while the first
// joiner is still an etcd learner fails with etcd's own error, logs FATA
// and exits 1; the first joiner completes. The cluster has a separate
// agent token (--agent-token): server/agent-token holds it, agents join
// with it or with the server token, the joined server (started without
// --agent-token) takes it from the cluster, and it cannot join a server.
// Joiners with other critical values are refused.
func TestParallelJoinAndAgentToken(t *testing.T) {
	c := newCluster(t)
	s1 := c.start("server-1", 1, "server", "--cluster-init", "--token", "s3cret", "--agent-token", "a9ent")
	s1.waitReady(t, 2*time.Minute)
	token := s1.token(t)
	serverDir := filepath.Join(s1.dir, "data", "server")
	agentToken, err := os.ReadFile(filepath.Join(serverDir, "agent-token"))
	require.NoError(t, err)
	assert.Equal(t, "K10"+token[3:67]+"::node:a9ent\n", string(agentToken))
	st, err := os.Lstat(filepath.Join(serverDir, "agent-token"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode(), "a file, not a link to token")
	link, err := os.Readlink(filepath.Join(serverDir, "node-token"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(serverDir, "token"), link)

	s2 := c.start("server-2", 2, "server", "--server", s1.url(), "--token", token)
	s2.waitLog(t, regexp.MustCompile(`to etcd cluster as a learner`), 1, time.Minute)
	s3 := c.start("server-3", 3, "server", "--server", s1.url(), "--token", token)
	code, log := s3.waitExit(t, time.Minute)
	assert.Equal(t, 1, code)
	assert.Contains(t, log, `level=fatal msg="starting kubernetes: preparing server: start managed database: joining etcd cluster: etcdserver: too many learner members in cluster"`)
	s2.waitReady(t, 2*time.Minute)

	a1 := c.start("agent-1", 11, "agent", "--server", s2.url(), "--token", strings.TrimSpace(string(agentToken)))
	a2 := c.start("agent-2", 12, "agent", "--server", s1.url(), "--token", token)
	bad := c.start("agent-bad", 13, "agent", "--server", s1.url(), "--token", "K10"+token[3:67]+"::node:s3cret")
	a1.waitReady(t, time.Minute)
	a2.waitReady(t, time.Minute)
	bad.waitLog(t, regexp.MustCompile(regexp.QuoteMeta(`level=error msg="token is not valid: `+s1.url()+`/v1-k3s/readyz: 401 Unauthorized"`)), 1, 20*time.Second)
	x := c.start("server-x", 4, "server", "--server", s1.url(), "--token", strings.TrimSpace(string(agentToken)))
	code, log = x.waitExit(t, time.Minute)
	assert.Equal(t, 1, code)
	assert.Contains(t, log, `/v1-k3s/server-bootstrap: 401 Unauthorized"`)

	// Critical values that differ from the cluster's: each is warned
	// about, then the join fails before touching etcd.
	y := c.start("server-y", 5, "server", "--server", s1.url(), "--token", token,
		"--cluster-cidr", "10.99.0.0/16", "--disable", "traefik,servicelb", "--agent-token", "a9ent")
	z := c.start("server-z", 6, "server", "--server", s1.url(), "--token", token, "--agent-token", "other")
	fatal := `level=fatal msg="starting kubernetes: preparing server: failed to bootstrap cluster data: failed to validate server configuration: critical configuration value mismatch between servers"`
	code, log = y.waitExit(t, time.Minute)
	assert.Equal(t, 1, code)
	assert.Contains(t, log, `level=warning msg="critical configuration mismatched: cluster-cidr"`)
	assert.Contains(t, log, `level=warning msg="critical configuration mismatched: disable-servicelb"`)
	assert.NotContains(t, log, `mismatched: agent-token`)
	assert.Contains(t, log, fatal)
	code, log = z.waitExit(t, time.Minute)
	assert.Equal(t, 1, code)
	assert.Contains(t, log, `level=warning msg="critical configuration mismatched: agent-token"`)
	assert.Contains(t, log, fatal)

	out := c.mustKubectl(s1, "get", "nodes", "--no-headers")
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 4, out)
}
