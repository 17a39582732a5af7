package proxmoxtest

import (
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/crypto/ssh"
)

// Guests is what runs inside the simulated VMs, for a sandbox whose VMs
// must do something — answer SSH, run services — rather than only exist
// (WithGuests). The simulator calls it from the task that starts, stops,
// reboots or destroys a VM, while holding its lock: a method must return
// quickly (start work in goroutines) and must not call the Server.
type Guests interface {
	// Start is called when a VM has booted (a start or the second half
	// of a reboot). The report says what its guest agent reports from
	// then on; an error fails the start task with its message.
	Start(g Guest) (GuestReport, error)
	// Stop is called when a VM stops, is shut down or begins a reboot:
	// for what runs inside, a power cut. Its disk stays.
	Stop(vmid int)
	// Destroy is called when a VM is destroyed: its disk is gone.
	Destroy(vmid int)
}

// Guest is a booting VM as its guest sees it: the cloud-init data the
// simulator hands it.
type Guest struct {
	VMID int
	Node string // the Proxmox node it runs on
	Name string // its name, the guest's hostname
	// IPv4 and Prefix are its first interface's address: the static
	// cloud-init address (ipconfig0), else its DHCP lease.
	IPv4   string
	Prefix int
	// User is cloud-init's user (ciuser; "" when unset), SSHKeys the
	// authorized keys cloud-init installs for it (sshkeys), one per
	// element.
	User    string
	SSHKeys []string
}

// GuestReport is what a started guest's agent reports beyond what the
// simulator knows. Its addresses are the VM's own, as a real guest's
// are: the cloud-init address on the first interface, else its DHCP
// lease. (How a sandbox reaches a guest at that address is the
// sandbox's business.)
type GuestReport struct {
	// HostKey, when set, is the SSH host key file-read serves.
	HostKey ssh.PublicKey
}

// WithGuests gives the simulated VMs what runs inside them. Without it
// a VM's guest agent answers with the simulator's own addresses and host
// keys, and nothing else answers.
func WithGuests(g Guests) Option {
	return func(c *config) error { c.guests = g; return nil }
}

// guest describes v to Guests.Start. Callers hold s.mu.
func guest(v *vm) Guest {
	g := Guest{VMID: v.id, Node: v.node, Name: v.conf["name"], IPv4: guestIPv4(v), Prefix: 24, User: v.conf["ciuser"]}
	_, ipc := propList(v.conf["ipconfig0"])
	if m := ipCIDRRe.FindStringSubmatch(ipc["ip"]); m != nil {
		fmt.Sscan(m[2], &g.Prefix)
	}
	if keys, err := url.PathUnescape(v.conf["sshkeys"]); err == nil {
		for _, k := range strings.Split(keys, "\n") {
			if k = strings.TrimSpace(k); k != "" {
				g.SSHKeys = append(g.SSHKeys, k)
			}
		}
	}
	return g
}

// guestStart tells Guests that v booted. Callers hold s.mu.
func (s *Server) guestStart(v *vm) error {
	v.report = GuestReport{}
	if s.cfg.guests == nil {
		return nil
	}
	r, err := s.cfg.guests.Start(guest(v))
	if err != nil {
		return err
	}
	v.report = r
	return nil
}

// guestStop tells Guests that v stopped. Callers hold s.mu.
func (s *Server) guestStop(v *vm) {
	v.report = GuestReport{}
	if s.cfg.guests != nil {
		s.cfg.guests.Stop(v.id)
	}
}
