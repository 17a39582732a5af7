package proxmoxtest

import (
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/crypto/ssh"
)

// Latencies are the simulated durations of Proxmox operations at speed 1.
// WithSpeed divides all of them.
type Latencies struct {
	Clone    time.Duration // qmclone task
	Config   time.Duration // qmconfig task (POST config)
	Start    time.Duration // qmstart task
	Stop     time.Duration // qmstop task
	Shutdown time.Duration // qmshutdown task
	Reboot   time.Duration // qmreboot task
	Destroy  time.Duration // qmdestroy task
	Template time.Duration // qmtemplate task
	Resize   time.Duration // resize task
	// AgentUp is the time from the end of a start (or reboot) task until the
	// guest agent answers; until then agent calls fail with "QEMU guest
	// agent is not running".
	AgentUp time.Duration
	// AgentIP is the time from AgentUp until the guest has its IPv4 address;
	// until then network-get-interfaces lists only lo.
	AgentIP time.Duration
	// AuthFailure delays a 401, as pveproxy does (about 3 s).
	AuthFailure time.Duration
}

// DefaultLatencies are realistic but short.
func DefaultLatencies() Latencies {
	return Latencies{
		Clone:    time.Second,
		Config:   100 * time.Millisecond,
		Start:    500 * time.Millisecond,
		Stop:     300 * time.Millisecond,
		Shutdown: 800 * time.Millisecond,
		Reboot:   time.Second,
		Destroy:  300 * time.Millisecond,
		Template: 300 * time.Millisecond,
		Resize:   200 * time.Millisecond,
		AgentUp:  2 * time.Second,
		AgentIP:  500 * time.Millisecond,

		AuthFailure: 3 * time.Second,
	}
}

// Template describes a VM template seeded at construction.
type Template struct {
	VMID     int
	Name     string
	Node     string // default pve1
	Agent    bool   // agent: 1
	DiskSize string // scsi0 size, default 10G
	Storage  string // storage of scsi0 and the cloud-init drive, default local-lvm
}

// DefaultTemplate is the cloud-init-ready template every Server has unless
// WithTemplates replaces it: VMID 9000 "ubuntu-24.04-cloud" on pve1, agent
// enabled, a 10G scsi0 and an ide2 cloud-init drive.
func DefaultTemplate() Template {
	return Template{VMID: 9000, Name: "ubuntu-24.04-cloud", Node: "pve1", Agent: true, DiskSize: "10G"}
}

type config struct {
	nodes     int
	seed      int64
	speed     float64
	latencies Latencies
	faults    Faults
	templates []Template
	logger    *slog.Logger
	hook      func(RequestInfo)
	storages  []storageDef
	hostKeys  func(ip string) (ssh.PublicKey, bool)
	guests    Guests
}

func defaultConfig() config {
	return config{
		nodes:     1,
		seed:      1,
		speed:     1,
		latencies: DefaultLatencies(),
		templates: []Template{DefaultTemplate()},
		storages:  defaultStorages(),
	}
}

// Option configures a Server in New.
type Option func(*config) error

// WithNodes sets the number of cluster nodes, named pve1..pveN (default 1).
func WithNodes(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 64 {
			return fmt.Errorf("proxmoxtest: nodes must be in 1..64, got %d", n)
		}
		c.nodes = n
		return nil
	}
}

// WithSeed sets the seed that makes fault injection, PIDs, MAC addresses
// and host keys reproducible (default 1).
func WithSeed(seed int64) Option {
	return func(c *config) error { c.seed = seed; return nil }
}

// WithLatencies replaces the operation latencies (zero fields mean
// instantaneous).
func WithLatencies(l Latencies) Option {
	return func(c *config) error { c.latencies = l; return nil }
}

// WithSpeed divides every latency by factor: 10 runs ten times faster.
func WithSpeed(factor float64) Option {
	return func(c *config) error {
		if factor <= 0 {
			return fmt.Errorf("proxmoxtest: speed must be positive, got %v", factor)
		}
		c.speed = factor
		return nil
	}
}

// WithFaults enables fault injection.
func WithFaults(f Faults) Option {
	return func(c *config) error {
		for name, r := range map[string]float64{"error rate": f.ErrorRate, "lock timeout rate": f.LockTimeoutRate, "task failure rate": f.TaskFailureRate, "task status lost rate": f.TaskStatusLostRate} {
			if r < 0 || r > 1 {
				return fmt.Errorf("proxmoxtest: %s must be in [0,1], got %v", name, r)
			}
		}
		c.faults = f
		return nil
	}
}

// WithTemplates replaces the seeded templates (default: DefaultTemplate).
func WithTemplates(t ...Template) Option {
	return func(c *config) error { c.templates = t; return nil }
}

// WithLogger sets a logger for server diagnostics (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error { c.logger = l; return nil }
}

// WithRequestHook calls hook after every request to a served route (not
// for 501 answers), from the goroutine serving it: hook must be safe for
// concurrent use. Schema checks use it to see every accepted request.
func WithRequestHook(hook func(RequestInfo)) Option {
	return func(c *config) error { c.hook = hook; return nil }
}

// WithGuestHostKeys makes a guest whose IPv4 address (its static
// cloud-init address, else its DHCP lease) is one hostKey knows serve that
// key in /etc/ssh/ssh_host_ed25519_key.pub instead of its own. Tests that
// stand real SSH servers in for the simulated VMs use it, so that the keys
// the guest agent reports are the ones those servers present.
func WithGuestHostKeys(hostKey func(ip string) (ssh.PublicKey, bool)) Option {
	return func(c *config) error { c.hostKeys = hostKey; return nil }
}

// WithSharedStorage adds a storage shared by all nodes (an RBD pool named
// name). Clones to another node need their source's disks on one.
func WithSharedStorage(name string) Option {
	return func(c *config) error {
		if !formatOK("pve-storage-id", name) {
			return fmt.Errorf("proxmoxtest: invalid storage name %q", name)
		}
		for _, st := range c.storages {
			if st.name == name {
				return fmt.Errorf("proxmoxtest: storage %q exists", name)
			}
		}
		c.storages = append(c.storages, storageDef{name: name, typ: "rbd", content: "images,rootdir", shared: true, total: 1 << 40})
		return nil
	}
}
