package sandbox

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/openctl/openctl/internal/addrmap"
	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/sandbox/k3slite"
)

// DefaultSSHPort is the port the world's hosts answer SSH on.
const DefaultSSHPort = 2222

// DefaultNetwork is where the world's hosts live.
var DefaultNetwork = netip.MustParsePrefix("127.80.0.0/16")

// Options configure a World.
type Options struct {
	// Dir holds the hosts' file systems and the world's files; it is
	// created, and removed by Close. Empty: a new temporary directory.
	Dir string
	// Network is the loopback /16 the hosts live on. Unset: the first of
	// 127.80.0.0/16 (DefaultNetwork), 127.81.0.0/16, … 127.119.0.0/16
	// that no other world on this machine holds (each world holds the
	// SSH port of its network's 127.N.255.254 while it runs).
	Network netip.Prefix
	// SSHPort is the hosts' SSH port (default DefaultSSHPort).
	SSHPort int
	// Releases maps a k3s version the release server serves to the
	// version its binary reports, for a release that fails an upgrade's
	// health gate; any other version reports itself.
	Releases map[string]string
	// Logger receives the world's log; nil discards it.
	Logger *slog.Logger
}

// World is one sandbox: its hosts, the light k3s network they share, the
// release server, its SSH key. It is a proxmoxtest.Guests: give it to
// the Proxmox simulator whose VMs it runs. Safe for concurrent use.
type World struct {
	opts     Options
	dir      string
	ownDir   bool
	log      *slog.Logger
	identity ssh.Signer
	k3s      *k3slite.Network
	release  *http.Server
	relURL   string
	ctx      context.Context
	cancel   context.CancelFunc
	// reserved holds the world's network against other worlds.
	reserved net.Listener

	mu     sync.Mutex
	guests map[int]*guest
	keys   map[int]ssh.Signer // host keys, kept across reboots
	closed bool
}

var _ proxmoxtest.Guests = (*World)(nil)

// New starts a world: its directory, SSH key, k3s network and release
// server. Hosts come when the simulator boots VMs.
func New(opts Options) (*World, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Network.IsValid() && (opts.Network.Bits() != 16 || !opts.Network.Addr().Is4() || !opts.Network.Addr().IsLoopback()) {
		return nil, fmt.Errorf("sandbox: network %s: want a /16 of 127.0.0.0/8", opts.Network)
	}
	if opts.SSHPort == 0 {
		opts.SSHPort = DefaultSSHPort
	}
	w := &World{opts: opts, log: opts.Logger, guests: map[int]*guest{}, keys: map[int]ssh.Signer{}}
	if !opts.Network.IsValid() {
		if err := w.reserveNetwork(); err != nil {
			return nil, err
		}
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	var err error
	if opts.Dir == "" {
		if w.dir, err = os.MkdirTemp("", "openctl-sandbox-"); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		w.ownDir = true
	} else {
		w.dir = opts.Dir
		if err := os.MkdirAll(w.dir, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	fail := func(err error) (*World, error) {
		_ = w.Close()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fail(err)
	}
	if w.identity, err = ssh.NewSignerFromKey(key); err != nil {
		return fail(err)
	}
	block, err := ssh.MarshalPrivateKey(key, "openctl sandbox")
	if err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(filepath.Join(w.dir, "ssh"), 0o700); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(w.IdentityFile(), pem.EncodeToMemory(block), 0o600); err != nil {
		return fail(err)
	}
	if err := w.writeAgentBinaries(); err != nil {
		return fail(err)
	}
	w.k3s = k3slite.NewNetwork(k3slite.NetworkOptions{Logger: w.log})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	w.relURL = "http://" + ln.Addr().String()
	w.release = &http.Server{Handler: http.HandlerFunc(w.serveRelease)}
	go func() { _ = w.release.Serve(ln) }()
	return w, nil
}

// Dir is the world's directory.
func (w *World) Dir() string { return w.dir }

// Identity is the key every host accepts for its cloud-init user and
// root.
func (w *World) Identity() ssh.Signer { return w.identity }

// IdentityFile is the private key of Identity in OpenSSH form (0600), for
// a program in another process (providers.k3s.ssh.identityFile).
func (w *World) IdentityFile() string { return filepath.Join(w.dir, "ssh", "id_ed25519") }

// Network is the loopback /16 the world's hosts live on.
func (w *World) Network() netip.Prefix { return w.opts.Network }

// MapAddress returns where the world puts address a: an IPv4 address
// a.b.c.d outside 127.0.0.0/8 becomes the world's network's first two
// octets with c.d; loopback and IPv6 addresses are returned as they are.
func (w *World) MapAddress(a netip.Addr) netip.Addr { return addrmap.Into(w.opts.Network)(a) }

// EtcdMembers lists the etcd members of each k3s cluster on the world's
// network, by the node each belongs to (what "etcdctl member list" shows
// on its servers), keyed by the cluster's datastore ID.
func (w *World) EtcdMembers() map[string][]string { return w.k3s.EtcdMembers() }

// K3sHosts is how the K3s provider reaches the world's hosts (the
// k3s.Driver's SandboxHosts). Close is not the world's: the caller
// closes the world.
func (w *World) K3sHosts() *k3s.SandboxHosts {
	return &k3s.SandboxHosts{
		Dir:            filepath.Join(w.dir, "k3s-provider"),
		ReleaseURL:     w.relURL,
		AgentBinaryDir: filepath.Join(w.dir, "agent"),
		SSHPort:        w.opts.SSHPort,
		Identity:       w.identity,
		AddressMap:     w.MapAddress,
		Description:    fmt.Sprintf("simulated hosts on %s (SSH on port %d, an in-process k3s)", w.opts.Network, w.opts.SSHPort),
		Close:          func() error { return nil },
	}
}

// Close powers every host off, stops the k3s network and the release
// server and removes the directory if New made it.
func (w *World) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	guests := w.guests
	w.guests = map[int]*guest{}
	w.mu.Unlock()
	for _, g := range guests {
		g.stop()
	}
	w.cancel()
	var errs []error
	if w.reserved != nil {
		w.reserved.Close()
	}
	if w.release != nil {
		errs = append(errs, w.release.Close())
	}
	if w.k3s != nil {
		errs = append(errs, w.k3s.Close())
	}
	if w.ownDir {
		errs = append(errs, os.RemoveAll(w.dir))
	}
	return errors.Join(errs...)
}

// releasePath is /<version>/<asset> of the release server.
var releasePath = regexp.MustCompile(`^/(v1\.[0-9]+\.[0-9]+\+k3s[0-9]+)/(k3s|k3s-arm64|k3s-armhf|sha256sum-(amd64|arm64|arm)\.txt)$`)

// serveRelease serves any k3s version as the release page lays it out:
// the binary of each architecture and its sha256sum-<arch>.txt.
func (w *World) serveRelease(rw http.ResponseWriter, r *http.Request) {
	m := releasePath.FindStringSubmatch(r.URL.Path)
	if r.Method != http.MethodGet || m == nil {
		http.NotFound(rw, r)
		return
	}
	version, asset := m[1], m[2]
	reports := version
	if v, ok := w.opts.Releases[version]; ok {
		reports = v
	}
	bin := k3slite.Binary(reports)
	if !strings.HasPrefix(asset, "sha256sum-") {
		rw.Header().Set("Content-Type", "application/octet-stream")
		_, _ = rw.Write(bin)
		return
	}
	var b strings.Builder
	sum := fmt.Sprintf("%x", sha256.Sum256(bin))
	for _, name := range []string{"k3s", "k3s-arm64", "k3s-armhf"} {
		fmt.Fprintf(&b, "%s  %s\n", sum, name)
	}
	_, _ = rw.Write([]byte(b.String()))
}

// hostKey returns the host key of VM vmid, made at its first boot.
// Callers hold w.mu.
func (w *World) hostKey(vmid int) (ssh.Signer, error) {
	if k, ok := w.keys[vmid]; ok {
		return k, nil
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	s, err := ssh.NewSignerFromKey(key)
	if err != nil {
		return nil, err
	}
	w.keys[vmid] = s
	return s, nil
}

// hostDir is the file system of VM vmid.
func (w *World) hostDir(vmid int) string {
	return filepath.Join(w.dir, "vms", strconv.Itoa(vmid))
}

// reserveNetwork picks the first free network of 127.80.0.0/16 …
// 127.119.0.0/16 and holds it.
func (w *World) reserveNetwork() error {
	var last error
	for n := byte(80); n < 120; n++ {
		ln, err := net.Listen("tcp", netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, n, 255, 254}), uint16(w.opts.SSHPort)).String())
		if err != nil {
			last = err
			continue
		}
		w.reserved = ln
		w.opts.Network = netip.PrefixFrom(netip.AddrFrom4([4]byte{127, n, 0, 0}), 16)
		return nil
	}
	return fmt.Errorf("sandbox: no free network in 127.80.0.0-127.119.255.255 for port %d (%v)", w.opts.SSHPort, last)
}
