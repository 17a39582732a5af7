package proxmox_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSecretsNeverLeak: the token secret and the cloud-init password
// appear in no error, no log line (debug level) and no returned resource,
// under faults that make every path log and fail.
func TestSecretsNeverLeak(t *testing.T) {
	const password = "Pa55-w0rd-NEVER-SHOWN"
	srv := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(fastLatencies), proxmoxtest.WithSeed(7),
		proxmoxtest.WithFaults(proxmoxtest.Faults{ErrorRate: 0.2, LockTimeoutRate: 0.2, TaskFailureRate: 0.1}))
	_, tokenSecret := srv.Token()
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p := newProvider(t, srv, func(c *proxmox.Config) { c.Logger = logger })
	ctx := ctxT(t)
	var texts []string
	r := vm("web-01", map[string]any{"cloudInit": map[string]any{"user": "u", "password": password, "ipConfig": map[string]any{"net0": map[string]any{"ip": "dhcp"}}}})
	for range 6 {
		res, err := p.Apply(ctx, r)
		if err != nil {
			texts = append(texts, err.Error(), fmt.Sprintf("%+v %#v", err, err))
			continue
		}
		b, _ := json.Marshal(res)
		texts = append(texts, string(b))
		live, err := p.Get(ctx, r.ID())
		if err == nil {
			d, err := p.Diff(ctx, r, live)
			b, _ = json.Marshal(d)
			texts = append(texts, string(b), fmt.Sprint(err))
		}
	}
	// A wrong token: the 401 path.
	bad := newProvider(t, srv, func(c *proxmox.Config) {
		x := c.Contexts["sim"]
		x.TokenSecret = secretOf(tokenSecret[:len(tokenSecret)-4] + "0000")
		c.Contexts["sim"] = x
		c.Logger = logger
	})
	_, err := bad.Apply(ctx, r)
	require.Error(t, err)
	texts = append(texts, err.Error(), fmt.Sprintf("%#v", err), fmt.Sprint(bad.Ping(ctx, nil)))
	for range 5 { // under faults; its log lines count too
		if p.Delete(ctx, r.ID()) == nil {
			break
		}
	}

	mu.Lock()
	t.Logf("%d bytes of log, e.g. %.300s", buf.Len(), buf.String())
	assert.NotZero(t, buf.Len(), "the faults should have made the provider log")
	texts = append(texts, buf.String())
	mu.Unlock()
	all := strings.Join(texts, "\n")
	assert.NotContains(t, all, password)
	assert.NotContains(t, all, tokenSecret)
	assert.NotContains(t, all, tokenSecret[:len(tokenSecret)-4])
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
