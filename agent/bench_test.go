package agent_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/agenttest"
)

// benchAgent starts an agent over mTLS on loopback whose host answers
// from memory, as the SSH fixture's `true` does: the benchmarks compare
// transports, not what the host does per call.
func benchAgent(b *testing.B) *agent.Client {
	env := agenttest.Start(b, agenttest.Options{})
	cfg := env.ServerConfig()
	cfg.System = memVersion{env.System}
	_, addr := agenttest.ServeOn(b, "127.0.0.1:0", cfg)
	return env.NewClient(b, func(c *agent.ClientConfig) { c.Address = addr })
}

// memVersion reports the k3s version without reading the binary.
type memVersion struct{ *agenttest.System }

func (memVersion) K3sVersion(context.Context, string) (string, error) {
	return agenttest.DefaultVersion, nil
}

// BenchmarkAgentInfo: a reused mTLS client calling GET /v1/info against
// an in-process agent over TCP loopback — what every day-2 call costs
// once the connection is up.
func BenchmarkAgentInfo(b *testing.B) {
	c := benchAgent(b)
	ctx := b.Context()
	if _, err := c.Info(ctx); err != nil { // warm the connection
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Info(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSSHExec: what a day-2 tool without an agent pays per call — a
// fresh SSH connection (ed25519 host key pinned with FixedHostKey,
// public-key auth), a session running `true`, and the teardown.
func BenchmarkSSHExec(b *testing.B) {
	s := startSSHServer(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := s.exec(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAgentInfoNewConn is BenchmarkAgentInfo with a new client, so a
// new TLS 1.3 connection with mutual ECDSA authentication, per call: what
// a one-shot CLI process pays for its first agent call.
func BenchmarkAgentInfoNewConn(b *testing.B) {
	env := agenttest.Start(b, agenttest.Options{})
	cfg := env.ServerConfig()
	cfg.System = memVersion{env.System}
	_, addr := agenttest.ServeOn(b, "127.0.0.1:0", cfg)
	ccfg := env.ClientConfig()
	ccfg.Address = addr
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		c, err := agent.NewClient(ccfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Info(ctx); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// BenchmarkAgentVsSSH compares the two transports call for call, fairly:
// "kept" over a kept connection each (one mTLS client; one SSH
// connection with a new session per call), "fresh" over a new connection
// each per call (a TLS 1.3 handshake with mutual ECDSA authentication; an
// SSH handshake with a pinned ed25519 host key and public-key auth). The
// calls alternate, so both see the same conditions. It reports each
// transport's ns/call and the ratio ssh/agent.
func BenchmarkAgentVsSSH(b *testing.B) {
	env := agenttest.Start(b, agenttest.Options{})
	cfg := env.ServerConfig()
	cfg.System = memVersion{env.System}
	_, addr := agenttest.ServeOn(b, "127.0.0.1:0", cfg)
	ccfg := env.ClientConfig()
	ccfg.Address = addr
	s := startSSHServer(b)
	ctx := b.Context()
	report := func(b *testing.B, agentTime, sshTime time.Duration, n int) {
		b.ReportMetric(float64(agentTime.Nanoseconds())/float64(n), "agent-ns/call")
		b.ReportMetric(float64(sshTime.Nanoseconds())/float64(n), "ssh-ns/call")
		b.ReportMetric(float64(sshTime)/float64(agentTime), "ssh/agent")
	}
	b.Run("kept", func(b *testing.B) {
		c, err := agent.NewClient(ccfg)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		conn, err := ssh.Dial("tcp", s.addr, s.cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		if _, err := c.Info(ctx); err != nil { // both connections up
			b.Fatal(err)
		}
		n := 0
		var agentTime, sshTime time.Duration
		for b.Loop() {
			t0 := time.Now()
			if _, err := c.Info(ctx); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			sess, err := conn.NewSession()
			if err != nil {
				b.Fatal(err)
			}
			if err := sess.Run("true"); err != nil {
				b.Fatal(err)
			}
			sess.Close()
			sshTime += time.Since(t1)
			agentTime += t1.Sub(t0)
			n++
		}
		report(b, agentTime, sshTime, n)
	})
	b.Run("fresh", func(b *testing.B) {
		n := 0
		var agentTime, sshTime time.Duration
		for b.Loop() {
			t0 := time.Now()
			c, err := agent.NewClient(ccfg)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.Info(ctx); err != nil {
				b.Fatal(err)
			}
			c.Close()
			t1 := time.Now()
			if err := s.exec(); err != nil {
				b.Fatal(err)
			}
			sshTime += time.Since(t1)
			agentTime += t1.Sub(t0)
			n++
		}
		report(b, agentTime, sshTime, n)
	})
}

// sshFixture is an in-process SSH server on loopback that answers an
// "exec" request for `true` with exit status 0, and a client config for it.
type sshFixture struct {
	addr string
	cfg  *ssh.ClientConfig
	done chan struct{} // one value per connection the server has finished
}

// exec runs `true` over a fresh connection and waits until the server has
// finished with the connection too, so that no part of one call spills
// into the next iteration.
func (s *sshFixture) exec() error {
	if err := s.run(); err != nil {
		return err
	}
	select {
	case <-s.done:
		return nil
	case <-time.After(5 * time.Second):
		return errors.New("ssh server did not finish the connection")
	}
}

func (s *sshFixture) run() error {
	c, err := ssh.Dial("tcp", s.addr, s.cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		return err
	}
	defer sess.Close()
	return sess.Run("true")
}

func startSSHServer(tb testing.TB) *sshFixture {
	tb.Helper()
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		tb.Fatal(err)
	}
	_, userPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	userSigner, err := ssh.NewSignerFromKey(userPriv)
	if err != nil {
		tb.Fatal(err)
	}
	authorized := userSigner.PublicKey().Marshal()
	srvCfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if string(key.Marshal()) == string(authorized) {
				return &ssh.Permissions{}, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	srvCfg.AddHostKey(hostSigner)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	fx := &sshFixture{done: make(chan struct{}, 1)}
	var wg sync.WaitGroup
	tb.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				serveSSH(conn, srvCfg)
				select {
				case fx.done <- struct{}{}:
				default:
				}
			})
		}
	})
	fx.addr = ln.Addr().String()
	fx.cfg = &ssh.ClientConfig{
		User:            "root",
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(userSigner)},
		HostKeyCallback: ssh.FixedHostKey(hostSigner.PublicKey()),
		Timeout:         5 * time.Second,
	}
	return fx
}

func serveSSH(conn net.Conn, cfg *ssh.ServerConfig) {
	defer conn.Close()
	sc, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		return
	}
	defer sc.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			return
		}
		go func() {
			defer ch.Close()
			for req := range creqs {
				var payload struct{ Command string }
				if req.Type != "exec" || ssh.Unmarshal(req.Payload, &payload) != nil || payload.Command != "true" {
					_ = req.Reply(false, nil)
					continue
				}
				_ = req.Reply(true, nil)
				_, _ = io.Copy(io.Discard, ch)
				status := struct{ Status uint32 }{0}
				_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(&status))
				return
			}
		}()
	}
}

// The fixture works: one exec in the normal suite.
func TestSSHFixture(t *testing.T) {
	if err := startSSHServer(t).exec(); err != nil {
		t.Fatal(err)
	}
}
