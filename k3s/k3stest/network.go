package k3stest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/internal/testenv"
)

// Names of everything the harness creates on the machine. A killed test
// binary leaves them behind; the next [NewNetwork] removes them.
const (
	// StateDir holds one directory per network, n<N>, whose lock file the
	// owning test process holds (flock) for as long as it runs.
	StateDir = "/run/openctl-k3stest"
	// Prefix starts the name of every bridge, veth and network namespace:
	// octk<N> is network N's bridge, octk<N>-<i> the root end of host i's
	// link, octk<N>-<host> the host's network namespace.
	Prefix = "octk"
	// DefaultUser is the login user of every host, with passwordless sudo.
	DefaultUser = "openctl"
	// PasswordUser is a second login user whose sudo asks for
	// [Network.Password] (sudo -S reads it from standard input).
	PasswordUser = "openctl-pw"
)

// Network is a set of hosts on one bridge: 10.213.N.0/24, the test
// process at 10.213.N.1 on the bridge octk<N> in the root network
// namespace, host i at 10.213.N.(10+i). Nothing is routed: the hosts have
// no route but their /24, and the machine reaches the /24 only through
// the bridge. A Network is safe for concurrent use.
type Network struct {
	id     int
	dir    string
	lock   *os.File // flock held while the network lives
	prefix netip.Prefix
	bridge string
	helper string // the built k3stest-hostd
	signer ssh.Signer
	// keyFile holds signer's private key.
	keyFile string
	uid     int    // DefaultUser's uid and gid; PasswordUser's are uid+1
	pw      string // PasswordUser's password
	pwHash  string // its crypt(3) hash

	mu    sync.Mutex // guards hosts and closed
	hosts []*Host
	close bool
}

// Signer is the private key every host's root and DefaultUser accept
// (ed25519, generated per network).
func (n *Network) Signer() ssh.Signer { return n.signer }

// KeyFile is the path of Signer's private key (OpenSSH format, 0600), for
// clients that read a key file.
func (n *Network) KeyFile() string { return n.keyFile }

// Password is PasswordUser's password (random per network).
func (n *Network) Password() string { return n.pw }

// Prefix is the network's /24.
func (n *Network) Prefix() netip.Prefix { return n.prefix }

// Gateway is the test process's address on the bridge.
func (n *Network) Gateway() netip.Addr { return n.prefix.Addr().Next() }

// Hosts returns the hosts in the order they were added.
func (n *Network) Hosts() []*Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*Host(nil), n.hosts...)
}

// NewNetwork creates an empty network for tb and removes it (hosts,
// namespaces, links, state) when tb ends. It first removes what killed
// test binaries left behind. Without root or Debian's openssh-server the
// test is skipped, or fails under CI=true (testenv.Unavailable).
func NewNetwork(tb testing.TB) *Network {
	tb.Helper()
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		testenv.Unavailable(tb, "k3stest: test hosts need root on Linux (network, mount and PID namespaces)")
	}
	for _, tool := range []string{"/usr/sbin/sshd", "/usr/bin/sudo"} {
		if _, err := os.Stat(tool); err != nil {
			testenv.Unavailable(tb, "k3stest: %s is missing: install openssh-server and sudo (make test does: apt-get install openssh-server sudo)", tool)
		}
	}
	for _, tool := range []string{"ip", "nsenter", "go", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Unavailable(tb, "k3stest: %s is not on PATH", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := newNetwork(ctx)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			for _, h := range n.Hosts() {
				tb.Logf("k3stest: host %s:\n%s", h.name, h.diagnostics())
			}
		}
		if err := n.Close(); err != nil {
			tb.Errorf("%v", err)
		}
	})
	return n
}

// lockState takes StateDir/lock, the machine-wide lock under which every
// test binary creates and removes networks: a network is created whole
// (its directory and its locked owner.lock) and removed whole under it,
// so removeStale never sees one half made or half removed. unlock
// releases it.
func lockState() (unlock func(), err error) {
	if err := os.MkdirAll(StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("k3stest: %w", err)
	}
	global, err := os.OpenFile(filepath.Join(StateDir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("k3stest: %w", err)
	}
	if err := unix.Flock(int(global.Fd()), unix.LOCK_EX); err != nil {
		global.Close()
		return nil, fmt.Errorf("k3stest: lock: %w", err)
	}
	return func() { global.Close() }, nil
}

func newNetwork(ctx context.Context) (*Network, error) {
	unlock, err := lockState()
	if err != nil {
		return nil, err
	}
	defer unlock()
	live, err := removeStale(ctx)
	if err != nil {
		return nil, err
	}
	n := &Network{id: -1}
	for id := 0; id < 256; id++ {
		if live[id] {
			continue
		}
		n.id = id
		break
	}
	if n.id < 0 {
		return nil, errors.New("k3stest: all 256 networks are in use")
	}
	n.dir = filepath.Join(StateDir, "n"+strconv.Itoa(n.id))
	n.prefix = netip.MustParsePrefix(fmt.Sprintf("10.213.%d.0/24", n.id))
	n.bridge = Prefix + strconv.Itoa(n.id)
	if err := os.MkdirAll(n.dir, 0o700); err != nil {
		return nil, fmt.Errorf("k3stest: %w", err)
	}
	n.lock, err = os.OpenFile(filepath.Join(n.dir, "owner.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil {
		err = unix.Flock(int(n.lock.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err != nil {
		return nil, fmt.Errorf("k3stest: network %d: %w", n.id, err)
	}
	fmt.Fprintf(n.lock, "pid %d\n", os.Getpid())
	fail := func(err error) (*Network, error) {
		n.close = true
		_ = n.remove(ctx) // no host yet; the state lock is held
		return nil, err
	}
	gw := n.Gateway().String() + "/24"
	if err := ipCmds(ctx,
		[]string{"link", "add", n.bridge, "type", "bridge"},
		[]string{"addr", "add", gw, "dev", n.bridge},
		[]string{"link", "set", n.bridge, "up"},
	); err != nil {
		return fail(err)
	}
	if n.helper, err = buildHelper(ctx, n.dir); err != nil {
		return fail(err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fail(err)
	}
	if n.signer, err = ssh.NewSignerFromKey(priv); err != nil {
		return fail(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return fail(err)
	}
	n.keyFile = filepath.Join(n.dir, "id_ed25519")
	if err := os.WriteFile(n.keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		return fail(err)
	}
	if n.uid, err = freeUID(); err != nil {
		return fail(err)
	}
	pw := make([]byte, 12)
	_, _ = rand.Read(pw)
	n.pw = fmt.Sprintf("%x", pw)
	cmd := exec.CommandContext(ctx, "openssl", "passwd", "-6", "-stdin")
	cmd.Stdin = strings.NewReader(n.pw + "\n")
	hash, err := cmd.Output()
	if err != nil {
		return fail(fmt.Errorf("k3stest: hash the sudo password with openssl passwd -6: %w", err))
	}
	n.pwHash = strings.TrimSpace(string(hash))
	return n, nil
}

// Close powers every host off and removes the network: namespaces, links
// and state. It is called by the cleanup NewNetwork registers.
func (n *Network) Close() error {
	n.mu.Lock()
	hosts := n.hosts
	already := n.close
	n.close = true
	n.mu.Unlock()
	if already {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	for _, h := range hosts {
		if err := h.PowerOff(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	unlock, err := lockState()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	defer unlock()
	return errors.Join(append(errs, n.remove(ctx))...)
}

// remove removes the network's namespaces, links and state directory,
// then lets its owner.lock go. Call with the state lock held (lockState):
// until it is released, no other test binary takes the network's id.
func (n *Network) remove(ctx context.Context) error {
	err := removeNetwork(ctx, n.id, n.dir)
	if n.lock != nil {
		n.lock.Close()
	}
	return err
}

var netDirRE = regexp.MustCompile(`^n([0-9]+)$`)

// removeStale removes the networks whose owner died (their lock is free)
// and any namespace or link with the prefix that no live network owns. It
// returns the ids of the live networks. Call with the global lock held.
func removeStale(ctx context.Context) (map[int]bool, error) {
	live := map[int]bool{}
	ents, err := os.ReadDir(StateDir)
	if err != nil {
		return nil, fmt.Errorf("k3stest: %w", err)
	}
	var errs []error
	for _, e := range ents {
		m := netDirRE.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		id, _ := strconv.Atoi(m[1])
		dir := filepath.Join(StateDir, e.Name())
		// Never created here: under the state lock, a network without
		// owner.lock is one whose test binary died while making or
		// removing it.
		f, err := os.OpenFile(filepath.Join(dir, "owner.lock"), os.O_RDWR, 0)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			errs = append(errs, err)
			continue
		default:
			err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
			f.Close() // releases the lock we may have taken
			if errors.Is(err, unix.EWOULDBLOCK) {
				live[id] = true
				continue
			}
		}
		if err := removeNetwork(ctx, id, dir); err != nil {
			errs = append(errs, err)
		}
	}
	// Namespaces and links that no live network owns (a run killed
	// between creating them and its state, or a partial cleanup).
	nss, _ := listNetns()
	for _, ns := range nss {
		if id, ok := ownerID(ns); ok && !live[id] {
			if err := removeNetns(ctx, ns); err != nil {
				errs = append(errs, err)
			}
		}
	}
	links, _ := listLinks()
	for _, l := range links {
		if id, ok := ownerID(l); ok && !live[id] {
			_ = ipCmd(ctx, "link", "delete", l)
		}
	}
	return live, errors.Join(errs...)
}

var ownerRE = regexp.MustCompile(`^` + Prefix + `([0-9]+)(-.*)?$`)

func ownerID(name string) (int, bool) {
	m := ownerRE.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	id, err := strconv.Atoi(m[1])
	return id, err == nil && id < 256
}

// removeNetwork kills every process of network id's hosts and removes its
// namespaces, links and state directory.
func removeNetwork(ctx context.Context, id int, dir string) error {
	var errs []error
	nss, _ := listNetns()
	for _, ns := range nss {
		if got, ok := ownerID(ns); ok && got == id {
			if err := removeNetns(ctx, ns); err != nil {
				errs = append(errs, err)
			}
		}
	}
	links, _ := listLinks()
	for _, l := range links {
		if got, ok := ownerID(l); ok && got == id {
			if err := ipCmd(ctx, "link", "delete", l); err != nil && linkExists(l) {
				errs = append(errs, err)
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("k3stest: %w", err))
	}
	return errors.Join(errs...)
}

// removeNetns kills the processes in a namespace and deletes it.
func removeNetns(ctx context.Context, ns string) error {
	for range 50 {
		out, err := exec.CommandContext(ctx, "ip", "netns", "pids", ns).Output()
		if err != nil {
			break
		}
		pids := strings.Fields(string(out))
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		if err := backoff.Sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	if err := ipCmd(ctx, "netns", "delete", ns); err != nil {
		if _, serr := os.Stat(filepath.Join("/run/netns", ns)); serr == nil {
			return err
		}
	}
	return nil
}

func listNetns() ([]string, error) {
	ents, err := os.ReadDir("/run/netns")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), Prefix) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func listLinks() ([]string, error) {
	ents, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), Prefix) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

func linkExists(l string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", l))
	return err == nil
}

func ipCmd(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("k3stest: ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

func ipCmds(ctx context.Context, cmds ...[]string) error {
	for _, c := range cmds {
		if err := ipCmd(ctx, c...); err != nil {
			return err
		}
	}
	return nil
}

// buildHelper builds k3stest-hostd (static) into dir.
func buildHelper(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "k3stest-hostd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/openctl/openctl/k3s/k3stest/internal/hostd")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("k3stest: build k3stest-hostd: %w\n%s", err, b)
	}
	return out, nil
}

// freeUID finds a uid (and gid) at or above 2000 that the machine's
// /etc/passwd and /etc/group do not use.
func freeUID() (int, error) {
	used := map[int]bool{}
	for _, f := range []string{"/etc/passwd", "/etc/group"} {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, fmt.Errorf("k3stest: %w", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if p := strings.Split(line, ":"); len(p) > 2 {
				if id, err := strconv.Atoi(p[2]); err == nil {
					used[id] = true
				}
			}
		}
	}
	for id := 2000; id < 60000; id++ {
		if !used[id] && !used[id+1] {
			return id, nil
		}
	}
	return 0, errors.New("k3stest: no free uid")
}

// StateDir is the network's state directory (the hosts' disks, logs and
// the built k3stest-hostd), removed by Close.
func (n *Network) StateDir() string { return n.dir }
