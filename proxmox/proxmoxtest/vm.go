package proxmoxtest

import (
	"crypto/ed25519"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// vm is a simulated QEMU guest. Fields are guarded by Server.mu.
type vm struct {
	id      int
	node    string
	conf    map[string]string
	running bool
	bootAt  time.Time // end of the last start/reboot task
	ip      string    // DHCP address, leased at first boot
	// flock is the config file lock held by running clone tasks: n > 0
	// shared holders (clones of a stopped source), -1 exclusive (clone of a
	// running source). Other writers fail with a lock timeout meanwhile.
	flock   int
	hostKey ssh.PublicKey
	// report is what Guests.Start said the guest agent reports; zero
	// without WithGuests or while stopped.
	report GuestReport
	// pending holds changes made while running, applied at the next start
	// (vmconfig_apply_pending); pendingDel the keys queued for removal.
	pending    map[string]string
	pendingDel map[string]bool
}

// withPending is the config with pending changes applied, as GET config
// shows it unless current=1.
func (v *vm) withPending() map[string]string {
	out := maps.Clone(v.conf)
	for k, val := range v.pending {
		out[k] = val
	}
	for k := range v.pendingDel {
		delete(out, k)
	}
	return out
}

func (v *vm) applyPending() {
	for k, val := range v.pending {
		v.conf[k] = val
	}
	for k := range v.pendingDel {
		delete(v.conf, k)
	}
	v.pending, v.pendingDel = map[string]string{}, map[string]bool{}
}

// VM is a snapshot of a simulated VM's state, for assertions in tests.
type VM struct {
	VMID     int
	Node     string
	Name     string
	Running  bool
	Template bool
	Lock     string
	// Config is the VM's current configuration (every value a string).
	Config map[string]string
	// Pending are changes made while running, applied at the next start.
	Pending map[string]string
}

func (v *vm) snapshot() VM {
	return VM{
		VMID: v.id, Node: v.node, Name: v.conf["name"], Running: v.running,
		Template: v.conf["template"] == "1", Lock: v.conf["lock"], Config: maps.Clone(v.conf),
		Pending: maps.Clone(v.pending),
	}
}

// VMs returns every VM, ordered by VMID.
func (s *Server) VMs() []VM {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]VM, 0, len(s.vms))
	for _, v := range s.vms {
		out = append(out, v.snapshot())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VMID < out[j].VMID })
	return out
}

// VM returns the state of the VM vmid.
func (s *Server) VM(vmid int) (VM, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.vms[vmid]
	if !ok {
		return VM{}, false
	}
	return v.snapshot(), true
}

// SetLock sets (or with "" clears) the lock of VM vmid, as a backup or
// migration would.
func (s *Server) SetLock(vmid int, lock string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.vms[vmid]
	if !ok {
		return fmt.Errorf("proxmoxtest: no VM %d", vmid)
	}
	if lock == "" {
		delete(v.conf, "lock")
	} else {
		v.conf["lock"] = lock
	}
	return nil
}

// SetConfig sets (or with "" removes) one config option of VM vmid
// directly, as an administrator editing the VM outside openctl would.
func (s *Server) SetConfig(vmid int, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.vms[vmid]
	if !ok {
		return fmt.Errorf("proxmoxtest: no VM %d", vmid)
	}
	if value == "" {
		delete(v.conf, key)
	} else {
		v.conf[key] = value
	}
	return nil
}

// RemoveVM removes VM vmid at once, as a destroy that another client
// started would when it ends: every later request for it answers 500
// "Configuration file 'nodes/<node>/qemu-server/<vmid>.conf' does not
// exist". Tests call it (from WithRequestHook) to make a VM vanish between
// two reads.
func (s *Server) RemoveVM(vmid int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.vms[vmid]; !ok {
		return fmt.Errorf("proxmoxtest: no VM %d", vmid)
	}
	delete(s.vms, vmid)
	return nil
}

// DestroyVM destroys VM vmid at once, as another client's stop and
// destroy would, bypassing tasks: its guest (Guests) is powered off and
// forgotten, and every later request for the VM answers as for one that
// does not exist. Tests call it to lose a VM outside openctl.
func (s *Server) DestroyVM(vmid int) error {
	if err := s.RemoveVM(vmid); err != nil {
		return err
	}
	if s.cfg.guests != nil {
		s.cfg.guests.Destroy(vmid)
	}
	return nil
}

// HostKey is the SSH host key the guest of VM vmid serves in
// /etc/ssh/ssh_host_ed25519_key.pub.
func (s *Server) HostKey(vmid int) (ssh.PublicKey, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.vms[vmid]
	if !ok || v.hostKey == nil {
		return nil, false
	}
	return v.hostKey, true
}

// rand64 derives a reproducible number from the seed and parts.
func (s *Server) rand64(parts ...any) uint64 {
	h := sha1.Sum([]byte(fmt.Sprint(append([]any{s.cfg.seed}, parts...)...)))
	return binary.BigEndian.Uint64(h[:8])
}

// newHostKey gives VM vmid its own ed25519 host key; gen makes a recreated
// VM with the same id get a new one. Callers hold s.mu.
func (s *Server) newHostKey(vmid int) ssh.PublicKey {
	s.hostGen[vmid]++
	var seed [32]byte
	for i := 0; i < 4; i++ {
		binary.BigEndian.PutUint64(seed[i*8:], s.rand64("hostkey", vmid, s.hostGen[vmid], i))
	}
	pub, err := ssh.NewPublicKey(ed25519.NewKeyFromSeed(seed[:]).Public())
	if err != nil {
		return nil
	}
	return pub
}

// newMAC draws a MAC in Proxmox's OUI BC:24:11. Callers hold s.mu.
func (s *Server) newMAC(vmid int, key string) string {
	s.hostGen[-vmid]++
	x := s.rand64("mac", vmid, key, s.hostGen[-vmid])
	return fmt.Sprintf("BC:24:11:%02X:%02X:%02X", byte(x>>16), byte(x>>8), byte(x))
}

func (s *Server) newUUID(parts ...any) string {
	a, b := s.rand64(append(parts, "a")...), s.rand64(append(parts, "b")...)
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(a>>32), uint16(a>>16), uint16(a)&0xfff, uint16(b>>48)&0xfff, b&0xffffffffffff)
}

func (s *Server) seedTemplate(t Template) error {
	if t.Node == "" {
		t.Node = "pve1"
	}
	if t.DiskSize == "" {
		t.DiskSize = "10G"
	}
	if t.Storage == "" {
		t.Storage = "local-lvm"
	}
	if _, ok := s.storageByName(t.Storage); !ok {
		return fmt.Errorf("proxmoxtest: template %d: no storage %q", t.VMID, t.Storage)
	}
	if !s.hasNode(t.Node) {
		return fmt.Errorf("proxmoxtest: template %d: no node %q", t.VMID, t.Node)
	}
	if t.VMID < 100 {
		return fmt.Errorf("proxmoxtest: template VMID %d below 100", t.VMID)
	}
	if _, ok := s.vms[t.VMID]; ok {
		return fmt.Errorf("proxmoxtest: template VMID %d used twice", t.VMID)
	}
	conf := map[string]string{
		"name":     t.Name,
		"boot":     "order=scsi0",
		"cores":    "2",
		"sockets":  "1",
		"memory":   "2048",
		"ostype":   "l26",
		"scsihw":   "virtio-scsi-single",
		"scsi0":    fmt.Sprintf("%s:base-%d-disk-0,discard=on,size=%s", t.Storage, t.VMID, t.DiskSize),
		"ide2":     fmt.Sprintf("%s:vm-%d-cloudinit,media=cdrom", t.Storage, t.VMID),
		"net0":     fmt.Sprintf("virtio=%s,bridge=vmbr0", s.newMAC(t.VMID, "net0")),
		"serial0":  "socket",
		"vga":      "serial0",
		"template": "1",
		"smbios1":  "uuid=" + s.newUUID("smbios", t.VMID),
		"vmgenid":  s.newUUID("vmgenid", t.VMID),
		"meta":     fmt.Sprintf("creation-qemu=9.2.0,ctime=%d", s.started.Unix()-86400),
	}
	if t.Agent {
		conf["agent"] = "1"
	}
	s.vms[t.VMID] = newVM(t.VMID, t.Node, conf)
	s.vms[t.VMID].hostKey = s.newHostKey(t.VMID)
	return nil
}

// Config keys: PVE/QemuServer.pm $confdesc. Integer and boolean keys are
// rendered as JSON numbers; everything else (memory included, a property
// string since PVE 8.1) as strings.
var (
	numericKeys = map[string]bool{
		"cores": true, "sockets": true, "vcpus": true, "balloon": true, "cpuunits": true,
		"numa": true, "onboot": true, "protection": true, "kvm": true, "acpi": true,
		"tablet": true, "localtime": true, "freeze": true, "template": true,
		"ciupgrade": true, "cpulimit": true, "reboot": true, "shares": true, "autostart": true,
	}
	booleanKeys = map[string]bool{
		"numa": true, "onboot": true, "protection": true, "kvm": true, "acpi": true,
		"tablet": true, "localtime": true, "freeze": true, "template": true,
		"ciupgrade": true, "reboot": true, "autostart": true,
	}
	stringKeys = map[string]bool{
		"name": true, "description": true, "agent": true, "boot": true, "memory": true,
		"cpu": true, "ostype": true, "scsihw": true, "tags": true, "ciuser": true,
		"cipassword": true, "citype": true, "cicustom": true, "sshkeys": true,
		"nameserver": true, "searchdomain": true, "vga": true, "bios": true, "machine": true,
		"smbios1": true, "vmgenid": true, "startup": true, "hotplug": true,
		"hookscript": true, "efidisk0": true, "tpmstate0": true, "args": true,
		"keyboard": true, "affinity": true, "watchdog": true, "rng0": true, "audio0": true,
		"migrate_downtime": true, "migrate_speed": true, "spice_enhancements": true, "ivshmem": true,
	}
	indexedKeyRe = regexp.MustCompile(`^(net|ipconfig|unused|usb|hostpci|numa|scsi|virtio|sata|ide|serial|parallel)(\d+)$`)
	indexedMax   = map[string]int{"net": 31, "ipconfig": 31, "unused": 255, "usb": 13, "hostpci": 15, "numa": 7, "scsi": 30, "virtio": 15, "sata": 5, "ide": 3, "serial": 3, "parallel": 2}
	diskKeyRe    = regexp.MustCompile(`^(scsi|virtio|sata|ide)\d+$|^efidisk0$|^tpmstate0$`)
	dnsNameRe    = regexp.MustCompile(`^(?i:[a-z0-9]([a-z0-9-]*[a-z0-9])?)(\.(?i:[a-z0-9]([a-z0-9-]*[a-z0-9])?))*$`)
	urlEncodedRe = regexp.MustCompile(`^[A-Za-z0-9%._~*'()!-]*$`)
	sizeRe       = regexp.MustCompile(`^(\+)?(\d+(?:\.\d+)?)([KMGT]?)$`)
	newDiskRe    = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9._-]*):(\d+(?:\.\d+)?)(,.*)?$`)
	ipCIDRRe     = regexp.MustCompile(`^(\d{1,3}(?:\.\d{1,3}){3})/(\d{1,2})$`)
)

func knownKey(k string) bool {
	if numericKeys[k] || stringKeys[k] {
		return true
	}
	m := indexedKeyRe.FindStringSubmatch(k)
	if m == nil {
		return false
	}
	n, _ := strconv.Atoi(m[2])
	return n <= indexedMax[m[1]]
}

// renderConfig renders a config as GET config does.
func renderConfig(conf map[string]string) map[string]any {
	out := make(map[string]any, len(conf)+1)
	for k, v := range conf {
		if numericKeys[k] {
			if n, err := strconv.ParseFloat(v, 64); err == nil {
				out[k] = n
				continue
			}
		}
		out[k] = v
	}
	out["digest"] = configDigest(conf)
	return out
}

func configDigest(conf map[string]string) string {
	keys := slices.Sorted(maps.Keys(conf))
	h := sha1.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s: %s\n", k, conf[k])
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// propList parses a property string "a,b=c" into the default value and
// key=value pairs.
func propList(v string) (first string, kv map[string]string) {
	kv = map[string]string{}
	for i, part := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			if i == 0 {
				first = part
			}
			continue
		}
		kv[k] = val
		if i == 0 {
			first = part
		}
	}
	return first, kv
}

// agentEnabled reads the "agent" option: "[enabled=]<1|0>[,...]".
func agentEnabled(conf map[string]string) bool {
	v, ok := conf["agent"]
	if !ok {
		return false
	}
	first, kv := propList(v)
	if e, ok := kv["enabled"]; ok {
		b, _ := parseBool(e)
		return b
	}
	b, _ := parseBool(first)
	return b
}

// parseSize reads a disk size (PVE::JSONSchema::parse_size): no unit is
// bytes.
func parseSize(v string) (uint64, bool) {
	m := sizeRe.FindStringSubmatch(v)
	if m == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		return 0, false
	}
	mult := map[string]float64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m[3]]
	return uint64(f * mult), true
}

// formatSize renders bytes with the largest unit that divides them
// (PVE::JSONSchema::format_size).
func formatSize(b uint64) string {
	for _, u := range []struct {
		s string
		n uint64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if b >= u.n && b%u.n == 0 {
			return fmt.Sprintf("%d%s", b/u.n, u.s)
		}
	}
	return strconv.FormatUint(b, 10)
}

func diskSize(v string) uint64 {
	_, kv := propList(v)
	n, _ := parseSize(kv["size"])
	return n
}

func isCDROM(v string) bool {
	_, kv := propList(v)
	return kv["media"] == "cdrom"
}

func splitList(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == ' ' })
}

// normalizeTags sorts and de-duplicates tags as PVE does
// (PVE::GuestHelpers::get_unique_tags).
func normalizeTags(v string) string {
	tags := splitList(v)
	sort.Strings(tags)
	return strings.Join(slices.Compact(tags), ";")
}

func newVM(id int, node string, conf map[string]string) *vm {
	return &vm{id: id, node: node, conf: conf, pending: map[string]string{}, pendingDel: map[string]bool{}}
}
