package vmhost_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/remote"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// sshFixture is a host served over SSH on the loopback.
type sshFixture struct {
	host    *vmhost.Host
	port    int
	keyPath string
	pinned  string
	hostKey ssh.Signer
	client  ssh.Signer
	done    chan error
	cancel  context.CancelFunc
}

func newSSHFixture(t *testing.T, opts vmhost.Options) *sshFixture {
	t.Helper()
	h, err := vmhost.New(filepath.Join(t.TempDir(), "root"), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	hostKey, err := ssh.NewSignerFromKey(hostPriv)
	require.NoError(t, err)
	_, clientPriv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	client, err := ssh.NewSignerFromKey(clientPriv)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(clientPriv, "")
	require.NoError(t, err)
	keyPath := filepath.Join(t.TempDir(), "id_ed25519")
	require.NoError(t, os.WriteFile(keyPath, pem.EncodeToMemory(block), 0o600))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	f := &sshFixture{host: h, port: ln.Addr().(*net.TCPAddr).Port, keyPath: keyPath, hostKey: hostKey, client: client,
		pinned: string(ssh.MarshalAuthorizedKey(hostKey.PublicKey())), done: make(chan error, 1), cancel: cancel}
	keys := map[string][]ssh.PublicKey{"root": {client.PublicKey()}, "ubuntu": {client.PublicKey()}}
	go func() {
		f.done <- vmhost.ServeSSH(ctx, ln, vmhost.SSHConfig{HostKey: hostKey, AuthorizedKeys: keys, Host: h})
	}()
	t.Cleanup(func() {
		cancel()
		<-f.done
	})
	return f
}

func (f *sshFixture) target(user string) remote.Target {
	return remote.Target{Host: "127.0.0.1", Port: f.port, User: user, PrivateKeyPath: f.keyPath, HostKeys: remote.HostKeys{Pinned: []string{f.pinned}}}
}

func newPool(t *testing.T) *remote.Pool {
	p := remote.NewPool(remote.Options{DialTimeout: 5 * time.Second, AgentSocket: "/nonexistent/agent.sock"})
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// fakeK3s answers --version as k3s does.
func fakeK3s(_ context.Context, c *vmhost.Call) int {
	if len(c.Args) > 1 && c.Args[1] == "--version" {
		c.Stdout.Write([]byte("k3s version v1.37.2+k3s1 (abcdef12)\ngo version go1.26.0\n"))
		return 0
	}
	return 1
}

// fakeSystemctl knows one active unit, k3s.
func fakeSystemctl(_ context.Context, c *vmhost.Call) int {
	if len(c.Args) > 1 && c.Args[1] == "is-active" && c.Args[len(c.Args)-1] == "k3s" {
		return 0
	}
	return 3
}

// TestSSHRemote drives the host through openctl's remote package, as
// the K3s provider does: files written, read and summed, then the
// provider's probe, as root and through sudo -n.
func TestSSHRemote(t *testing.T) {
	f := newSSHFixture(t, vmhost.Options{
		Hostname:  "cp-0",
		Init:      vmhost.InitSystemd,
		Addresses: []vmhost.Address{{Interface: "eth0", Prefix: netip.MustParsePrefix("10.0.0.11/24")}},
		Programs:  map[string]vmhost.Program{"k3s": fakeK3s, "/usr/bin/systemctl": fakeSystemctl},
	})
	ctx := t.Context()
	p := newPool(t)
	for _, user := range []string{"root", "ubuntu"} {
		t.Run(user, func(t *testing.T) {
			h, err := p.Host(ctx, f.target(user))
			require.NoError(t, err)

			sum, err := h.SHA256(ctx, "/usr/local/bin/k3s-absent")
			require.NoError(t, err)
			assert.Empty(t, sum, "no such file")
			_, err = h.ReadFile(ctx, "/etc/rancher/k3s/k3s.yaml")
			assert.True(t, errcode.Is(err, errcode.NotFound), "%v", err)

			bin := []byte("\x7fELF pretend k3s binary " + user)
			require.NoError(t, h.WriteFile(ctx, "/usr/local/bin/k3s", 0o755, bytes.NewReader(bin)))
			env := []byte("K3S_TOKEN='secret'\n")
			require.NoError(t, h.WriteFile(ctx, "/etc/systemd/system/k3s.service.env", 0o600, bytes.NewReader(env)))
			got, err := h.ReadFile(ctx, "/etc/systemd/system/k3s.service.env")
			require.NoError(t, err)
			assert.Equal(t, env, got)
			sum, err = h.SHA256(ctx, "/usr/local/bin/k3s")
			require.NoError(t, err)
			assert.Equal(t, sha256Hex(bin), sum)
			fi, err := os.Stat(filepath.Join(f.host.Dir(), "etc/systemd/system/k3s.service.env"))
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
			leftovers, err := filepath.Glob(filepath.Join(f.host.Dir(), "usr/local/bin/*openctl-*"))
			require.NoError(t, err)
			assert.Empty(t, leftovers, "no temporary files left")

			// kubevip.go's check that the VIP has left.
			res, err := h.Run(ctx, remote.Command{Step: "check the VIP has left", Script: "ip -o addr show to " + remote.Quote("10.0.0.100")})
			require.NoError(t, err)
			assert.Empty(t, res.Stdout)

			// agent.go's directory.
			_, err = h.Run(ctx, remote.Command{Step: "make dir", Script: "install -d -m 0700 " + remote.Quote("/etc/openctl-agent")})
			require.NoError(t, err)

			_, err = h.Run(ctx, remote.Command{Step: "fail", Script: "echo why >&2; exit 3"})
			var ee *remote.ExitError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, 3, ee.Status)
			assert.Equal(t, "why", ee.Tail)
		})
	}
	assert.Equal(t, 2, p.Opened(f.target("root").Addr()), "one connection per user")
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestSSHCancel: a cancelled remote command stops on the host (the
// signal remote sends ends it) and the connection stays usable.
func TestSSHCancel(t *testing.T) {
	f := newSSHFixture(t, vmhost.Options{})
	p := newPool(t)
	h, err := p.Host(t.Context(), f.target("ubuntu"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = h.Run(ctx, remote.Command{Step: "hang", Script: "sleep 60"})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 2*time.Second, "ended by the signal, before remote's SIGKILL grace")
	res, err := h.Run(t.Context(), remote.Command{Step: "after", Script: "echo still here"})
	require.NoError(t, err)
	assert.Equal(t, "still here\n", string(res.Stdout))
}

// TestSSHRefusals: host keys are checked, only public keys of the user
// log in, and only exec is served.
func TestSSHRefusals(t *testing.T) {
	f := newSSHFixture(t, vmhost.Options{})
	ctx := t.Context()

	_, otherPriv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	other, err := ssh.NewSignerFromKey(otherPriv)
	require.NoError(t, err)
	tg := f.target("root")
	tg.HostKeys.Pinned = []string{string(ssh.MarshalAuthorizedKey(other.PublicKey()))}
	_, err = newPool(t).Host(ctx, tg)
	var hk *remote.HostKeyError
	require.ErrorAs(t, err, &hk, "a pinned key that differs is refused")
	assert.True(t, hk.Changed)

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(f.port))
	dial := func(user string, auth ...ssh.AuthMethod) (*ssh.Client, error) {
		return ssh.Dial("tcp", addr, &ssh.ClientConfig{User: user, Auth: auth, HostKeyCallback: ssh.FixedHostKey(f.hostKey.PublicKey()), Timeout: 5 * time.Second})
	}
	_, err = dial("root", ssh.PublicKeys(other))
	assert.Error(t, err, "an unknown key")
	_, err = dial("nobody", ssh.PublicKeys(f.client))
	assert.Error(t, err, "a user without keys")
	_, err = dial("root", ssh.Password("root"))
	assert.Error(t, err, "passwords are not offered")

	c, err := dial("root", ssh.PublicKeys(f.client))
	require.NoError(t, err)
	defer c.Close()
	s, err := c.NewSession()
	require.NoError(t, err)
	assert.Error(t, s.RequestPty("xterm", 24, 80, nil), "pty-req")
	assert.Error(t, s.Shell(), "shell")
	ok, err := s.SendRequest("auth-agent-req@openssh.com", true, nil)
	require.NoError(t, err)
	assert.False(t, ok, "agent forwarding")
	assert.Error(t, s.RequestSubsystem("sftp"), "subsystem")
	require.NoError(t, s.Setenv("GREETING", "hello"))
	out, err := s.Output("echo $GREETING from $(whoami)")
	require.NoError(t, err)
	assert.Equal(t, "hello from root\n", string(out))

	_, err = c.Dial("tcp", "127.0.0.1:22")
	assert.Error(t, err, "port forwarding")
	ok, _, err = c.SendRequest("tcpip-forward", true, ssh.Marshal(struct {
		Addr string
		Port uint32
	}{"127.0.0.1", 0}))
	require.NoError(t, err)
	assert.False(t, ok, "remote forwarding")

	s, err = c.NewSession()
	require.NoError(t, err)
	err = s.Run("exit 7")
	var ee *ssh.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 7, ee.ExitStatus())

	// Ending ctx closes the listener and every connection.
	f.cancel()
	select {
	case err := <-f.done:
		assert.NoError(t, err)
		f.done <- nil // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatal("ServeSSH did not return")
	}
	_, err = c.NewSession()
	assert.Error(t, err)
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "the listener is closed")
}

// TestSSHConcurrent: sessions of one connection run at once.
func TestSSHConcurrent(t *testing.T) {
	f := newSSHFixture(t, vmhost.Options{})
	ctx := t.Context()
	h, err := newPool(t).Host(ctx, f.target("ubuntu"))
	require.NoError(t, err)
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			p := "/var/lib/test/f" + strconv.Itoa(i)
			data := []byte(strings.Repeat(strconv.Itoa(i), 1000+i))
			if err := h.WriteFile(ctx, p, 0o644, bytes.NewReader(data)); err != nil {
				errs <- err
				return
			}
			got, err := h.ReadFile(ctx, p)
			if err == nil && !bytes.Equal(got, data) {
				err = errors.New("read back something else at " + p)
			}
			errs <- err
		}()
	}
	for range 8 {
		assert.NoError(t, <-errs)
	}
}
