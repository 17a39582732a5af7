package k3stest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	"golang.org/x/sys/unix"

	"github.com/openctl/openctl/backoff"
)

// Flavour is a host's init system.
type Flavour string

// The init systems a host can have.
const (
	// Systemd hosts have /run/systemd/system and the systemctl,
	// journalctl stand-ins at /usr/bin.
	Systemd Flavour = "systemd"
	// OpenRC hosts have /run/openrc, /sbin/openrc-run, rc-service and
	// rc-update, and no systemctl.
	OpenRC Flavour = "openrc"
)

// HostOptions configure [Network.AddHost].
type HostOptions struct {
	// Flavour is the host's init system. Default Systemd.
	Flavour Flavour
}

// Host is one machine of a [Network]: its own network, mount, UTS, IPC
// and PID namespaces, a real sshd, and a supervisor standing in for
// systemd or OpenRC. Its disk (/etc, /usr, /var, /root, /home as overlays
// or directories under the network's state) survives PowerOff; /run and
// /tmp do not. A Host is safe for concurrent use.
type Host struct {
	n       *Network
	name    string
	index   int
	addr    netip.Addr
	flavour Flavour
	dir     string // state directory, outside the host
	netns   string
	veth    string // root end of the host's link

	mu      sync.Mutex // guards hostKey, init, exited
	hostKey ssh.PublicKey
	init    *exec.Cmd     // pid 1 of the host (nil when off)
	exited  chan struct{} // closed when init has been reaped
}

var hostNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,19}$`)

// AddHost creates a host, boots it and waits until its sshd answers with
// its host key. Hosts may be added concurrently.
func (n *Network) AddHost(ctx context.Context, name string, opts HostOptions) (*Host, error) {
	if !hostNameRE.MatchString(name) {
		return nil, fmt.Errorf("k3stest: host name %q: want [a-z][a-z0-9-]{0,19}", name)
	}
	if opts.Flavour == "" {
		opts.Flavour = Systemd
	}
	if opts.Flavour != Systemd && opts.Flavour != OpenRC {
		return nil, fmt.Errorf("k3stest: unknown flavour %q", opts.Flavour)
	}
	n.mu.Lock()
	if n.close {
		n.mu.Unlock()
		return nil, errors.New("k3stest: network closed")
	}
	for _, h := range n.hosts {
		if h.name == name {
			n.mu.Unlock()
			return nil, fmt.Errorf("k3stest: host %s exists", name)
		}
	}
	index := len(n.hosts)
	if index >= 200 {
		n.mu.Unlock()
		return nil, errors.New("k3stest: at most 200 hosts per network")
	}
	addr := n.prefix.Addr()
	for range 10 + index {
		addr = addr.Next()
	}
	h := &Host{
		n: n, name: name, index: index, addr: addr, flavour: opts.Flavour,
		dir:   filepath.Join(n.dir, "hosts", name),
		netns: fmt.Sprintf("%s%d-%s", Prefix, n.id, name),
		veth:  fmt.Sprintf("%s%d-%d", Prefix, n.id, index),
	}
	n.hosts = append(n.hosts, h)
	n.mu.Unlock()
	if err := h.create(ctx); err != nil {
		return nil, err
	}
	if err := h.PowerOn(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// Name is the host's name and hostname.
func (h *Host) Name() string { return h.name }

// Addr is the host's address.
func (h *Host) Addr() netip.Addr { return h.addr }

// SSHAddr is host:port of the host's sshd.
func (h *Host) SSHAddr() string { return net.JoinHostPort(h.addr.String(), "22") }

// Flavour is the host's init system.
func (h *Host) Flavour() Flavour { return h.flavour }

// HostKey is the public key the host's sshd presents now.
func (h *Host) HostKey() ssh.PublicKey {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hostKey
}

// KnownHostsLine is the host's known_hosts line (address and key).
func (h *Host) KnownHostsLine() string {
	return knownhosts.Line([]string{h.addr.String()}, h.HostKey())
}

// ClientConfig is an SSH client configuration for user (root or
// DefaultUser) that pins the host's current key.
func (h *Host) ClientConfig(user string) *ssh.ClientConfig {
	return &ssh.ClientConfig{
		User:              user,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(h.n.signer)},
		HostKeyCallback:   ssh.FixedHostKey(h.HostKey()),
		HostKeyAlgorithms: []string{ssh.KeyAlgoED25519},
		Timeout:           5 * time.Second,
	}
}

// Dial connects to the host's sshd with cfg (see ClientConfig).
func (h *Host) Dial(ctx context.Context, cfg *ssh.ClientConfig) (*ssh.Client, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", h.SSHAddr())
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	sc, chans, reqs, err := ssh.NewClientConn(c, h.SSHAddr(), cfg)
	if err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return ssh.NewClient(sc, chans, reqs), nil
}

// create makes the host's namespace, link and disk.
func (h *Host) create(ctx context.Context) error {
	pfx := strconv.Itoa(h.n.prefix.Bits())
	if err := ipCmds(ctx,
		[]string{"netns", "add", h.netns},
		[]string{"link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns", h.netns},
		[]string{"link", "set", h.veth, "master", h.n.bridge},
		[]string{"-n", h.netns, "addr", "add", h.addr.String() + "/" + pfx, "dev", "eth0"},
		[]string{"-n", h.netns, "link", "set", "lo", "up"},
	); err != nil {
		return err
	}
	return h.provision()
}

// provision writes the host's first disk contents into the upper layers.
func (h *Host) provision() error {
	for _, d := range []string{"etc/upper", "etc/work", "usr/upper", "usr/work", "var/upper", "var/work", "root", "home", "log", "systemd"} {
		if err := os.MkdirAll(filepath.Join(h.dir, d), 0o755); err != nil {
			return fmt.Errorf("k3stest: %w", err)
		}
	}
	etc := filepath.Join(h.dir, "etc/upper")
	usr := filepath.Join(h.dir, "usr/upper")
	uid, pwUID := strconv.Itoa(h.n.uid), strconv.Itoa(h.n.uid+1)
	user, pwUser := DefaultUser, PasswordUser
	files := map[string]string{
		"hostname":          h.name + "\n",
		"hosts":             fmt.Sprintf("127.0.0.1\tlocalhost\n%s\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n", h.addr, h.name),
		"sudoers.d/k3stest": fmt.Sprintf("# k3stest: the login users' sudo\n%s ALL=(ALL:ALL) NOPASSWD: ALL\n%s ALL=(ALL:ALL) ALL\n", user, pwUser),
		"ssh/sshd_config":   sshdConfig,
	}
	appendTo := map[string]string{
		"passwd": fmt.Sprintf("%s:x:%s:%s:k3stest login user:/home/%s:/bin/bash\n%s:x:%s:%s:k3stest login user with a sudo password:/home/%s:/bin/bash\n",
			user, uid, uid, user, pwUser, pwUID, pwUID, pwUser),
		"group":   fmt.Sprintf("%s:x:%s:\n%s:x:%s:\n", user, uid, pwUser, pwUID),
		"shadow":  fmt.Sprintf("%s:*:19000:0:99999:7:::\n%s:%s:19000:0:99999:7:::\n", user, pwUser, h.n.pwHash),
		"gshadow": fmt.Sprintf("%s:!::\n%s:!::\n", user, pwUser),
	}
	for f, line := range appendTo {
		b, err := os.ReadFile(filepath.Join("/etc", f))
		if err != nil && f != "gshadow" {
			return fmt.Errorf("k3stest: %w", err)
		}
		files[f] = string(b) + line
	}
	for f, content := range files {
		mode := os.FileMode(0o644)
		switch f {
		case "shadow", "gshadow":
			mode = 0o640
		case "sudoers.d/k3stest":
			mode = 0o440
		}
		if err := writeFile(filepath.Join(etc, f), []byte(content), mode); err != nil {
			return err
		}
	}
	if err := h.writeHostKey(); err != nil {
		return err
	}
	auth := ssh.MarshalAuthorizedKey(h.n.signer.PublicKey())
	if err := writeFile(filepath.Join(h.dir, "root/.ssh/authorized_keys"), auth, 0o600); err != nil {
		return err
	}
	if err := os.Chmod(filepath.Join(h.dir, "root"), 0o700); err != nil {
		return err
	}
	for i, u := range []string{user, pwUser} {
		id := h.n.uid + i
		home := filepath.Join(h.dir, "home", u)
		if err := writeFile(filepath.Join(home, ".ssh/authorized_keys"), auth, 0o600); err != nil {
			return err
		}
		for _, p := range []string{home, filepath.Join(home, ".ssh"), filepath.Join(home, ".ssh/authorized_keys")} {
			if err := os.Chown(p, id, id); err != nil {
				return err
			}
		}
	}
	// The supervisor and the commands it answers.
	b, err := os.ReadFile(h.n.helper)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(usr, "lib/k3stest/k3stest-hostd"), b, 0o755); err != nil {
		return err
	}
	const target = "/usr/lib/k3stest/k3stest-hostd"
	links := []string{"bin/systemctl", "bin/journalctl"}
	if _, err := os.Stat("/usr/bin/systemd-notify"); err != nil {
		links = append(links, "bin/systemd-notify")
	}
	if h.flavour == OpenRC {
		links = []string{"sbin/rc-service", "sbin/rc-update", "sbin/openrc-run"}
		// Hide the machine's systemctl and journalctl (overlay whiteouts).
		for _, p := range []string{"bin/systemctl", "bin/journalctl"} {
			if _, err := os.Stat(filepath.Join("/usr", p)); err == nil {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(usr, p)), 0o755); err != nil {
					return err
				}
				if err := unix.Mknod(filepath.Join(usr, p), unix.S_IFCHR|0o000, 0); err != nil {
					return fmt.Errorf("k3stest: whiteout %s: %w", p, err)
				}
			}
		}
	}
	for _, l := range links {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(usr, l)), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(target, filepath.Join(usr, l)); err != nil {
			return fmt.Errorf("k3stest: %w", err)
		}
	}
	return nil
}

const sshdConfig = `# k3stest host
Port 22
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM yes
X11Forwarding no
PrintMotd no
PidFile /run/sshd.pid
AcceptEnv LANG LC_*
Subsystem sftp /usr/lib/openssh/sftp-server
LogLevel VERBOSE
`

// newHostKey generates an ed25519 host key: the private key file's
// contents, the public key file's contents and the public key.
func (h *Host) newHostKey() (priv, pub []byte, key ssh.PublicKey, err error) {
	edPub, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	block, err := ssh.MarshalPrivateKey(edPriv, "root@"+h.name)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err = ssh.NewPublicKey(edPub)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(block), ssh.MarshalAuthorizedKey(key), key, nil
}

// writeHostKey generates the first host key into the (not yet mounted)
// upper layer of the host's /etc.
func (h *Host) writeHostKey() error {
	priv, pub, key, err := h.newHostKey()
	if err != nil {
		return err
	}
	dir := filepath.Join(h.dir, "etc/upper/ssh")
	if err := writeFile(filepath.Join(dir, "ssh_host_ed25519_key"), priv, 0o600); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "ssh_host_ed25519_key.pub"), pub, 0o644); err != nil {
		return err
	}
	h.mu.Lock()
	h.hostKey = key
	h.mu.Unlock()
	return nil
}

func writeFile(p string, b []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("k3stest: %w", err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return fmt.Errorf("k3stest: %w", err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return fmt.Errorf("k3stest: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("k3stest: %w", err)
	}
	return nil
}

// Running reports whether the host is powered on.
func (h *Host) Running() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.init != nil
}

// PowerOn boots the host: its link comes up, pid 1 starts in fresh mount,
// UTS, IPC and PID namespaces inside the host's network namespace, sets
// up the file system and the hostname, and starts the supervisor, which
// starts sshd and every enabled service. It returns when sshd answers
// with the host key. Powering on a running host does nothing.
func (h *Host) PowerOn(ctx context.Context) error {
	h.mu.Lock()
	if h.init != nil {
		h.mu.Unlock()
		return nil
	}
	if err := ipCmds(ctx,
		[]string{"link", "set", h.veth, "up"},
		[]string{"-n", h.netns, "link", "set", "eth0", "up"},
	); err != nil {
		h.mu.Unlock()
		return err
	}
	console, err := os.OpenFile(filepath.Join(h.dir, "console.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		h.mu.Unlock()
		return fmt.Errorf("k3stest: %w", err)
	}
	defer console.Close()
	// nsenter joins the host's network namespace and execs pid 1, so that
	// the new PID namespace's init is k3stest-hostd itself.
	cmd := exec.Command("nsenter", "--net=/run/netns/"+h.netns, "--",
		h.n.helper, "init", "-state", h.dir, "-flavour", string(h.flavour))
	cmd.Stdout, cmd.Stderr = console, console
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC | syscall.CLONE_NEWPID,
		// The host dies with the test binary; what is left (namespaces,
		// links, state) the next NewNetwork removes.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		h.mu.Unlock()
		return fmt.Errorf("k3stest: boot %s: %w", h.name, err)
	}
	exited := make(chan struct{})
	h.init, h.exited = cmd, exited
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	h.mu.Unlock()
	if err := h.WaitSSH(ctx); err != nil {
		return fmt.Errorf("k3stest: boot %s: %w\n%s", h.name, err, h.diagnostics())
	}
	return nil
}

// WaitSSH waits until the host's sshd completes a handshake presenting the
// host's current key, polling until ctx ends or the host stops.
func (h *Host) WaitSSH(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	for {
		h.mu.Lock()
		exited := h.exited
		h.mu.Unlock()
		if exited == nil {
			return errors.New("powered off")
		}
		select {
		case <-exited:
			return errors.New("pid 1 exited")
		default:
		}
		dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := h.Dial(dctx, h.ClientConfig("root"))
		dcancel()
		if err == nil {
			c.Close()
			return nil
		}
		last = err
		if err := backoff.Sleep(ctx, 25*time.Millisecond); err != nil {
			return fmt.Errorf("sshd of %s did not answer: %v", h.name, last)
		}
	}
}

// PowerOff takes the host's link down (so that peers see silence, not
// resets) and kills pid 1, and with it every process of the host. Its disk
// stays. Powering off a stopped host does nothing.
func (h *Host) PowerOff(ctx context.Context) error {
	h.mu.Lock()
	cmd, exited := h.init, h.exited
	h.mu.Unlock()
	if cmd == nil {
		return nil
	}
	err := ipCmd(ctx, "link", "set", h.veth, "down")
	_ = cmd.Process.Kill()
	select {
	case <-exited:
	case <-ctx.Done():
		return fmt.Errorf("k3stest: power off %s: %w", h.name, ctx.Err())
	}
	h.mu.Lock()
	h.init, h.exited = nil, nil
	h.mu.Unlock()
	return err
}

// ReplaceHostKey gives the host a new SSH host key, makes sshd load it
// (SIGHUP) and waits until sshd presents it. Clients pinning the old key
// are then refused.
func (h *Host) ReplaceHostKey(ctx context.Context) (ssh.PublicKey, error) {
	if !h.Running() {
		return nil, fmt.Errorf("k3stest: %s is powered off", h.name)
	}
	priv, pub, key, err := h.newHostKey()
	if err != nil {
		return nil, err
	}
	// Written from inside: an overlay's upper layer must not change under it.
	if err := h.WriteFile(ctx, "/etc/ssh/ssh_host_ed25519_key", priv, 0o600); err != nil {
		return nil, err
	}
	if err := h.WriteFile(ctx, "/etc/ssh/ssh_host_ed25519_key.pub", pub, 0o644); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.hostKey = key
	h.mu.Unlock()
	if out, err := h.Run(ctx, "sh", "-c", "kill -HUP \"$(cat /run/sshd.pid)\""); err != nil {
		return nil, fmt.Errorf("k3stest: reload sshd on %s: %w: %s", h.name, err, out)
	}
	if err := h.WaitSSH(ctx); err != nil {
		return nil, err
	}
	return h.HostKey(), nil
}

// Command returns a command that runs argv inside the host as root: in
// all its namespaces (nsenter), with a clean environment. The host must
// be running.
func (h *Host) Command(ctx context.Context, argv ...string) (*exec.Cmd, error) {
	h.mu.Lock()
	cmd := h.init
	h.mu.Unlock()
	if cmd == nil {
		return nil, fmt.Errorf("k3stest: %s is powered off", h.name)
	}
	args := append([]string{"-t", strconv.Itoa(cmd.Process.Pid), "-m", "-u", "-i", "-n", "-p", "-r", "-w", "--"}, argv...)
	c := exec.CommandContext(ctx, "nsenter", args...)
	c.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8"}
	c.Dir = "/"
	return c, nil
}

// Run runs argv inside the host as root and returns its combined output.
func (h *Host) Run(ctx context.Context, argv ...string) ([]byte, error) {
	c, err := h.Command(ctx, argv...)
	if err != nil {
		return nil, err
	}
	return c.CombinedOutput()
}

// WriteFile writes a file inside the host (parents created 0755).
func (h *Host) WriteFile(ctx context.Context, path string, data []byte, mode os.FileMode) error {
	return h.writeFrom(ctx, path, bytes.NewReader(data), mode)
}

// CopyFile copies src, a file of the machine the test runs on, to path
// inside the host (parents created 0755), streaming it. Hand a host a
// copy, never the test's path: a host has its own /tmp, /run, /root,
// /home and /var/log, so a path under one of them (a clone of the
// repository in /tmp or a home directory, a test's TempDir) names
// nothing inside the host.
func (h *Host) CopyFile(ctx context.Context, src, path string, mode os.FileMode) error {
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("k3stest: copy to %s on %s: %w", path, h.name, err)
	}
	defer f.Close()
	return h.writeFrom(ctx, path, f, mode)
}

// writeFrom writes what r holds to path inside the host.
func (h *Host) writeFrom(ctx context.Context, path string, r io.Reader, mode os.FileMode) error {
	c, err := h.Command(ctx, "install", "-D", "-m", fmt.Sprintf("%04o", mode.Perm()), "/dev/stdin", path)
	if err != nil {
		return err
	}
	c.Stdin = r
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("k3stest: write %s on %s: %w: %s", path, h.name, err, out)
	}
	return nil
}

// ReadFile reads a file inside the host.
func (h *Host) ReadFile(ctx context.Context, path string) ([]byte, error) {
	c, err := h.Command(ctx, "cat", "--", path)
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return nil, fmt.Errorf("k3stest: read %s on %s: %w: %s", path, h.name, err, stderr.Bytes())
	}
	return out, nil
}

// diagnostics returns the tails of the host's console, supervisor and
// sshd logs, for a failing test's output.
func (h *Host) diagnostics() string {
	var b strings.Builder
	for _, f := range []string{"console.log", "log/k3stest-hostd.log", "log/sshd.log"} {
		data, err := os.ReadFile(filepath.Join(h.dir, f))
		if err != nil {
			continue
		}
		if len(data) > 4096 {
			data = data[len(data)-4096:]
		}
		fmt.Fprintf(&b, "--- %s\n%s", f, data)
	}
	return b.String()
}

// Netns is the name of the host's network namespace (ip netns exec NAME).
func (h *Host) Netns() string { return h.netns }
