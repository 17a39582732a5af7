package standin_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
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
)

// k3s runs `k3s <args>` (a command that exits) and returns its stdout
// and stderr.
func (c *cluster) k3s(args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(c.bin, args...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// supervisorBearer fetches path from server's https port with a Bearer
// token (a bootstrap token).
func supervisorBearer(t *testing.T, server *proc, path, token string) (int, string) {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(server.dir, "data", "server", "tls", "server-ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequest(http.MethodGet, server.url()+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestBootstrapTokensAndRotate: `k3s token create` stores a kubeadm-style
// bootstrap token and prints it in K10 form; an agent joins with it (the
// supervisor takes it as Bearer, for agent routes only); expired, deleted
// and unknown tokens get 401 like a bad password; a server refuses one as
// its --token. `k3s token rotate` changes the server token cluster-wide:
// a new server joins with the new token, the old one is refused, a
// rotation through another server reaches the first, and a server
// restarted with an old --token refuses to start.
func TestBootstrapTokensAndRotate(t *testing.T) {
	c := newCluster(t)
	s1 := c.start("server-1", 1, "server", "--cluster-init", "--token", "s3cret")
	s1.waitReady(t, 2*time.Minute)
	serverToken := s1.token(t)
	hash := serverToken[3:67]

	// create
	out, errOut, err := c.k3s("token", "create", "--kubeconfig", s1.kubeconfig(), "--ttl", "1h", "--description", "for agents")
	require.NoError(t, err, errOut)
	m := regexp.MustCompile(`^K10` + hash + `::(([a-z0-9]{6})\.[a-z0-9]{16})\n$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	bootstrap, id := m[1], m[2]
	secJSON := c.mustKubectl(s1, "get", "secret", "-n", "kube-system", "bootstrap-token-"+id, "-o", "json")
	var sec struct {
		Type string            `json:"type"`
		Data map[string][]byte `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(secJSON), &sec))
	assert.Equal(t, "bootstrap.kubernetes.io/token", sec.Type)
	assert.Equal(t, id, string(sec.Data["token-id"]))
	assert.Equal(t, bootstrap[7:], string(sec.Data["token-secret"]))
	assert.Equal(t, "true", string(sec.Data["usage-bootstrap-authentication"]))
	assert.Equal(t, "true", string(sec.Data["usage-bootstrap-signing"]))
	assert.Equal(t, "system:bootstrappers:k3s:default-node-token", string(sec.Data["auth-extra-groups"]))
	assert.Equal(t, "for agents", string(sec.Data["description"]))
	exp, err := time.Parse(time.RFC3339, string(sec.Data["expiration"]))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(time.Hour), exp, time.Minute)
	_, errOut, err = c.k3s("token", "create", "--kubeconfig", s1.kubeconfig(), bootstrap)
	require.Error(t, err)
	assert.Contains(t, errOut, `level=fatal msg="a token with id \"`+id+`\" already exists"`)

	// list
	out, errOut, err = c.k3s("token", "list", "--kubeconfig", s1.kubeconfig())
	require.NoError(t, err, errOut)
	assert.Regexp(t, `(?m)^TOKEN\s+TTL\s+EXPIRES\s+USAGES\s+DESCRIPTION\s+EXTRA GROUPS$`, out)
	assert.Regexp(t, `(?m)^`+id+`\s+(59m|60m)\s+\S+\s+authentication,signing\s+for agents\s+system:bootstrappers:k3s:default-node-token$`, out)

	// An agent joins with it; it is an agent's credential only.
	a1 := c.start("agent-1", 11, "agent", "--server", s1.url(), "--token", strings.TrimSpace(m[0]))
	a1.waitReady(t, time.Minute)
	c.eventually(s1, 30*time.Second, "agent-1 Ready", func(out string) bool { return out == "True" },
		"get", "node", "agent-1", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
	code, body := supervisorBearer(t, s1, "/v1-k3s/readyz", bootstrap)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)
	for _, path := range []string{"/v1-k3s/server-bootstrap", "/db/info", "/v1-k3s/config"} {
		code, _ = supervisorBearer(t, s1, path, bootstrap)
		assert.Equal(t, http.StatusForbidden, code, path)
	}

	// Unknown, expired and deleted tokens: 401, logged like a bad password.
	code, _ = supervisorBearer(t, s1, "/v1-k3s/readyz", "zzzzzz.0123456789abcdef")
	assert.Equal(t, http.StatusUnauthorized, code)
	out, errOut, err = c.k3s("token", "create", "--kubeconfig", s1.kubeconfig(), "--ttl", "1s")
	require.NoError(t, err, errOut)
	short := strings.TrimSpace(out)[strings.Index(out, "::")+2:]
	deadline := time.Now().Add(20 * time.Second)
	for code, _ = supervisorBearer(t, s1, "/v1-k3s/readyz", short); code != http.StatusUnauthorized; code, _ = supervisorBearer(t, s1, "/v1-k3s/readyz", short) {
		require.True(t, time.Now().Before(deadline), "a token with --ttl 1s still accepted after 20 s")
		time.Sleep(200 * time.Millisecond)
	}
	badAgent := c.start("agent-bad", 12, "agent", "--server", s1.url(), "--token", "K10"+hash+"::zzzzzz.0123456789abcdef")
	badAgent.waitLog(t, regexp.MustCompile(regexp.QuoteMeta(`level=error msg="token is not valid: `+s1.url()+`/v1-k3s/readyz: 401 Unauthorized"`)), 1, 20*time.Second)
	s1.waitLog(t, regexp.MustCompile(`Failed to authenticate request from \S+: invalid username/password combination`), 1, 10*time.Second)
	out, errOut, err = c.k3s("token", "delete", "--kubeconfig", s1.kubeconfig(), bootstrap)
	require.NoError(t, err, errOut)
	assert.Equal(t, `bootstrap token "`+id+`" deleted`+"\n", out)
	code, _ = supervisorBearer(t, s1, "/v1-k3s/readyz", bootstrap)
	assert.Equal(t, http.StatusUnauthorized, code)

	// A bootstrap token as a server's --token: fatal (k3s#7313).
	x := c.start("server-x", 9, "server", "--cluster-init", "--token", "abcdef.0123456789abcdef")
	codeX, logX := x.waitExit(t, time.Minute)
	assert.Equal(t, 1, codeX)
	assert.Contains(t, logX, `level=fatal msg="starting kubernetes: preparing server: failed to normalize server token; must be in format K10<CA-HASH>::<USERNAME>:<PASSWORD> or <PASSWORD>"`)

	// rotate
	out, errOut, err = c.k3s("token", "rotate", "--server", s1.url(), "--token", "s3cret", "--new-token", "n3w")
	require.NoError(t, err, errOut)
	assert.Contains(t, out, "Token rotated, restart k3s nodes with new token\n")
	newToken := "K10" + hash + "::server:n3w"
	assert.Equal(t, newToken, s1.token(t))
	passwd, err := os.ReadFile(filepath.Join(s1.dir, "data", "server", "cred", "passwd"))
	require.NoError(t, err)
	assert.Equal(t, "n3w,server,server,k3s:server\nn3w,node,node,k3s:agent\n", string(passwd), "the agent password followed: it was the server's")
	code, _ = supervisorGet(t, s1, "/v1-k3s/readyz", "server", "s3cret")
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = supervisorGet(t, s1, "/v1-k3s/readyz", "server", "n3w")
	assert.Equal(t, http.StatusOK, code)

	s2 := c.start("server-2", 2, "server", "--server", s1.url(), "--token", newToken)
	old := c.start("server-old", 3, "server", "--server", s1.url(), "--token", serverToken)
	codeX, logX = old.waitExit(t, time.Minute)
	assert.Equal(t, 1, codeX)
	assert.Contains(t, logX, `level=fatal msg="starting kubernetes: preparing server: `+s1.url()+`/v1-k3s/server-bootstrap: 401 Unauthorized"`)
	s2.waitReady(t, 2*time.Minute)

	// Rotating through server-2 reaches server-1 (a bootstrap token is
	// refused as the new one, k3s#13005).
	_, errOut, err = c.k3s("token", "rotate", "--server", s2.url(), "--token", newToken, "--new-token", "abcdef.0123456789abcdef")
	require.Error(t, err)
	assert.Contains(t, errOut, "500 Internal Server Error: failed to normalize server token")
	// Without --token, the old token is read from <data-dir>/server/token.
	out, errOut, err = c.k3s("token", "rotate", "--server", s2.url(), "--data-dir", filepath.Join(s2.dir, "data"), "--new-token", "n3wer")
	require.NoError(t, err, errOut)
	deadline = time.Now().Add(10 * time.Second)
	for code, _ = supervisorGet(t, s1, "/v1-k3s/readyz", "server", "n3wer"); code != http.StatusOK; code, _ = supervisorGet(t, s1, "/v1-k3s/readyz", "server", "n3wer") {
		require.True(t, time.Now().Before(deadline), "server-1 does not take server-2's rotation")
		time.Sleep(100 * time.Millisecond)
	}
	code, _ = supervisorGet(t, s1, "/v1-k3s/readyz", "server", "n3w")
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Equal(t, "K10"+hash+"::server:n3wer", s1.token(t), "server-1's token file follows")

	// Restarted with an old --token, a server refuses to start; with none
	// (or the new one) it takes the cluster's.
	require.NoError(t, s1.cmd.Process.Signal(syscall.SIGTERM))
	codeX, _ = s1.waitExit(t, time.Minute)
	assert.Equal(t, 0, codeX)
	s1b := c.start("server-1", 1, "server", "--token", "n3w")
	codeX, logX = s1b.waitExit(t, time.Minute)
	assert.Equal(t, 1, codeX)
	assert.Contains(t, logX, `level=fatal msg="starting kubernetes: preparing server: failed to bootstrap cluster data: failed to reconcile with local datastore: bootstrap data already found and encrypted with different token"`)
	s1c := c.start("server-1", 1, "server")
	s1c.waitReady(t, 2*time.Minute)
	assert.Equal(t, "K10"+hash+"::server:n3wer", s1c.token(t))
}
