package agent_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/agenttest"
	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/errcode"
)

// freeAddr returns a loopback address nothing listens on (yet).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// onMessage is a slog handler that calls f for every record whose message
// contains substr, and passes every record on to next.
type onMessage struct {
	slog.Handler
	substr string
	f      func()
}

func (h onMessage) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.substr) {
		h.f()
	}
	return h.Handler.Handle(ctx, r)
}

// The client retries Info while the agent is starting: the agent is
// started when the client reports its first retry.
func TestClientRetriesWhileAgentStarts(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	addr := freeAddr(t)
	base, buf := agenttest.NewLogger(slog.LevelDebug)
	var once sync.Once
	started := make(chan struct{})
	log := slog.New(onMessage{Handler: base.Handler(), substr: "retrying", f: func() {
		once.Do(func() {
			agenttest.ServeOn(t, addr, env.ServerConfig())
			close(started)
		})
	}})
	c := env.NewClient(t, func(c *agent.ClientConfig) {
		c.Address, c.Logger, c.RetryBackoff = addr, log, 20*time.Millisecond
	})
	info, err := c.Info(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "node-1", info.Hostname)
	<-started
	retries := buf.WithMsg(t, "agent: not accepting connections yet, retrying")
	assert.Len(t, retries, 1)
}

func TestClientRetryBounded(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	addr := freeAddr(t)
	log, buf := agenttest.NewLogger(slog.LevelDebug)
	c := env.NewClient(t, func(c *agent.ClientConfig) {
		c.Address, c.Logger, c.Retries, c.RetryBackoff = addr, log, 2, time.Millisecond
	})
	_, err := c.Info(t.Context())
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Transient), "%v", err)
	assert.Contains(t, err.Error(), "connection refused")
	assert.Len(t, buf.WithMsg(t, "agent: not accepting connections yet, retrying"), 2)

	// Non-idempotent calls are never retried.
	before := len(buf.WithMsg(t, "agent: not accepting connections yet, retrying"))
	assert.True(t, errcode.Is(c.Restart(t.Context()), errcode.Transient))
	_, err = c.Upgrade(t.Context(), "v1.2.3+k3s1")
	assert.True(t, errcode.Is(err, errcode.Transient))
	assert.Len(t, buf.WithMsg(t, "agent: not accepting connections yet, retrying"), before)

	// No retries at all.
	c = env.NewClient(t, func(c *agent.ClientConfig) { c.Address, c.Logger, c.Retries = addr, log, -1 })
	_, err = c.Info(t.Context())
	assert.True(t, errcode.Is(err, errcode.Transient))
	assert.Len(t, buf.WithMsg(t, "agent: not accepting connections yet, retrying"), before)
}

func TestClientTimeout(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	// A listener that accepts and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	c := env.NewClient(t, func(c *agent.ClientConfig) { c.Address, c.InfoTimeout = ln.Addr().String(), 200*time.Millisecond })
	start := time.Now()
	_, err = c.Info(t.Context())
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Transient), "%v", err)
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestClientVersionSkewWarns(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	log, buf := agenttest.NewLogger(slog.LevelInfo)
	c := env.NewClient(t, func(c *agent.ClientConfig) { c.Logger, c.ExpectVersion = log, "v0.0.1-older" })
	for range 3 {
		_, err := c.Info(t.Context())
		require.NoError(t, err, "skew is never a refusal")
	}
	require.NoError(t, c.Restart(t.Context()))
	warnings := buf.WithMsg(t, "agent: version skew: the agent runs another version than this client expects; continuing")
	require.Len(t, warnings, 1, "warned once per client")
	assert.Equal(t, "WARN", warnings[0]["level"])
	assert.Equal(t, agenttest.AgentVersion, warnings[0]["agentVersion"])
	assert.Equal(t, "v0.0.1-older", warnings[0]["clientVersion"])
	assert.Equal(t, env.Addr, warnings[0]["agent"])

	// Same version, or no version expected: no warning.
	for name, expect := range map[string]string{"same": agenttest.AgentVersion, "none": ""} {
		t.Run(name, func(t *testing.T) {
			log, buf := agenttest.NewLogger(slog.LevelDebug)
			c := env.NewClient(t, func(c *agent.ClientConfig) { c.Logger, c.ExpectVersion = log, expect })
			_, err := c.Info(t.Context())
			require.NoError(t, err)
			assert.Empty(t, buf.Records(t))
		})
	}
}

func TestNewClientErrors(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	other, err := pki.NewCA("o")
	require.NoError(t, err)
	otherLeaf, err := other.IssueClient("x")
	require.NoError(t, err)
	otherKey, err := otherLeaf.KeyPEM()
	require.NoError(t, err)
	cases := map[string]func(*agent.ClientConfig){
		"no port":      func(c *agent.ClientConfig) { c.Address = "127.0.0.1" },
		"no bundle":    func(c *agent.ClientConfig) { c.CABundle = nil },
		"no cert":      func(c *agent.ClientConfig) { c.CertPEM, c.KeyPEM = nil, nil },
		"key mismatch": func(c *agent.ClientConfig) { c.KeyPEM = otherKey },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := env.ClientConfig()
			edit(&cfg)
			_, err := agent.NewClient(cfg)
			require.Error(t, err)
			assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
		})
	}
	cfg := env.ClientConfig()
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg)} {
		assert.NotContains(t, s, "PRIVATE KEY")
	}
}

func TestClientConcurrentUse(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	env.System.SetLogs(numbered(500))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if i%2 == 0 {
				_, err := env.Client.Info(t.Context())
				assert.NoError(t, err)
				return
			}
			var sb strings.Builder
			assert.NoError(t, env.Client.Logs(t.Context(), 500, &sb))
			assert.Equal(t, 500, strings.Count(sb.String(), "\n"))
		})
	}
	wg.Wait()
}

// numbered returns n numbered log lines.
func numbered(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %05d: k3s did something", i+1)
	}
	return lines
}
