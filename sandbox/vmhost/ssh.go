package vmhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"golang.org/x/crypto/ssh"
)

// SSHConfig configures ServeSSH.
type SSHConfig struct {
	// HostKey is the server's host key.
	HostKey ssh.Signer
	// AuthorizedKeys are the keys each user may log in with: public-key
	// authentication is the only kind offered.
	AuthorizedKeys map[string][]ssh.PublicKey
	// Host runs the commands.
	Host *Host
}

// ServeSSH serves SSH on ln until ctx ends, then closes ln and every
// connection and returns nil; it returns earlier with an error when ln
// fails or cfg is incomplete. What it serves is what openctl's remote
// package uses of OpenSSH: "session" channels with "exec" requests (the
// command line run by cfg.Host as the logged-in user, its exit status
// sent as "exit-status"), "env" requests (added to the command's
// environment), and "signal" requests, which stop the running command.
// It refuses "pty-req", "shell" and "subsystem" requests, every other
// channel type (port forwarding included) and agent forwarding.
func ServeSSH(ctx context.Context, ln net.Listener, cfg SSHConfig) error {
	if cfg.HostKey == nil || cfg.Host == nil {
		ln.Close()
		return errors.New("vmhost: ServeSSH needs a HostKey and a Host")
	}
	sc := &ssh.ServerConfig{
		PublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			for _, k := range cfg.AuthorizedKeys[meta.User()] {
				if bytes.Equal(k.Marshal(), key.Marshal()) {
					return &ssh.Permissions{}, nil
				}
			}
			return nil, fmt.Errorf("vmhost: key not authorized for %s", meta.User())
		},
	}
	sc.AddHostKey(cfg.HostKey)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	var mu sync.Mutex // guards conns
	conns := map[net.Conn]struct{}{}
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for c := range conns {
			c.Close()
		}
	})
	defer stop()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("vmhost: accept: %w", err)
		}
		mu.Lock()
		if ctx.Err() != nil {
			mu.Unlock()
			nc.Close()
			return nil
		}
		conns[nc] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				mu.Lock()
				delete(conns, nc)
				mu.Unlock()
				nc.Close()
			}()
			serveConn(ctx, nc, sc, cfg.Host)
		}()
	}
}

// serveConn runs one SSH connection until it closes or ctx ends.
func serveConn(ctx context.Context, nc net.Conn, sc *ssh.ServerConfig, h *Host) {
	conn, chans, reqs, err := ssh.NewServerConn(nc, sc)
	if err != nil {
		h.log.Debug("ssh handshake failed", "remote", nc.RemoteAddr().String(), "err", err)
		return
	}
	defer conn.Close()
	user := conn.User()
	var wg sync.WaitGroup
	defer wg.Wait()
	// Global requests: tcpip-forward and the like are refused.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for r := range reqs {
			if r.WantReply {
				_ = r.Reply(false, nil)
			}
		}
	}()
	for nch := range chans {
		if nch.ChannelType() != "session" {
			_ = nch.Reject(ssh.UnknownChannelType, "only session channels are served")
			continue
		}
		ch, chReqs, err := nch.Accept()
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveSession(ctx, ch, chReqs, h, user)
		}()
	}
}

// serveSession serves one session channel: env requests, then one exec.
func serveSession(ctx context.Context, ch ssh.Channel, reqs <-chan *ssh.Request, h *Host, user string) {
	defer ch.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var env []string
	done := make(chan struct{})
	started := false
	for {
		var r *ssh.Request
		var ok bool
		select {
		case r, ok = <-reqs:
			if !ok {
				// The client closed the channel: stop the command.
				cancel()
				if started {
					<-done
				}
				return
			}
		case <-done:
			// The command ended: drain requests until the channel
			// closes, which ch.Close above does.
			go func() {
				for r := range reqs {
					if r.WantReply {
						_ = r.Reply(false, nil)
					}
				}
			}()
			return
		}
		switch r.Type {
		case "env":
			var kv struct{ Name, Value string }
			if err := ssh.Unmarshal(r.Payload, &kv); err != nil || started {
				reply(r, false)
				continue
			}
			env = append(env, kv.Name+"="+kv.Value)
			reply(r, true)
		case "exec":
			var cmd struct{ Command string }
			if err := ssh.Unmarshal(r.Payload, &cmd); err != nil || started {
				reply(r, false)
				continue
			}
			reply(r, true)
			started = true
			go func() {
				defer close(done)
				status, err := h.Run(ctx, cmd.Command, ch, ch, ch.Stderr(), env, user)
				if err != nil {
					fmt.Fprintf(ch.Stderr(), "vmhost: %v\n", err)
					status = 255
				}
				_ = ch.CloseWrite()
				_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(status)}))
			}()
		case "signal":
			// Any signal ends the command: the simulator runs no
			// processes that could catch one.
			reply(r, true)
			cancel()
		default:
			// pty-req, shell, subsystem, x11-req, auth-agent-req@openssh.com…
			reply(r, false)
		}
	}
}

func reply(r *ssh.Request, ok bool) {
	if r.WantReply {
		_ = r.Reply(ok, nil)
	}
}
