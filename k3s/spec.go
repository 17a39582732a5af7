package k3s

import (
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/openctl/openctl/manifest"
)

// The roles of a node.
const (
	RoleServer = "server"
	RoleAgent  = "agent"
)

// ClusterSpec is the spec of a k3s.openctl.io/v1 Cluster: a K3s cluster on
// Proxmox VMs (Compute) or on existing machines (Hosts).
type ClusterSpec struct {
	// Hosts are existing machines, each a server or an agent; they
	// replace Compute and Nodes.
	Hosts []HostSpec `json:"hosts,omitempty"`
	// Compute places the nodes on Proxmox VE VMs the cluster creates.
	Compute *ComputeSpec `json:"compute,omitempty"`
	// Nodes says how many servers and workers to create on Compute.
	Nodes *NodesSpec `json:"nodes,omitempty"`
	// Network configures the VMs' network (Compute only).
	Network *NetworkSpec `json:"network,omitempty"`
	// K3s configures k3s itself.
	K3s K3sSpec `json:"k3s"`
	// SSH is how openctl logs in to the nodes.
	SSH SSHSpec `json:"ssh"`
	// VIP is a virtual IP, held by kube-vip on one server at a time,
	// that carries the API endpoint; without one the endpoint is the
	// first server, a single point of failure.
	VIP *VIPSpec `json:"vip,omitempty"`
	// TLSSANs are further names and addresses for the API certificate.
	TLSSANs []string `json:"tlsSANs,omitempty"`
	// Kubeconfig says where the cluster's kubeconfig goes besides
	// ~/.openctl/kubeconfigs/<name>.yaml.
	Kubeconfig *KubeconfigSpec `json:"kubeconfig,omitempty"`
	// Drain is how a node is drained before it is removed or upgraded.
	Drain *DrainSpec `json:"drain,omitempty"`
	// Upgrade is how a change of K3s.Version rolls out.
	Upgrade *UpgradeSpec `json:"upgrade,omitempty"`
}

// UpgradeSpec is how a version change rolls out: servers always one at a
// time (etcd keeps its quorum), then agents, Concurrency at a time.
type UpgradeSpec struct {
	// Concurrency is how many agents are upgraded at once (default 1).
	Concurrency int `json:"concurrency,omitempty"`
}

// maxUpgradeConcurrency bounds UpgradeSpec.Concurrency.
const maxUpgradeConcurrency = 100

func (u *UpgradeSpec) validate(p string) error {
	if u != nil && (u.Concurrency < 0 || u.Concurrency > maxUpgradeConcurrency) {
		return manifest.FieldErrorf(p+".concurrency", "want how many agents to upgrade at once, 1 to %d (0: 1), got %d", maxUpgradeConcurrency, u.Concurrency)
	}
	return nil
}

// concurrency is how many agents upgrade at once, default filled in.
func (u *UpgradeSpec) concurrency() int {
	if u == nil || u.Concurrency < 1 {
		return 1
	}
	return u.Concurrency
}

// DrainSpec is how a node is drained, as `kubectl drain` does it, before
// it leaves its cluster or is upgraded. The defaults are safe: honour
// PodDisruptionBudgets and each pod's grace period, never delete
// emptyDir data or unmanaged pods, leave DaemonSet pods.
type DrainSpec struct {
	// Timeout bounds the drain of one node (default 5m), e.g. "10m".
	Timeout string `json:"timeout,omitempty"`
	// GracePeriod overrides the pods' termination grace period in
	// seconds; nil: each pod's own.
	GracePeriod *int `json:"gracePeriod,omitempty"`
	// Force evicts pods no controller manages (they are lost).
	Force bool `json:"force,omitempty"`
	// DeleteEmptyDirData evicts pods with emptyDir volumes (their data
	// is lost).
	DeleteEmptyDirData bool `json:"deleteEmptyDirData,omitempty"`
	// IgnoreDaemonSets leaves DaemonSet pods (default true: their
	// controller would only recreate them).
	IgnoreDaemonSets *bool `json:"ignoreDaemonSets,omitempty"`
}

// defaultDrainTimeout bounds draining one node.
const defaultDrainTimeout = 5 * time.Minute

// timeout is the drain timeout, default filled in.
func (d *DrainSpec) timeout() time.Duration {
	if d != nil && d.Timeout != "" {
		if t, err := time.ParseDuration(d.Timeout); err == nil {
			return t
		}
	}
	return defaultDrainTimeout
}

func (d *DrainSpec) validate(p string) error {
	if d == nil {
		return nil
	}
	if d.Timeout != "" {
		if t, err := time.ParseDuration(d.Timeout); err != nil || t <= 0 {
			return manifest.FieldErrorf(p+".timeout", "want a positive duration like 10m, got %q", d.Timeout)
		}
	}
	if d.GracePeriod != nil && *d.GracePeriod < 0 {
		return manifest.FieldErrorf(p+".gracePeriod", "want seconds, 0 or more, got %d", *d.GracePeriod)
	}
	return nil
}

// drainMap is a DrainSpec as a node's spec carries it.
func drainMap(d *DrainSpec) map[string]any {
	m := map[string]any{}
	if d.Timeout != "" {
		m["timeout"] = d.Timeout
	}
	if d.GracePeriod != nil {
		m["gracePeriod"] = int64(*d.GracePeriod)
	}
	if d.Force {
		m["force"] = true
	}
	if d.DeleteEmptyDirData {
		m["deleteEmptyDirData"] = true
	}
	if d.IgnoreDaemonSets != nil {
		m["ignoreDaemonSets"] = *d.IgnoreDaemonSets
	}
	return m
}

// HostSpec is an existing machine of a Cluster.
type HostSpec struct {
	// Name is the node's name (and the Node resource's).
	Name string `json:"name"`
	// Address is the machine's IP address (or DNS name) for SSH and the
	// node IP.
	Address string `json:"address"`
	// Role is server or agent.
	Role string `json:"role"`
	// SSHHostKey pins the machine's SSH host key ("ssh-ed25519 AAAA…");
	// without it the key must be in known_hosts (or trusted on first
	// use).
	SSHHostKey string `json:"sshHostKey,omitempty"`
}

// ComputeSpec places a cluster's nodes on Proxmox VE.
type ComputeSpec struct {
	// Provider is the compute provider: proxmox.
	Provider string `json:"provider"`
	// Context names the Proxmox context; empty: the default one.
	Context string `json:"context,omitempty"`
	// Image is the template the VMs are cloned from.
	Image ImageSpec `json:"image"`
	// Default sizes every VM a pool does not size.
	Default *SizeSpec `json:"default,omitempty"`
	// Nodes are the Proxmox nodes VMs may go on; control planes are
	// spread across them.
	Nodes []string `json:"nodes,omitempty"`
}

// ImageSpec names a VM template.
type ImageSpec struct {
	Template string `json:"template"`
}

// SizeSpec sizes a VM.
type SizeSpec struct {
	CPUs     int `json:"cpus,omitempty"`
	MemoryMB int `json:"memoryMB,omitempty"`
	DiskGB   int `json:"diskGB,omitempty"`
}

// NodesSpec counts a cluster's servers and workers.
type NodesSpec struct {
	ControlPlane PoolSpec   `json:"controlPlane"`
	Workers      []PoolSpec `json:"workers,omitempty"`
}

// PoolSpec is a group of identical nodes.
type PoolSpec struct {
	// Name names the pool's nodes: <cluster>-<name>-<i>. Control planes
	// are <cluster>-cp-<i>.
	Name  string    `json:"name,omitempty"`
	Count int       `json:"count"`
	Size  *SizeSpec `json:"size,omitempty"`
	// Nodes restricts the pool to these Proxmox nodes.
	Nodes []string `json:"nodes,omitempty"`
}

// NetworkSpec configures the VMs' network.
type NetworkSpec struct {
	Bridge string `json:"bridge,omitempty"`
	// DHCP (the default) or StaticIPs, handed out in order from StartIP.
	DHCP      *bool          `json:"dhcp,omitempty"`
	StaticIPs *StaticIPsSpec `json:"staticIPs,omitempty"`
}

// StaticIPsSpec is a range of static addresses for the VMs.
type StaticIPsSpec struct {
	StartIP string `json:"startIP"`
	Gateway string `json:"gateway"`
	Netmask string `json:"netmask"`
}

// K3sSpec configures k3s.
type K3sSpec struct {
	// Version is the k3s release, e.g. v1.37.2+k3s1. Required.
	Version string `json:"version"`
	// ClusterCIDR and ServiceCIDR are k3s's pod and service networks
	// (defaults 10.42.0.0/16 and 10.43.0.0/16).
	ClusterCIDR string `json:"clusterCIDR,omitempty"`
	ServiceCIDR string `json:"serviceCIDR,omitempty"`
	// Flannel configures the pod network.
	Flannel *FlannelSpec `json:"flannel,omitempty"`
	// Disable lists packaged components not to run (traefik, servicelb…).
	Disable []string `json:"disable,omitempty"`
	// ExtraArgs are further k3s flags for every node ("--kubelet-arg=…").
	ExtraArgs []string `json:"extraArgs,omitempty"`
	// Install says how k3s gets onto a node; nil: upload.
	Install *InstallSpec `json:"install,omitempty"`
}

// The install methods.
const (
	// InstallUpload copies the release's binary from the controller over
	// SSH (checked against the release's sha256sum-<arch>.txt): nodes
	// need no internet. The default.
	InstallUpload = "upload"
	// InstallScript runs the k3s install script on the node, which
	// downloads k3s itself (INSTALL_K3S_VERSION, INSTALL_K3S_EXEC).
	InstallScript = "script"
)

// DefaultInstallScriptURL is where the install script comes from unless
// InstallSpec.ScriptURL says otherwise.
const DefaultInstallScriptURL = "https://get.k3s.io"

// InstallSpec chooses how k3s is installed.
type InstallSpec struct {
	// Method is InstallUpload (default) or InstallScript.
	Method string `json:"method,omitempty"`
	// ScriptURL is the install script's https:// URL, fetched by the
	// node (DefaultInstallScriptURL when empty). Script method only.
	ScriptURL string `json:"scriptURL,omitempty"`
}

// method is the install method, defaults filled in.
func (k *K3sSpec) method() string {
	if k.Install == nil || k.Install.Method == "" {
		return InstallUpload
	}
	return k.Install.Method
}

// scriptURL is the install script's URL, defaults filled in.
func (k *K3sSpec) scriptURL() string {
	if k.Install == nil || k.Install.ScriptURL == "" {
		return DefaultInstallScriptURL
	}
	return k.Install.ScriptURL
}

// FlannelSpec configures flannel.
type FlannelSpec struct {
	Backend string `json:"backend,omitempty"`
	Iface   string `json:"iface,omitempty"`
}

// SSHSpec is how openctl logs in to the nodes.
type SSHSpec struct {
	// User logs in (default root; another user needs passwordless sudo).
	User string `json:"user,omitempty"`
	// Port is the SSH port (default 22).
	Port int `json:"port,omitempty"`
	// PrivateKeyPath is the key to log in with; empty: the SSH agent's.
	PrivateKeyPath string `json:"privateKeyPath,omitempty"`
	// PublicKeys go into the VMs' cloud-init (Compute only).
	PublicKeys []string `json:"publicKeys,omitempty"`
	// KnownHosts are known_hosts files for hosts whose key is not pinned
	// (default ~/.ssh/known_hosts).
	KnownHosts []string `json:"knownHosts,omitempty"`
	// TrustOnFirstUse records the key of a host nothing pins or knows,
	// with a warning, instead of refusing it.
	TrustOnFirstUse bool `json:"trustOnFirstUse,omitempty"`
}

// VIPSpec is the cluster's virtual IP.
type VIPSpec struct {
	Address   string `json:"address"`
	Interface string `json:"interface,omitempty"`
}

// KubeconfigSpec says where the kubeconfig goes.
type KubeconfigSpec struct {
	// Merge merges it into ~/.kube/config, under Context.
	Merge bool `json:"merge,omitempty"`
	// Context is the context name (default: the cluster's name).
	Context string `json:"context,omitempty"`
}

var (
	versionRe = regexp.MustCompile(`^v1\.(\d+)\.(\d+)\+k3s(\d+)$`)
	argRe     = regexp.MustCompile(`^--[a-z0-9][a-z0-9-]*(=.*)?$`)
	nameRe    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

// disableable are the packaged components --disable takes.
var disableable = []string{"coredns", "servicelb", "traefik", "local-storage", "metrics-server", "runtimes"}

// DecodeClusterSpec decodes and validates a Cluster's spec. Errors match
// errcode.Invalid and name the file, line and field path.
func DecodeClusterSpec(r *manifest.Resource) (*ClusterSpec, error) {
	var s ClusterSpec
	if err := manifest.DecodeSpec(r.Spec, &s); err != nil {
		return nil, r.Locate(err)
	}
	if err := s.validate(); err != nil {
		return nil, r.Locate(err)
	}
	return &s, nil
}

func (s *ClusterSpec) validate() error {
	if err := s.K3s.validate("spec.k3s"); err != nil {
		return err
	}
	if err := s.Drain.validate("spec.drain"); err != nil {
		return err
	}
	if err := s.Upgrade.validate("spec.upgrade"); err != nil {
		return err
	}
	if err := s.SSH.validate("spec.ssh"); err != nil {
		return err
	}
	switch {
	case len(s.Hosts) > 0 && (s.Compute != nil || s.Nodes != nil):
		return manifest.FieldErrorf("spec.hosts", "existing hosts replace compute and nodes: give one or the other")
	case len(s.Hosts) > 0:
		if err := s.validateHosts(); err != nil {
			return err
		}
	case s.Compute == nil:
		return manifest.FieldErrorf("spec", "a cluster needs hosts (existing machines) or compute (VMs to create)")
	default:
		if err := s.validateCompute(); err != nil {
			return err
		}
	}
	if s.VIP != nil {
		vip, err := netip.ParseAddr(s.VIP.Address)
		if err != nil {
			return manifest.FieldErrorf("spec.vip.address", "not an IP address: %q", s.VIP.Address)
		}
		if err := s.checkVIPFree(vip); err != nil {
			return err
		}
	}
	for i, san := range s.TLSSANs {
		if san == "" || strings.ContainsAny(san, " \t\n,") {
			return manifest.FieldErrorf(fmt.Sprintf("spec.tlsSANs[%d]", i), "not a name or an address: %q", san)
		}
	}
	if k := s.Kubeconfig; k != nil && k.Context != "" && !nameRe.MatchString(k.Context) {
		return manifest.FieldErrorf("spec.kubeconfig.context", "must be a DNS-1123 label, got %q", k.Context)
	}
	return nil
}

func (s *ClusterSpec) validateHosts() error {
	names := map[string]bool{}
	servers := 0
	for i, h := range s.Hosts {
		p := fmt.Sprintf("spec.hosts[%d]", i)
		if !nameRe.MatchString(h.Name) {
			return manifest.FieldErrorf(p+".name", "must be a DNS-1123 label, got %q", h.Name)
		}
		if names[h.Name] {
			return manifest.FieldErrorf(p+".name", "%s is listed twice", h.Name)
		}
		names[h.Name] = true
		if h.Address == "" {
			return manifest.FieldErrorf(p+".address", "required: the machine's IP address or DNS name")
		}
		switch h.Role {
		case RoleServer:
			servers++
		case RoleAgent:
		default:
			return manifest.FieldErrorf(p+".role", "must be server or agent, got %q", h.Role)
		}
		if h.SSHHostKey != "" {
			if err := checkHostKey(h.SSHHostKey); err != nil {
				return manifest.FieldErrorf(p+".sshHostKey", "%v", err)
			}
		}
	}
	return checkQuorum("spec.hosts", servers)
}

func (s *ClusterSpec) validateCompute() error {
	c := s.Compute
	if c.Provider != "proxmox" {
		return manifest.FieldErrorf("spec.compute.provider", "must be proxmox, got %q", c.Provider)
	}
	if c.Image.Template == "" {
		return manifest.FieldErrorf("spec.compute.image.template", "required: the VM template to clone")
	}
	if s.Nodes == nil {
		return manifest.FieldErrorf("spec.nodes", "required with compute: how many control planes and workers")
	}
	if err := checkQuorum("spec.nodes.controlPlane.count", s.Nodes.ControlPlane.Count); err != nil {
		return err
	}
	names := map[string]bool{"cp": true}
	for i, w := range s.Nodes.Workers {
		p := fmt.Sprintf("spec.nodes.workers[%d]", i)
		if w.Name == "" {
			w.Name = "worker"
		}
		if !nameRe.MatchString(w.Name) || names[w.Name] {
			return manifest.FieldErrorf(p+".name", "must be a unique DNS-1123 label other than cp, got %q", w.Name)
		}
		names[w.Name] = true
		if w.Count < 0 || w.Count > 100 {
			return manifest.FieldErrorf(p+".count", "must be from 0 to 100, got %d", w.Count)
		}
	}
	machines := s.Nodes.machines()
	if resources := 1 + 2*machines; resources > maxClusterResources {
		return manifest.FieldErrorf("spec.nodes", "%d machines expand to %d resources (a VM and a Node each, and the Cluster); at most %d, the limit of one manifest", machines, resources, maxClusterResources)
	}
	if n := s.Network; n != nil && n.StaticIPs != nil {
		return checkStaticRange(n.StaticIPs, machines)
	}
	return nil
}

// machines is how many VMs the pools make.
func (n *NodesSpec) machines() int {
	m := n.ControlPlane.Count
	for _, w := range n.Workers {
		m += w.Count
	}
	return m
}

// maxClusterResources bounds what one Cluster expands to, as one
// manifest's resources are bounded.
const maxClusterResources = 10_000

// checkStaticRange refuses a static range whose machines' addresses
// (handed out in order from startIP) would leave the subnet, take its
// network or broadcast address, or the gateway's.
func checkStaticRange(st *StaticIPsSpec, machines int) error {
	start, err := netip.ParseAddr(st.StartIP)
	if err != nil {
		return manifest.FieldErrorf("spec.network.staticIPs.startIP", "not an IP address: %q", st.StartIP)
	}
	gw, err := netip.ParseAddr(st.Gateway)
	if err != nil {
		return manifest.FieldErrorf("spec.network.staticIPs.gateway", "not an IP address: %q", st.Gateway)
	}
	bits, err := maskBits(st.Netmask)
	if err != nil {
		return manifest.FieldErrorf("spec.network.staticIPs.netmask", "%v", err)
	}
	if !start.Is4() {
		return manifest.FieldErrorf("spec.network.staticIPs.startIP", "must be an IPv4 address, got %q", st.StartIP)
	}
	subnet := netip.PrefixFrom(start, bits).Masked()
	if !subnet.Contains(gw) {
		return manifest.FieldErrorf("spec.network.staticIPs.gateway", "%s is outside the subnet %s", gw, subnet)
	}
	a := start
	for i := range machines {
		what := ""
		switch {
		case !subnet.Contains(a):
			what = "outside the subnet " + subnet.String()
		case bits <= 30 && a == subnet.Addr():
			what = "the subnet's network address"
		case bits <= 30 && a == lastAddr(subnet):
			what = "the subnet's broadcast address"
		case a == gw:
			what = "the gateway's address"
		}
		if what != "" {
			return manifest.FieldErrorf("spec.network.staticIPs.startIP", "the %d machines take the addresses from %s on; machine %d of them (control planes first) would get %s, %s", machines, start, i+1, a, what)
		}
		a = a.Next()
	}
	return nil
}

// lastAddr is the last address of an IPv4 prefix (its broadcast address).
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// checkVIPFree refuses a VIP that is also a machine's address: a listed
// host's, or one of the static range's.
func (s *ClusterSpec) checkVIPFree(vip netip.Addr) error {
	for i, h := range s.Hosts {
		if a, err := netip.ParseAddr(h.Address); err == nil && a == vip {
			return manifest.FieldErrorf("spec.vip.address", "%s is also the address of spec.hosts[%d] (%s): the VIP must be an address no machine has", vip, i, h.Name)
		}
	}
	n := s.Network
	if s.Nodes == nil || n == nil || n.StaticIPs == nil {
		return nil
	}
	start, err := netip.ParseAddr(n.StaticIPs.StartIP)
	if err != nil {
		return nil // refused with its own field
	}
	machines := s.Nodes.machines()
	a := start
	for i := range machines {
		if a == vip {
			return manifest.FieldErrorf("spec.vip.address", "%s is also the static address of machine %d (control planes first, from spec.network.staticIPs.startIP %s): the VIP must be an address no machine has", vip, i+1, start)
		}
		a = a.Next()
	}
	return nil
}

// checkQuorum refuses server counts that cannot keep an etcd quorum
// well: zero, and even numbers, which tolerate no more failures than the
// odd number below them.
func checkQuorum(field string, servers int) error {
	switch {
	case servers < 1:
		return manifest.FieldErrorf(field, "a cluster needs at least one server")
	case servers%2 == 0:
		return manifest.FieldErrorf(field, "%d servers: etcd needs a majority, so %d tolerate as many failures as %d and split evenly; use 1, 3, 5 or 7", servers, servers, servers-1)
	case servers > 7:
		return manifest.FieldErrorf(field, "%d servers: more than 7 only slows etcd down; use 1, 3, 5 or 7", servers)
	}
	return nil
}

func (k *K3sSpec) validate(p string) error {
	if !versionRe.MatchString(k.Version) {
		return manifest.FieldErrorf(p+".version", "must be a k3s release such as v1.37.2+k3s1, got %q", k.Version)
	}
	for _, c := range []struct{ field, v string }{{"clusterCIDR", k.ClusterCIDR}, {"serviceCIDR", k.ServiceCIDR}} {
		if c.v == "" {
			continue
		}
		if _, err := netip.ParsePrefix(c.v); err != nil {
			return manifest.FieldErrorf(p+"."+c.field, "not a CIDR: %q", c.v)
		}
	}
	for i, d := range k.Disable {
		if !slices.Contains(disableable, d) {
			return manifest.FieldErrorf(fmt.Sprintf("%s.disable[%d]", p, i), "must be one of %s, got %q", strings.Join(disableable, ", "), d)
		}
	}
	if f := k.Flannel; f != nil && f.Backend != "" && !slices.Contains([]string{"vxlan", "host-gw", "wireguard-native", "none"}, f.Backend) {
		return manifest.FieldErrorf(p+".flannel.backend", "must be vxlan, host-gw, wireguard-native or none, got %q", f.Backend)
	}
	if in := k.Install; in != nil {
		switch in.Method {
		case "", InstallUpload:
			if in.ScriptURL != "" {
				return manifest.FieldErrorf(p+".install.scriptURL", "only for method %q", InstallScript)
			}
		case InstallScript:
			if u, err := url.Parse(in.ScriptURL); in.ScriptURL != "" && (err != nil || u.Scheme != "https" || u.Host == "") {
				return manifest.FieldErrorf(p+".install.scriptURL", "must be an https:// URL (the script runs as root on the node), got %q", in.ScriptURL)
			}
		default:
			return manifest.FieldErrorf(p+".install.method", "must be %q or %q, got %q", InstallUpload, InstallScript, in.Method)
		}
	}
	return checkArgs(p+".extraArgs", k.ExtraArgs)
}

// checkArgs refuses extra arguments that are not --flag or --flag=value,
// and the flags openctl sets itself.
func checkArgs(field string, args []string) error {
	for i, a := range args {
		if !argRe.MatchString(a) {
			return manifest.FieldErrorf(fmt.Sprintf("%s[%d]", field, i), "must be --flag or --flag=value, got %q", a)
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if slices.Contains(ownFlags, name) {
			return manifest.FieldErrorf(fmt.Sprintf("%s[%d]", field, i), "--%s is set by openctl from the spec", name)
		}
	}
	return nil
}

// ownFlags are the flags openctl writes into a node's configuration.
var ownFlags = []string{"token", "token-file", "agent-token", "agent-token-file", "server", "cluster-init", "node-name", "node-ip", "tls-san", "data-dir", "write-kubeconfig", "write-kubeconfig-mode", "config"}

func (s *SSHSpec) validate(p string) error {
	if s.Port < 0 || s.Port > 65535 {
		return manifest.FieldErrorf(p+".port", "must be a TCP port, got %d", s.Port)
	}
	if s.User != "" && !regexp.MustCompile(`^[a-z_][a-z0-9_-]*\$?$`).MatchString(s.User) {
		return manifest.FieldErrorf(p+".user", "not a user name: %q", s.User)
	}
	return nil
}

func checkHostKey(k string) error {
	if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k)); err != nil {
		return fmt.Errorf("not an SSH public key (\"ssh-ed25519 AAAA…\"): %v", err)
	}
	return nil
}

// NodeSpec is the spec of a k3s.openctl.io/v1 Node (the seed's K3sNode):
// k3s as a server or an agent on one machine reached over SSH. A Cluster
// plans one per server and worker; a Node can also be applied alone to
// add an existing machine to a cluster.
type NodeSpec struct {
	// Cluster names the Cluster the node belongs to. A node that gives
	// no Server joins it: the one named, or, when none is named, the only
	// Cluster openctl knows — with several it is refused (CONFLICT),
	// never guessed.
	Cluster string `json:"cluster,omitempty"`
	// Role is server or agent.
	Role string `json:"role"`
	// Init makes the node the first server of a new cluster
	// (--cluster-init); every other node joins through Server.
	Init bool `json:"init,omitempty"`
	// Address is the machine's IP address or DNS name (often a $ref to
	// its VM's status.ip).
	Address string `json:"address"`
	// SSHHostKey pins the machine's SSH host key (often a $ref to its
	// VM's status.sshHostKey).
	SSHHostKey string `json:"sshHostKey,omitempty"`
	// SSH is how openctl logs in.
	SSH SSHSpec `json:"ssh"`
	// K3s configures k3s; the values k3s requires to match on every
	// server (CIDRs, flannel, disabled components) and, when it is not
	// set, the version come from the cluster.
	K3s K3sSpec `json:"k3s"`
	// Server is the URL a joining node registers with
	// (https://<first server or VIP>:6443); empty for the first server.
	Server string `json:"server,omitempty"`
	// Token is the cluster's server token: the first server's own (empty:
	// generated), and for every joiner the full K10… form, so that the
	// cluster's CA is checked. Secret.
	Token string `json:"token,omitempty"`
	// AgentToken is the token agents join with. Secret.
	AgentToken string `json:"agentToken,omitempty"`
	// Kubeconfig is the cluster's admin kubeconfig (the first server's
	// status.kubeconfig), through which a joining node is checked in the
	// cluster's API. Secret.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// After orders joins: the node is applied after the resources these
	// $refs name (servers join one at a time). Their values are unused.
	After []any `json:"after,omitempty"`
	// TLSSANs are further names and addresses for a server's API
	// certificate (the VIP among them).
	TLSSANs []string `json:"tlsSANs,omitempty"`
	// VIP, on servers, deploys kube-vip holding this address.
	VIP *VIPSpec `json:"vip,omitempty"`
	// Labels and Taints are set when the node first registers
	// ("key=value", "key=value:NoSchedule").
	Labels []string `json:"labels,omitempty"`
	Taints []string `json:"taints,omitempty"`
	// ExtraArgs are further k3s flags for this node.
	ExtraArgs []string `json:"extraArgs,omitempty"`
	// Drain is how the node is drained before it leaves its cluster or
	// is upgraded.
	Drain *DrainSpec `json:"drain,omitempty"`
	// Upgrade, on an agent, says how many of its cluster's agents upgrade
	// at once.
	Upgrade *UpgradeSpec `json:"upgrade,omitempty"`
	// AgentPKI is the cluster's agent PKI (a secret), for a node that is
	// not the first server: a Cluster refers it to the first server's
	// status.agentPKI.
	AgentPKI string `json:"agentPKI,omitempty"`
}

// DecodeNodeSpec decodes and validates a Node's spec. Errors match
// errcode.Invalid and name the file, line and field path.
func DecodeNodeSpec(r *manifest.Resource) (*NodeSpec, error) {
	var s NodeSpec
	if err := manifest.DecodeSpec(r.Spec, &s); err != nil {
		return nil, r.Locate(err)
	}
	if err := s.validate(); err != nil {
		return nil, r.Locate(err)
	}
	return &s, nil
}

var (
	labelRe = regexp.MustCompile(`^[a-zA-Z0-9./_-]+=[a-zA-Z0-9._-]*$`)
	taintRe = regexp.MustCompile(`^[a-zA-Z0-9./_-]+(=[a-zA-Z0-9._-]*)?:(NoSchedule|PreferNoSchedule|NoExecute)$`)
)

func (s *NodeSpec) validate() error {
	if err := s.Drain.validate("spec.drain"); err != nil {
		return err
	}
	if err := s.Upgrade.validate("spec.upgrade"); err != nil {
		return err
	}
	switch s.Role {
	case RoleServer:
	case RoleAgent:
		if s.Init {
			return manifest.FieldErrorf("spec.init", "only a server can start a cluster")
		}
	default:
		return manifest.FieldErrorf("spec.role", "must be server or agent, got %q", s.Role)
	}
	if s.Address == "" {
		return manifest.FieldErrorf("spec.address", "required: the machine's IP address or DNS name")
	}
	if s.SSHHostKey != "" {
		if err := checkHostKey(s.SSHHostKey); err != nil {
			return manifest.FieldErrorf("spec.sshHostKey", "%v", err)
		}
	}
	if err := s.SSH.validate("spec.ssh"); err != nil {
		return err
	}
	if s.K3s.Version != "" || s.Init {
		if err := s.K3s.validate("spec.k3s"); err != nil {
			return err
		}
	}
	if s.Cluster != "" && !nameRe.MatchString(s.Cluster) {
		return manifest.FieldErrorf("spec.cluster", "must be a Cluster's name, got %q", s.Cluster)
	}
	switch {
	case s.Init && s.Server != "":
		return manifest.FieldErrorf("spec.server", "the first server (init) joins no one")
	case s.Server == "":
		// Joins the cluster spec.cluster names, or the only one openctl
		// knows (see joinInfo).
	case !strings.HasPrefix(s.Server, "https://"):
		return manifest.FieldErrorf("spec.server", "must be an https:// URL, got %q", s.Server)
	case s.Role == RoleServer && !strings.HasPrefix(s.Token, "K10"):
		return manifest.FieldErrorf("spec.token", "a joining server needs the cluster's full token (K10…), which pins its CA")
	case s.Role == RoleAgent && s.AgentToken == "" && s.Token == "":
		return manifest.FieldErrorf("spec.agentToken", "required with spec.server: the token agents join with")
	}
	for i, l := range s.Labels {
		if !labelRe.MatchString(l) {
			return manifest.FieldErrorf(fmt.Sprintf("spec.labels[%d]", i), "must be key=value, got %q", l)
		}
	}
	for i, t := range s.Taints {
		if !taintRe.MatchString(t) {
			return manifest.FieldErrorf(fmt.Sprintf("spec.taints[%d]", i), "must be key[=value]:NoSchedule|PreferNoSchedule|NoExecute, got %q", t)
		}
	}
	return checkArgs("spec.extraArgs", s.ExtraArgs)
}
