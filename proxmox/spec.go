package proxmox

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/openctl/openctl/manifest"
)

// VMSpec is the spec of a proxmox.openctl.io/v1 VirtualMachine, as decoded
// from a manifest. Field names follow the manifest (JSON/YAML) names.
type VMSpec struct {
	// Context names the Proxmox endpoint (Config.Contexts); empty means the
	// default context.
	Context string `json:"context,omitempty"`
	// Node places the VM on one Proxmox node; Nodes lets openctl pick
	// one of the allowed nodes when planning (Provider.Place: the most
	// memory not yet allotted; without an engine, the most free memory
	// when the VM is cloned). At most one of them; neither means the
	// context's default node.
	Node  string   `json:"node,omitempty"`
	Nodes []string `json:"nodes,omitempty"`
	// Template is what the VM is cloned from. Required.
	Template *TemplateSpec `json:"template,omitempty"`
	// Storage is the target storage of a full clone's disks.
	Storage string `json:"storage,omitempty"`
	// CPU and Memory size the VM; unset keeps the template's values.
	CPU    *CPUSpec    `json:"cpu,omitempty"`
	Memory *MemorySpec `json:"memory,omitempty"`
	// Disks are grown to (or created with) the given sizes. Disks cannot
	// shrink.
	Disks []DiskSpec `json:"disks,omitempty"`
	// Networks configure network devices; unset keeps the template's.
	Networks []NetworkSpec `json:"networks,omitempty"`
	// CloudInit configures the cloud-init drive.
	CloudInit *CloudInitSpec `json:"cloudInit,omitempty"`
	// Agent enables the QEMU guest agent, through which openctl learns
	// the VM's IP addresses and SSH host key.
	Agent *AgentSpec `json:"agent,omitempty"`
	// Tags are added to the tag openctl sets ("openctl"): at most 64,
	// each lower-case letters, digits and _-+. and at most 128 long.
	Tags []string `json:"tags,omitempty"`
	// Description is the VM's notes; openctl appends its marker line.
	Description string `json:"description,omitempty"`
	// OnBoot starts the VM when its node boots.
	OnBoot *bool `json:"onBoot,omitempty"`
	// StartOnCreate starts a new VM (default true). Ignored when State is
	// set.
	StartOnCreate *bool `json:"startOnCreate,omitempty"`
	// State is the desired power state: running or stopped. Empty means
	// "started on create, left alone afterwards".
	State string `json:"state,omitempty"`
	// RestartPolicy says what to do when a change only takes effect after
	// a reboot: "never" (default: the change stays pending and status
	// says so) or "ifRequired" (reboot the VM).
	RestartPolicy string `json:"restartPolicy,omitempty"`
	// ReplacePolicy says what to do when a change needs a new VM (another
	// template or node): "never" (default: Apply refuses) or "allow"
	// (destroy and re-create the VM).
	ReplacePolicy string `json:"replacePolicy,omitempty"`
}

// TemplateSpec names the template a VM is cloned from, by name or VMID.
type TemplateSpec struct {
	Name string `json:"name,omitempty"`
	VMID int    `json:"vmid,omitempty"`
	// Full makes a full clone (default true); Linked: true is the same as
	// Full: false and needs a template on storage that supports it.
	Full   *bool `json:"full,omitempty"`
	Linked bool  `json:"linked,omitempty"`
}

// CPUSpec sizes the VM's processors.
type CPUSpec struct {
	Cores   int    `json:"cores,omitempty"`
	Sockets int    `json:"sockets,omitempty"`
	Type    string `json:"type,omitempty"`
}

// MemorySpec sizes the VM's memory.
type MemorySpec struct {
	Size int `json:"size,omitempty"` // MiB
}

// DiskSpec is a disk: scsi0, virtio1, sata0, ...
type DiskSpec struct {
	Name    string `json:"name"`
	Storage string `json:"storage,omitempty"` // for a disk the template lacks
	Size    string `json:"size"`              // e.g. "20G"
}

// NetworkSpec is a network device: net0, net1, ...
type NetworkSpec struct {
	Name       string `json:"name"`
	Bridge     string `json:"bridge,omitempty"`
	Model      string `json:"model,omitempty"` // virtio (default), e1000, rtl8139, vmxnet3
	VLAN       int    `json:"vlan,omitempty"`
	MACAddress string `json:"macAddress,omitempty"`
	Firewall   *bool  `json:"firewall,omitempty"`
}

// CloudInitSpec configures the VM's cloud-init drive.
type CloudInitSpec struct {
	User string `json:"user,omitempty"`
	// Password is the user's password. It is sent to Proxmox (which
	// stores it hashed) and never printed; prefer SSHKeys.
	Password     string              `json:"password,omitempty"`
	SSHKeys      []string            `json:"sshKeys,omitempty"`
	SearchDomain string              `json:"searchDomain,omitempty"`
	Nameservers  []string            `json:"nameservers,omitempty"`
	IPConfig     map[string]IPConfig `json:"ipConfig,omitempty"`
}

// IPConfig is the address configuration of one network device.
type IPConfig struct {
	IP       string `json:"ip,omitempty"`       // "dhcp" or an IPv4 CIDR
	Gateway  string `json:"gateway,omitempty"`  // IPv4 gateway
	IP6      string `json:"ip6,omitempty"`      // "dhcp", "auto" or an IPv6 CIDR
	Gateway6 string `json:"gateway6,omitempty"` // IPv6 gateway
}

// AgentSpec configures the QEMU guest agent.
type AgentSpec struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// The values of VMSpec.State, RestartPolicy and ReplacePolicy.
const (
	StateRunning = "running"
	StateStopped = "stopped"

	RestartNever      = "never"
	RestartIfRequired = "ifRequired"

	ReplaceNever = "never"
	ReplaceAllow = "allow"
)

var (
	diskNameRe = regexp.MustCompile(`^(scsi([0-9]|[12][0-9]|30)|virtio([0-9]|1[0-5])|sata[0-5]|ide[0-3])$`)
	netNameRe  = regexp.MustCompile(`^net([0-9]|[12][0-9]|3[01])$`)
	sizeRe     = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)([KMGT]?)$`)
	macRe      = regexp.MustCompile(`^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$`)
	tagRe      = regexp.MustCompile(`^[a-z0-9_][a-z0-9_\-+.]*$`)
	// maxTags and maxTagLen bound spec.tags: Proxmox sets no limit, but
	// every tag is in the VM's config and shown in its UI, so openctl
	// refuses lists no one would write on purpose.
	maxTags, maxTagLen = 64, 128
	identRe            = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9\-_.]*$`)
	cpuTypeRe          = regexp.MustCompile(`^[a-zA-Z0-9_\-.+]+$`)
)

var netModels = []string{"virtio", "e1000", "e1000e", "rtl8139", "vmxnet3"}

// DecodeVMSpec decodes and validates a VirtualMachine spec. Errors match
// errcode.Invalid and name the field path (spec.cpu.cores); when r was
// decoded from a file they also name the file and line.
func DecodeVMSpec(r *manifest.Resource) (*VMSpec, error) {
	var s VMSpec
	if err := manifest.DecodeSpec(r.Spec, &s); err != nil {
		return nil, r.Locate(err)
	}
	if err := s.validate(); err != nil {
		return nil, r.Locate(err)
	}
	return &s, nil
}

func nodePath(i int) string {
	if i == 0 {
		return "spec.node"
	}
	return fmt.Sprintf("spec.nodes[%d]", i-1)
}

func (c IPConfig) validate(path string) error {
	if c.IP != "" && c.IP != "dhcp" {
		p, err := netip.ParsePrefix(c.IP)
		if err != nil || !p.Addr().Is4() {
			return manifest.FieldErrorf(path+".ip", "must be dhcp or an IPv4 CIDR such as 192.168.1.50/24 (IPv6 goes in ip6), got %q", c.IP)
		}
	}
	if c.Gateway != "" {
		if a, err := netip.ParseAddr(c.Gateway); err != nil || !a.Is4() {
			return manifest.FieldErrorf(path+".gateway", "must be an IPv4 address, got %q", c.Gateway)
		}
		if c.IP == "" || c.IP == "dhcp" {
			return manifest.FieldErrorf(path+".gateway", "needs a static ip")
		}
	}
	if c.IP6 != "" && c.IP6 != "dhcp" && c.IP6 != "auto" {
		p, err := netip.ParsePrefix(c.IP6)
		if err != nil || !p.Addr().Is6() {
			return manifest.FieldErrorf(path+".ip6", "must be dhcp, auto or an IPv6 CIDR such as 2001:db8::50/64, got %q", c.IP6)
		}
	}
	if c.Gateway6 != "" {
		if a, err := netip.ParseAddr(c.Gateway6); err != nil || !a.Is6() {
			return manifest.FieldErrorf(path+".gateway6", "must be an IPv6 address, got %q", c.Gateway6)
		}
	}
	return nil
}

// parseSize parses "20G", "512M", "1T" or a number of bytes into bytes.
func parseSize(s string) (uint64, error) {
	m := sizeRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("size must be a number with an optional K, M, G or T suffix, such as 20G, got %q", s)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("size must be positive, got %q", s)
	}
	mult := map[string]float64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m[2]]
	return uint64(f * mult), nil
}

// formatSize renders bytes the way Proxmox does in disk strings: the
// largest unit that divides evenly.
func formatSize(b uint64) string {
	for _, u := range []struct {
		s string
		n uint64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if b >= u.n && b%u.n == 0 {
			return strconv.FormatUint(b/u.n, 10) + u.s
		}
	}
	return strconv.FormatUint(b, 10)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// full reports whether the clone is full.
func (t *TemplateSpec) full() bool {
	if t.Linked {
		return false
	}
	return t.Full == nil || *t.Full
}

// desiredState is the power state Apply converges to for a VM that exists
// ("" = leave as is).
func (s *VMSpec) desiredState(created bool) string {
	if s.State != "" {
		return s.State
	}
	if created && (s.StartOnCreate == nil || *s.StartOnCreate) {
		return StateRunning
	}
	return ""
}
