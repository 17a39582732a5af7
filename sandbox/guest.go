package sandbox

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/sandbox/k3slite"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// guest is a running VM's host: its file system, its services and its
// SSH server.
type guest struct {
	host   *vmhost.Host
	ln     net.Listener
	cancel context.CancelFunc
	served sync.WaitGroup
}

// stop cuts the guest's power: its SSH server and its services stop at
// once, its file system stays.
func (g *guest) stop() {
	g.cancel()
	g.ln.Close()
	g.host.PowerOff()
	g.served.Wait()
	_ = g.host.Close()
}

// Start boots VM g's host: its file system (kept from an earlier boot),
// its address on the world's network, its SSH server with the host key
// the guest agent reports, and its enabled services.
func (w *World) Start(g proxmoxtest.Guest) (proxmoxtest.GuestReport, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return proxmoxtest.GuestReport{}, fmt.Errorf("the sandbox is closed")
	}
	if old, ok := w.guests[g.VMID]; ok {
		old.stop()
		delete(w.guests, g.VMID)
	}
	a, err := netip.ParseAddr(g.IPv4)
	if err != nil || !a.Is4() {
		return proxmoxtest.GuestReport{}, fmt.Errorf("sandbox: VM %d has no IPv4 address (%q)", g.VMID, g.IPv4)
	}
	addr := w.MapAddress(a)
	prefix := g.Prefix
	if prefix < 16 {
		prefix = 16
	}
	key, err := w.hostKey(g.VMID)
	if err != nil {
		return proxmoxtest.GuestReport{}, err
	}
	host, err := vmhost.New(w.hostDir(g.VMID), vmhost.Options{
		Hostname:  g.Name,
		Init:      vmhost.InitSystemd,
		Addresses: []vmhost.Address{{Interface: "eth0", Prefix: netip.PrefixFrom(addr, prefix)}},
		Programs: map[string]vmhost.Program{
			k3slite.ProgramPath: w.k3s.Program(),
			AgentProgramPath:    w.agentProgram(addr),
		},
		Logger: w.log,
	})
	if err != nil {
		return proxmoxtest.GuestReport{}, err
	}
	if err := writeHostKey(w.ctx, host, key); err != nil {
		_ = host.Close()
		return proxmoxtest.GuestReport{}, err
	}
	ln, err := net.Listen("tcp", netip.AddrPortFrom(addr, uint16(w.opts.SSHPort)).String())
	if err != nil {
		_ = host.Close()
		return proxmoxtest.GuestReport{}, fmt.Errorf("sandbox: VM %d's SSH server: %w", g.VMID, err)
	}
	authorized := map[string][]ssh.PublicKey{"root": {w.identity.PublicKey()}}
	if g.User != "" && g.User != "root" {
		authorized[g.User] = []ssh.PublicKey{w.identity.PublicKey()}
	}
	user := g.User
	if user == "" {
		user = "root"
	}
	for _, line := range g.SSHKeys {
		if k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line)); err == nil {
			authorized[user] = append(authorized[user], k)
		}
	}
	ctx, cancel := context.WithCancel(w.ctx)
	gu := &guest{host: host, ln: ln, cancel: cancel}
	gu.served.Go(func() {
		if err := vmhost.ServeSSH(ctx, ln, vmhost.SSHConfig{HostKey: key, AuthorizedKeys: authorized, Host: host}); err != nil {
			w.log.Warn("sandbox: SSH server stopped", "vm", g.VMID, "error", err)
		}
	})
	gu.served.Go(func() {
		if err := host.Boot(ctx); err != nil {
			w.log.Warn("sandbox: boot", "vm", g.VMID, "error", err)
		}
	})
	w.guests[g.VMID] = gu
	return proxmoxtest.GuestReport{HostKey: key.PublicKey()}, nil
}

// Stop cuts VM vmid's power.
func (w *World) Stop(vmid int) {
	w.mu.Lock()
	g, ok := w.guests[vmid]
	delete(w.guests, vmid)
	w.mu.Unlock()
	if ok {
		g.stop()
	}
}

// Destroy removes VM vmid's file system and forgets its host key.
func (w *World) Destroy(vmid int) {
	w.mu.Lock()
	g, ok := w.guests[vmid]
	delete(w.guests, vmid)
	delete(w.keys, vmid)
	w.mu.Unlock()
	if ok {
		g.stop()
	}
	if err := os.RemoveAll(w.hostDir(vmid)); err != nil {
		w.log.Warn("sandbox: removing a destroyed VM's disk", "vm", vmid, "error", err)
	}
}

// writeHostKey puts the host's public key where sshd keeps it, as
// cloud-init's first boot does.
func writeHostKey(ctx context.Context, h *vmhost.Host, key ssh.Signer) error {
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key.PublicKey()))) + " root@" + h.Hostname() + "\n"
	st, err := h.Run(ctx, "mkdir -p /etc/ssh && cat > "+proxmoxtest.HostKeyPath, strings.NewReader(line), nil, nil, nil, "root")
	if err != nil {
		return err
	}
	if st != 0 {
		return fmt.Errorf("sandbox: writing the host key: status %d", st)
	}
	return nil
}

// Host returns the running host of the VM named name (its guest's
// hostname), to inspect or run commands on as a console would.
func (w *World) Host(name string) (*vmhost.Host, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, g := range w.guests {
		if g.host.Hostname() == name {
			return g.host, true
		}
	}
	return nil, false
}
