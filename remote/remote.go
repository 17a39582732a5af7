package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/openctl/openctl/errcode"
)

// Target is a host to reach over SSH.
type Target struct {
	// Host is the host's address or name; Port its SSH port (default 22).
	Host string
	Port int
	// User logs in (default root). Commands run through "sudo -n" when
	// it is not root.
	User string
	// PrivateKeyPath is a private key file in OpenSSH or PEM form ("~/"
	// is the home directory). A
	// passphrase-protected key is used through the SSH agent instead
	// (ssh-add it there). Empty: the agent's keys only.
	PrivateKeyPath string
	// HostKeys says which host keys are accepted.
	HostKeys HostKeys
}

// Addr is host:port.
func (t Target) Addr() string {
	port := t.Port
	if port == 0 {
		port = 22
	}
	return net.JoinHostPort(t.Host, strconv.Itoa(port))
}

func (t Target) user() string {
	if t.User == "" {
		return "root"
	}
	return t.User
}

// Options tune a Pool.
type Options struct {
	// Logger receives what the pool does; nil discards it.
	Logger *slog.Logger
	// DialTimeout bounds the TCP connection and the SSH handshake of one
	// attempt (default 15s).
	DialTimeout time.Duration
	// DefaultPort is the SSH port of targets that name none (default 22).
	DefaultPort int
	// AgentSocket is the SSH agent's socket; "" means $SSH_AUTH_SOCK.
	// The agent only signs: it is never forwarded to a host.
	AgentSocket string
	// Identity, when set, is the one key the pool logs in with: targets'
	// PrivateKeyPath and the SSH agent are not used. It is for keys held
	// in memory — a secret store's, a sandbox's own.
	Identity ssh.Signer
	// KeepAlive is how often a pooled connection asks its host whether it
	// is still there (OpenSSH's keepalive@openssh.com, as
	// ServerAliveInterval does); a host that does not answer within
	// DialTimeout has its connection closed, so that commands on it fail
	// rather than wait for ever — a powered-off or destroyed VM sends no
	// reset, its TCP connections just go silent. Default 5s; negative:
	// never asked.
	KeepAlive time.Duration
	// OnCommand, when set, is told of every command before it runs: the
	// host (host:port) and the command's Step — an audit trail, never
	// the script or its input. It must be safe for concurrent use.
	OnCommand func(host, step string)
}

// Pool keeps one SSH connection per target (user, address, key file),
// opened on first use and reused by every command after, until Close.
// It is safe for concurrent use.
type Pool struct {
	opts Options
	tofu sync.Mutex // serialises trust-on-first-use writes

	mu     sync.Mutex       // guards conns and opened
	conns  map[string]*conn // by Target key
	opened map[string]int   // connections opened, by address
}

// NewPool returns an empty pool.
func NewPool(opts Options) *Pool {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 15 * time.Second
	}
	if opts.KeepAlive == 0 {
		opts.KeepAlive = 5 * time.Second
	}
	if opts.AgentSocket == "" {
		opts.AgentSocket = os.Getenv("SSH_AUTH_SOCK")
	}
	return &Pool{opts: opts, conns: map[string]*conn{}, opened: map[string]int{}}
}

// conn is one pooled connection; ready is closed once client or err is
// set.
type conn struct {
	ready  chan struct{}
	client *ssh.Client
	err    error
}

// Opened returns how many SSH connections the pool has opened to addr
// (host:port) so far.
func (p *Pool) Opened(addr string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.opened[addr]
}

// Close closes every connection.
func (p *Pool) Close() error {
	p.mu.Lock()
	conns := p.conns
	p.conns = map[string]*conn{}
	p.mu.Unlock()
	var errs []error
	for _, c := range conns {
		<-c.ready
		if c.client != nil {
			if err := c.client.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Host returns the target's connection, dialling it when the pool has
// none (or the one it had broke). Concurrent callers share one dial; a
// failed dial is not kept, so the next call dials again.
func (p *Pool) Host(ctx context.Context, t Target) (*Host, error) {
	if t.Port == 0 {
		t.Port = p.opts.DefaultPort
	}
	key := t.user() + "@" + t.Addr() + "#" + t.PrivateKeyPath
	p.mu.Lock()
	c, ok := p.conns[key]
	if !ok {
		c = &conn{ready: make(chan struct{})}
		p.conns[key] = c
		p.opened[t.Addr()]++
		p.mu.Unlock()
		c.client, c.err = p.dial(ctx, t)
		close(c.ready)
		if c.err != nil {
			p.forget(key, c)
			return nil, c.err
		}
		go func() { _ = c.client.Wait(); p.forget(key, c) }()
		go p.keepAlive(c.client, t.Addr())
	} else {
		p.mu.Unlock()
		select {
		case <-c.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if c.err != nil {
			return nil, c.err
		}
	}
	return &Host{t: t, c: c.client, log: p.opts.Logger, onCommand: p.opts.OnCommand}, nil
}

// keepAlive asks the host at addr every Options.KeepAlive whether it is
// there, and closes c when it does not answer within DialTimeout: a
// command waiting on c then fails (and the pool forgets c) instead of
// waiting for a host that is gone. It returns once c is closed.
func (p *Pool) keepAlive(c *ssh.Client, addr string) {
	if p.opts.KeepAlive < 0 {
		return
	}
	closed := make(chan struct{})
	go func() { _ = c.Wait(); close(closed) }()
	tick := time.NewTicker(p.opts.KeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-closed:
			return
		case <-tick.C:
		}
		answered := make(chan error, 1)
		go func() {
			// Any answer will do: OpenSSH refuses the request it does not
			// serve, which is an answer.
			_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
			answered <- err
		}()
		timer := time.NewTimer(p.opts.DialTimeout)
		select {
		case <-answered:
			timer.Stop()
		case <-closed:
			timer.Stop()
			return
		case <-timer.C:
			p.opts.Logger.Warn("ssh host does not answer: closing the connection", "host", addr, "after", p.opts.DialTimeout)
			_ = c.Close()
			return
		}
	}
}

// forget drops c from the pool if it is still the one under key.
func (p *Pool) forget(key string, c *conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns[key] == c {
		delete(p.conns, key)
	}
}

// dial opens and authenticates a connection to t.
func (p *Pool) dial(ctx context.Context, t Target) (*ssh.Client, error) {
	addr := t.Addr()
	v := &verifier{keys: t.HostKeys, log: p.opts.Logger, mu: &p.tofu}
	hostKeyCallback, algos, err := v.callback(addr)
	if err != nil {
		return nil, err
	}
	auth, closeAgent, err := p.auth(t)
	if err != nil {
		return nil, err
	}
	defer closeAgent()
	cfg := &ssh.ClientConfig{
		User:              t.user(),
		Auth:              auth,
		HostKeyCallback:   hostKeyCallback,
		HostKeyAlgorithms: algos,
		Timeout:           p.opts.DialTimeout,
	}
	dctx, cancel := context.WithTimeout(ctx, p.opts.DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errcode.Wrap(errcode.Transient, "remote: "+addr+": cannot connect", err)
	}
	// The handshake is bounded too: a host that accepts and then says
	// nothing must not hang the apply.
	stop := context.AfterFunc(dctx, func() { _ = nc.SetDeadline(time.Now()) })
	sc, chans, reqs, err := ssh.NewClientConn(nc, addr, cfg)
	stopped := stop()
	if err != nil {
		nc.Close()
		var hk *HostKeyError
		var coded *errcode.Error
		switch {
		case errors.As(err, &hk):
			return nil, hk
		case errors.As(err, &coded):
			return nil, coded // from the host key callback
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case strings.Contains(err.Error(), "unable to authenticate"):
			return nil, errcode.Wrap(errcode.Unauthorized, fmt.Sprintf("remote: %s: user %s was refused (keys tried: %s)", addr, t.user(), keysTried(t, p.opts.AgentSocket)), err)
		case !stopped:
			return nil, errcode.Wrap(errcode.Transient, fmt.Sprintf("remote: %s: no SSH handshake within %s", addr, p.opts.DialTimeout), err)
		}
		return nil, errcode.Wrap(errcode.Transient, "remote: "+addr+": SSH handshake", err)
	}
	p.opts.Logger.Debug("ssh connected", "host", addr, "user", t.user())
	return ssh.NewClient(sc, chans, reqs), nil
}

// auth returns the authentication methods for t: Options.Identity alone
// when set, else its key file, then the agent's keys.
func (p *Pool) auth(t Target) ([]ssh.AuthMethod, func(), error) {
	if p.opts.Identity != nil {
		return []ssh.AuthMethod{ssh.PublicKeys(p.opts.Identity)}, func() {}, nil
	}
	var signers []ssh.Signer
	closeAgent := func() {}
	if t.PrivateKeyPath != "" {
		path, err := expandHome(t.PrivateKeyPath)
		if err != nil {
			return nil, nil, errcode.Wrap(errcode.Invalid, "remote: private key", err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, errcode.Wrap(errcode.Invalid, "remote: private key", err)
		}
		s, err := ssh.ParsePrivateKey(data)
		var pm *ssh.PassphraseMissingError
		switch {
		case errors.As(err, &pm):
			if p.opts.AgentSocket == "" {
				return nil, nil, errcode.New(errcode.Invalid, fmt.Sprintf("remote: private key %s is passphrase-protected: load it into your SSH agent (ssh-add %s) and set SSH_AUTH_SOCK", t.PrivateKeyPath, t.PrivateKeyPath))
			}
		case err != nil:
			return nil, nil, errcode.Wrap(errcode.Invalid, "remote: private key "+t.PrivateKeyPath, err)
		default:
			signers = append(signers, s)
		}
	}
	why := "no SSH_AUTH_SOCK"
	if p.opts.AgentSocket != "" {
		ac, err := net.Dial("unix", p.opts.AgentSocket)
		if err == nil {
			closeAgent = func() { ac.Close() }
			as, err := agent.NewClient(ac).Signers()
			signers = append(signers, as...)
			why = "the agent holds no key"
			if err != nil {
				why = "the agent: " + err.Error()
			}
		} else {
			why = "the agent: " + err.Error()
		}
	}
	if len(signers) == 0 {
		closeAgent()
		return nil, nil, errcode.New(errcode.Invalid, fmt.Sprintf("remote: no SSH key: set privateKeyPath or load a key into an SSH agent (%s)", why))
	}
	return []ssh.AuthMethod{ssh.PublicKeys(signers...)}, closeAgent, nil
}

// expandHome expands a leading ~/ to the home directory.
func expandHome(path string) (string, error) {
	rest, ok := strings.CutPrefix(path, "~/")
	if !ok {
		return path, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return filepath.Join(home, rest), nil
}

// keysTried describes the keys offered, for an authentication failure.
func keysTried(t Target, agentSocket string) string {
	var out []string
	if t.PrivateKeyPath != "" {
		out = append(out, t.PrivateKeyPath)
	}
	if agentSocket != "" {
		out = append(out, "the SSH agent's")
	}
	return strings.Join(out, ", ")
}

// Host is a connected target. Commands run on it share the pool's
// connection, each in a session of its own. It is safe for concurrent
// use.
type Host struct {
	t         Target
	c         *ssh.Client
	log       *slog.Logger
	onCommand func(host, step string)
}

// Addr is the host's host:port.
func (h *Host) Addr() string { return h.t.Addr() }

// Command is one remote command.
type Command struct {
	// Step names what the command is for ("install the k3s binary"), for
	// errors and logs.
	Step string
	// Script is run by sh -c, through "sudo -n" when the target's user is
	// not root. Secrets never go in it: pass them on Stdin.
	Script string
	// Stdin is the command's standard input; nil: none.
	Stdin io.Reader
}

// Result is what a command printed.
type Result struct {
	Stdout []byte
	Stderr []byte
}

// wrapper runs the script ($1) in the background and waits for it, so
// that SIGTERM — what Run sends when its context ends — reaches a trap
// that ends the script's whole process group, not only the shell. The
// script keeps the session's standard input (an asynchronous command
// would get /dev/null).
const wrapper = `trap 'trap - TERM; kill -TERM 0; exit 143' TERM
exec 3<&0
sh -c "$1" <&3 3<&- &
wait $!`

// killGrace is how long a cancelled command has to end after SIGTERM
// before it is sent SIGKILL.
const killGrace = 2 * time.Second

// outputTail is how many lines of a failed command's output an error
// quotes.
const outputTail = 8

// ExitError is a remote command that ran and failed. It matches
// errcode.Internal.
type ExitError struct {
	Host   string // host:port
	Step   string
	Status int    // exit status; -1 when it was killed by a signal or the connection dropped
	Tail   string // the last lines of its output (stderr, else stdout)
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("remote: %s: %s: exit status %d", e.Host, e.Step, e.Status)
	if e.Status < 0 {
		msg = fmt.Sprintf("remote: %s: %s: no exit status (killed, or the connection dropped)", e.Host, e.Step)
	}
	if e.Tail != "" {
		msg += ": " + e.Tail
	}
	return msg
}

// Is reports whether target is errcode.Internal.
func (e *ExitError) Is(target error) bool { return target == errcode.Internal }

// Run runs cmd and returns its output. A non-zero exit is an *ExitError;
// when ctx ends first, the command is sent SIGKILL, its session closed,
// and ctx's error returned.
func (h *Host) Run(ctx context.Context, cmd Command) (*Result, error) {
	s, err := h.c.NewSession()
	if err != nil {
		return nil, errcode.Wrap(errcode.Transient, fmt.Sprintf("remote: %s: %s: opening a session", h.Addr(), cmd.Step), err)
	}
	defer s.Close()
	var stdout, stderr bytes.Buffer
	s.Stdout, s.Stderr = &stdout, &stderr
	if cmd.Stdin != nil {
		s.Stdin = cmd.Stdin
	}
	line := "sh -c " + Quote(wrapper) + " openctl " + Quote(cmd.Script)
	if h.t.user() != "root" {
		line = "sudo -n " + line
	}
	h.log.Debug("ssh run", "host", h.Addr(), "step", cmd.Step)
	if h.onCommand != nil {
		h.onCommand(h.Addr(), cmd.Step)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(line) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		// The wrapper turns SIGTERM into the end of the command's whole
		// process group; sudo relays SIGTERM (not SIGKILL) to it.
		_ = s.Signal(ssh.SIGTERM)
		select {
		case <-done:
		case <-time.After(killGrace):
			_ = s.Signal(ssh.SIGKILL)
		}
		s.Close()
		return nil, ctx.Err()
	}
	res := &Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if err == nil {
		return res, nil
	}
	ee := &ExitError{Host: h.Addr(), Step: cmd.Step, Status: -1, Tail: tail(res)}
	var xe *ssh.ExitError
	if errors.As(err, &xe) {
		ee.Status = xe.ExitStatus()
	}
	if h.t.user() != "root" && ee.Status == 1 && strings.Contains(string(res.Stderr), "sudo: a password is required") {
		return res, errcode.New(errcode.Unauthorized, fmt.Sprintf("remote: %s: %s: user %s needs passwordless sudo (sudo -n asked for a password)", h.Addr(), cmd.Step, h.t.user()))
	}
	return res, ee
}

// tail returns the last lines of a command's stderr, else stdout.
func tail(r *Result) string {
	out := strings.TrimSpace(string(r.Stderr))
	if out == "" {
		out = strings.TrimSpace(string(r.Stdout))
	}
	lines := strings.Split(out, "\n")
	if len(lines) > outputTail {
		lines = lines[len(lines)-outputTail:]
	}
	return strings.Join(lines, "\n")
}

// Quote quotes s for a POSIX shell.
func Quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
