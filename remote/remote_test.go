package remote_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/k3s/k3stest"
	"github.com/openctl/openctl/remote"
)

// fixture is one test host reachable with a key of the test's own.
type fixture struct {
	host    *k3stest.Host
	keyPath string // the unencrypted private key, 0600
	key     ed25519.PrivateKey
	pinned  string // the host's key, authorized_keys form
	dir     string
}

func newFixture(t *testing.T, name string) *fixture {
	t.Helper()
	ctx := t.Context()
	n := k3stest.NewNetwork(t) // skips without root; fails under CI=true
	h, err := n.AddHost(ctx, name, k3stest.HostOptions{})
	require.NoError(t, err)
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signer, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	for _, f := range []string{"/root/.ssh/authorized_keys", "/home/" + k3stest.DefaultUser + "/.ssh/authorized_keys", "/home/" + k3stest.PasswordUser + "/.ssh/authorized_keys"} {
		_, err := h.Run(ctx, "sh", "-c", "echo '"+line+"' >> "+f)
		require.NoError(t, err)
	}
	dir := t.TempDir()
	block, err := ssh.MarshalPrivateKey(priv, "")
	require.NoError(t, err)
	keyPath := filepath.Join(dir, "id_ed25519")
	require.NoError(t, os.WriteFile(keyPath, pem.EncodeToMemory(block), 0o600))
	return &fixture{host: h, keyPath: keyPath, key: priv, pinned: string(ssh.MarshalAuthorizedKey(h.HostKey())), dir: dir}
}

func (f *fixture) target(user string) remote.Target {
	return remote.Target{Host: f.host.Addr().String(), User: user, PrivateKeyPath: f.keyPath, HostKeys: remote.HostKeys{Pinned: []string{f.pinned}}}
}

func newPool(t *testing.T, opts remote.Options) *remote.Pool {
	t.Helper()
	if opts.DialTimeout == 0 {
		opts.DialTimeout = 5 * time.Second
	}
	opts.AgentSocket = orNone(opts.AgentSocket)
	p := remote.NewPool(opts)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// orNone keeps the developer's own SSH agent out of the tests.
func orNone(sock string) string {
	if sock == "" {
		return "/nonexistent/agent.sock"
	}
	return sock
}

func TestRunAsRootAndThroughSudo(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, "run")
	p := newPool(t, remote.Options{})
	for _, user := range []string{"root", k3stest.DefaultUser} {
		t.Run(user, func(t *testing.T) {
			h, err := p.Host(ctx, f.target(user))
			require.NoError(t, err)
			res, err := h.Run(ctx, remote.Command{Step: "whoami", Script: "id -u; echo \"$SUDO_USER\""})
			require.NoError(t, err)
			want := "0\n\n"
			if user != "root" {
				want = "0\n" + user + "\n"
			}
			assert.Equal(t, want, string(res.Stdout), "commands run as root, through sudo for other users")
		})
	}

	t.Run("commands are reported by step", func(t *testing.T) {
		var mu sync.Mutex
		var steps []string
		p := newPool(t, remote.Options{OnCommand: func(host, step string) {
			mu.Lock()
			defer mu.Unlock()
			steps = append(steps, host+" "+step)
		}})
		h, err := p.Host(ctx, f.target("root"))
		require.NoError(t, err)
		_, err = h.Run(ctx, remote.Command{Step: "probe", Script: "true"})
		require.NoError(t, err)
		require.NoError(t, h.WriteFile(ctx, "/tmp/x", 0o600, strings.NewReader("secret")))
		assert.Equal(t, []string{f.host.SSHAddr() + " probe", f.host.SSHAddr() + " write /tmp/x"}, steps)
	})

	t.Run("one connection per target", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				h, err := p.Host(ctx, f.target("root"))
				if assert.NoError(t, err) {
					_, err = h.Run(ctx, remote.Command{Step: "true", Script: "true"})
					assert.NoError(t, err)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, 2, p.Opened(f.host.SSHAddr()), "one for root, one for the login user, reused by every command")
	})

	t.Run("failure names host, step, status and output", func(t *testing.T) {
		h, err := p.Host(ctx, f.target(k3stest.DefaultUser))
		require.NoError(t, err)
		_, err = h.Run(ctx, remote.Command{Step: "install k3s", Script: "echo one; echo 'line 1' >&2; echo 'boom: it broke' >&2; exit 7"})
		var ee *remote.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, 7, ee.Status)
		assert.ErrorIs(t, err, errcode.Internal)
		assert.Equal(t, "remote: "+f.host.SSHAddr()+": install k3s: exit status 7: line 1\nboom: it broke", err.Error())
	})

	t.Run("secrets on stdin", func(t *testing.T) {
		h, err := p.Host(ctx, f.target(k3stest.DefaultUser))
		require.NoError(t, err)
		res, err := h.Run(ctx, remote.Command{Step: "read token", Script: "read t; echo ${#t}", Stdin: strings.NewReader("K10secret::server:pw\n")})
		require.NoError(t, err)
		assert.Equal(t, "20\n", string(res.Stdout))
	})

	t.Run("cancellation kills the command", func(t *testing.T) {
		h, err := p.Host(ctx, f.target(k3stest.DefaultUser))
		require.NoError(t, err)
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = h.Run(cctx, remote.Command{Step: "hang", Script: "sleep 1234; echo never"})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, time.Since(start), 5*time.Second)
		require.Eventually(t, func() bool {
			out, err := f.host.Run(ctx, "sh", "-c", "pgrep -f '[s]leep 1234' || true")
			return err == nil && len(bytes.TrimSpace(out)) == 0
		}, 5*time.Second, 50*time.Millisecond, "the remote command is gone")
	})
}

func TestFiles(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, "files")
	p := newPool(t, remote.Options{})
	h, err := p.Host(ctx, f.target(k3stest.DefaultUser))
	require.NoError(t, err)

	const path = "/etc/rancher/k3s/config.yaml.d/10-openctl.yaml"
	sum, err := h.SHA256(ctx, path)
	require.NoError(t, err)
	assert.Empty(t, sum, "a missing file has no checksum")
	_, err = h.ReadFile(ctx, path)
	require.ErrorIs(t, err, errcode.NotFound)

	require.NoError(t, h.WriteFile(ctx, path, 0o600, strings.NewReader("token: K10abc\n")))
	got, err := h.ReadFile(ctx, path)
	require.NoError(t, err)
	assert.Equal(t, "token: K10abc\n", string(got))
	sum, err = h.SHA256(ctx, path)
	require.NoError(t, err)
	want := sha256.Sum256([]byte("token: K10abc\n"))
	assert.Equal(t, hex.EncodeToString(want[:]), sum)
	st, err := f.host.Run(ctx, "stat", "-c", "%a %U", path)
	require.NoError(t, err)
	assert.Equal(t, "600 root\n", string(st), "written as root, with the mode asked")
	left, err := f.host.Run(ctx, "sh", "-c", "ls -a /etc/rancher/k3s/config.yaml.d/")
	require.NoError(t, err)
	assert.NotContains(t, string(left), "openctl-", "no temporary file left")
}

func TestHostKeys(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, "keys")
	addr := f.host.SSHAddr()
	target := func(keys remote.HostKeys) remote.Target {
		t := f.target("root")
		t.HostKeys = keys
		return t
	}
	dial := func(keys remote.HostKeys) error {
		_, err := newPool(t, remote.Options{}).Host(ctx, target(keys))
		return err
	}

	// Unknown: nothing pinned, nothing known.
	err := dial(remote.HostKeys{KnownHosts: []string{filepath.Join(f.dir, "none")}})
	var hk *remote.HostKeyError
	require.ErrorAs(t, err, &hk)
	assert.False(t, hk.Changed)
	assert.ErrorIs(t, err, errcode.Invalid)
	assert.Contains(t, err.Error(), "unknown host key ssh-ed25519 "+ssh.FingerprintSHA256(f.host.HostKey()))
	assert.Contains(t, err.Error(), "trustOnFirstUse")

	// Known through known_hosts (hashed, as ssh-keyscan -H writes it).
	kh := filepath.Join(f.dir, "known_hosts")
	require.NoError(t, os.WriteFile(kh, []byte("# comment\n"+hashedLine(t, f.host.Addr().String(), f.host.HostKey())+"\n"), 0o600))
	require.NoError(t, dial(remote.HostKeys{KnownHosts: []string{kh}}))

	// Trust on first use records the key, then it is known.
	tofu := filepath.Join(f.dir, "tofu", "known_hosts")
	var logs bytes.Buffer
	p := remote.NewPool(remote.Options{Logger: newLogger(&logs), AgentSocket: orNone("")})
	_, err = p.Host(ctx, target(remote.HostKeys{KnownHosts: []string{tofu}, TrustOnFirstUse: true}))
	require.NoError(t, err)
	require.NoError(t, p.Close())
	rec, err := os.ReadFile(tofu)
	require.NoError(t, err)
	assert.Contains(t, string(rec), strings.TrimSpace(string(ssh.MarshalAuthorizedKey(f.host.HostKey()))))
	info, err := os.Stat(tofu)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	assert.Contains(t, logs.String(), "trusting an unknown SSH host key on first use")
	require.NoError(t, dial(remote.HostKeys{KnownHosts: []string{tofu}}))

	// A changed key is refused: pinned, known, and even with trust on
	// first use.
	old := f.pinned
	_, err = f.host.ReplaceHostKey(ctx)
	require.NoError(t, err)
	for name, keys := range map[string]remote.HostKeys{
		"pinned":     {Pinned: []string{old}},
		"known":      {KnownHosts: []string{kh}},
		"tofu known": {KnownHosts: []string{tofu}, TrustOnFirstUse: true},
	} {
		t.Run("changed/"+name, func(t *testing.T) {
			err := dial(keys)
			var hk *remote.HostKeyError
			require.ErrorAs(t, err, &hk)
			assert.True(t, hk.Changed)
			assert.ErrorIs(t, err, errcode.Invalid)
			assert.Contains(t, err.Error(), addr+": the host key has CHANGED")
			assert.Contains(t, err.Error(), ssh.FingerprintSHA256(f.host.HostKey()))
		})
	}
	require.NoError(t, dial(remote.HostKeys{Pinned: []string{string(ssh.MarshalAuthorizedKey(f.host.HostKey()))}}), "the new pin works")
}

func TestAuthAndReachability(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, "auth")

	t.Run("wrong key", func(t *testing.T) {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		block, err := ssh.MarshalPrivateKey(priv, "")
		require.NoError(t, err)
		other := filepath.Join(f.dir, "other")
		require.NoError(t, os.WriteFile(other, pem.EncodeToMemory(block), 0o600))
		tg := f.target("root")
		tg.PrivateKeyPath = other
		_, err = newPool(t, remote.Options{}).Host(ctx, tg)
		require.ErrorIs(t, err, errcode.Unauthorized)
		assert.Contains(t, err.Error(), "user root was refused (keys tried: "+other)
	})
	t.Run("sudo wants a password", func(t *testing.T) {
		h, err := newPool(t, remote.Options{}).Host(ctx, f.target(k3stest.PasswordUser))
		require.NoError(t, err)
		_, err = h.Run(ctx, remote.Command{Step: "install", Script: "true"})
		require.ErrorIs(t, err, errcode.Unauthorized)
		assert.Contains(t, err.Error(), "needs passwordless sudo")
	})
	t.Run("passphrase-protected key needs the agent", func(t *testing.T) {
		block, err := ssh.MarshalPrivateKeyWithPassphrase(f.key, "", []byte("correct horse"))
		require.NoError(t, err)
		locked := filepath.Join(f.dir, "locked")
		require.NoError(t, os.WriteFile(locked, pem.EncodeToMemory(block), 0o600))
		tg := f.target("root")
		tg.PrivateKeyPath = locked
		t.Setenv("SSH_AUTH_SOCK", "")
		_, err = remote.NewPool(remote.Options{}).Host(ctx, tg)
		require.ErrorIs(t, err, errcode.Invalid)
		assert.Contains(t, err.Error(), "passphrase-protected: load it into your SSH agent (ssh-add "+locked+")")

		// Through an agent holding the key it works.
		sock := serveAgent(t, f.key)
		_, err = newPool(t, remote.Options{AgentSocket: sock}).Host(ctx, tg)
		require.NoError(t, err)
	})
	t.Run("agent only", func(t *testing.T) {
		tg := f.target("root")
		tg.PrivateKeyPath = ""
		_, err := newPool(t, remote.Options{AgentSocket: serveAgent(t, f.key)}).Host(ctx, tg)
		require.NoError(t, err)
	})
	t.Run("identity in memory", func(t *testing.T) {
		// Options.Identity is the only key used: the target's key file
		// (missing here) and the agent are not read.
		signer, err := ssh.NewSignerFromKey(f.key)
		require.NoError(t, err)
		tg := f.target("root")
		tg.PrivateKeyPath = filepath.Join(f.dir, "missing")
		_, err = newPool(t, remote.Options{Identity: signer}).Host(ctx, tg)
		require.NoError(t, err)
		// A target without a port gets the pool's DefaultPort.
		_, err = newPool(t, remote.Options{Identity: signer, DefaultPort: 2, DialTimeout: time.Second}).Host(ctx, tg)
		require.ErrorIs(t, err, errcode.Transient)
		assert.Contains(t, err.Error(), f.host.Addr().String()+":2")
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		other, err := ssh.NewSignerFromKey(priv)
		require.NoError(t, err)
		tg.PrivateKeyPath = ""
		_, err = newPool(t, remote.Options{Identity: other, AgentSocket: serveAgent(t, f.key)}).Host(ctx, tg)
		require.ErrorIs(t, err, errcode.Unauthorized)
	})
	t.Run("no key at all", func(t *testing.T) {
		tg := f.target("root")
		tg.PrivateKeyPath = ""
		_, err := newPool(t, remote.Options{}).Host(ctx, tg)
		require.ErrorIs(t, err, errcode.Invalid)
		assert.Contains(t, err.Error(), "no SSH key")
	})
	t.Run("powered off", func(t *testing.T) {
		require.NoError(t, f.host.PowerOff(ctx))
		_, err := newPool(t, remote.Options{DialTimeout: time.Second}).Host(ctx, f.target("root"))
		require.ErrorIs(t, err, errcode.Transient)
		assert.Contains(t, err.Error(), f.host.SSHAddr())
	})
}

// serveAgent serves an SSH agent holding key on a socket and returns its
// path.
func serveAgent(t *testing.T, key ed25519.PrivateKey) string {
	t.Helper()
	kr := agent.NewKeyring()
	require.NoError(t, kr.Add(agent.AddedKey{PrivateKey: key}))
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _ = agent.ServeAgent(kr, c) }()
		}
	}()
	return sock
}

// hashedLine is a known_hosts line for host with its name hashed.
func hashedLine(t *testing.T, host string, key ssh.PublicKey) string {
	t.Helper()
	return knownhosts.Line([]string{knownhosts.HashHostname(host)}, key)
}

func newLogger(w *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// writeTarget is the file the interrupted writes aim at: under /var,
// which every test host has of its own (an overlay), unlike /srv, which
// is the machine's and so every host's and every test binary's.
const writeTarget = "/var/lib/openctl-writetest/big"

// A write cancelled half-way leaves the old file and no temporary one.
func TestWriteFileCancelled(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, "cancel")
	h, err := newPool(t, remote.Options{}).Host(ctx, f.target(k3stest.DefaultUser))
	require.NoError(t, err)
	require.NoError(t, h.WriteFile(ctx, writeTarget, 0o644, strings.NewReader("old\n")))

	cctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(bytes.Repeat([]byte("x"), 1<<20)) // some data, then nothing more
		cancel()
	}()
	err = h.WriteFile(cctx, writeTarget, 0o644, pr)
	require.ErrorIs(t, err, context.Canceled)
	assertWriteUndone(ctx, t, f.host)
}

// assertWriteUndone waits until no write's script runs on the host any
// more, and then checks that writeTarget's directory holds it with its
// old content and no temporary file: judged before the script ends, a write that installs
// the part that came would pass.
func assertWriteUndone(ctx context.Context, t *testing.T, h *k3stest.Host) {
	t.Helper()
	require.Eventually(t, func() bool {
		// The end marker is on the script's command line; [d]: the
		// pattern does not match this command's own shell.
		_, err := h.Run(ctx, "pgrep", "-f", `openctl-en[d]-`)
		return err != nil
	}, 15*time.Second, 50*time.Millisecond, "the write's script ends")
	out, err := h.Run(ctx, "sh", "-c", "ls -a "+filepath.Dir(writeTarget)+"; cat "+writeTarget)
	require.NoError(t, err, "%s", out)
	assert.Equal(t, ".\n..\nbig\nold\n", string(out), "the old content, no temporary file")
}

// A connection that drops in the middle of a write sends the command no
// signal: its standard input just ends, as it does after the whole
// content. The write's end marker tells the two apart, so the part that
// came is not installed: the old content stays, and no temporary file.
func TestWriteFileConnectionDropped(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t, "drop")
	p := newPool(t, remote.Options{})
	h, err := p.Host(ctx, f.target(k3stest.DefaultUser))
	require.NoError(t, err)
	require.NoError(t, h.WriteFile(ctx, writeTarget, 0o644, strings.NewReader("old\n")))

	target := f.target(k3stest.DefaultUser)
	host, port, err := net.SplitHostPort(cutProxy(t, f.host.SSHAddr(), 256<<10))
	require.NoError(t, err)
	target.Host = host
	target.Port, err = strconv.Atoi(port)
	require.NoError(t, err)
	cut, err := newPool(t, remote.Options{}).Host(ctx, target)
	require.NoError(t, err)
	err = cut.WriteFile(ctx, writeTarget, 0o644, bytes.NewReader(bytes.Repeat([]byte("x"), 4<<20)))
	require.Error(t, err, "the connection was cut after 256 KiB of 4 MiB")
	assertWriteUndone(ctx, t, f.host)
}

// cutProxy forwards connections to addr and closes each one once it has
// carried limit bytes towards addr. It returns its own address.
func cutProxy(t *testing.T, addr string, limit int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(c, up) }()
				_, _ = io.CopyN(up, c, limit)
			}()
		}
	}()
	return ln.Addr().String()
}

// A host that powers off sends no reset: its connection goes silent. The
// pool's keepalive closes it, so that a command on it fails (and the
// pool dials afresh) instead of waiting for ever.
func TestSilentHostFailsInsteadOfHanging(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t, "silent")
	p := newPool(t, remote.Options{DialTimeout: 2 * time.Second, KeepAlive: 200 * time.Millisecond})
	h, err := p.Host(ctx, f.target("root"))
	require.NoError(t, err)
	_, err = h.Run(ctx, remote.Command{Step: "probe", Script: "true"})
	require.NoError(t, err)

	require.NoError(t, f.host.PowerOff(ctx))
	rctx, cancel := context.WithTimeout(ctx, time.Minute) // a bound for the test, far above the keepalive's
	defer cancel()
	_, err = h.Run(rctx, remote.Command{Step: "probe", Script: "true"})
	require.Error(t, err)
	assert.NoError(t, rctx.Err(), "failed by the keepalive, not by the test's bound: %v", err)
	assert.True(t, errcode.Is(err, errcode.Transient), "%v", err)
}
