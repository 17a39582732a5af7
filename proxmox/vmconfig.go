package proxmox

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	pve "github.com/luthermonson/go-proxmox"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

// vmConfig is a VM's config as Proxmox returns it, every value as a string.
type vmConfig map[string]string

// newVMConfig converts a decoded GET .../config answer.
func newVMConfig(m map[string]any) vmConfig {
	out := make(vmConfig, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case string:
			out[k] = x
		case float64:
			out[k] = strconv.FormatFloat(x, 'f', -1, 64)
		case bool:
			out[k] = map[bool]string{true: "1", false: "0"}[x]
		case nil:
		default:
			out[k] = fmt.Sprint(x)
		}
	}
	return out
}

// The marker that makes a VM recognisable as openctl's: the tag and the
// last line of the description.
const (
	managedTag    = "openctl"
	markerPrefix  = "managed-by: openctl"
	markerTmplNm  = "template-name="
	markerTmplID  = "template-vmid="
	markerComment = " (do not edit this line)"
	// markerProvisioning marks a clone whose creation has not finished
	// (configured, started): an Apply that finds it finishes it as new.
	markerProvisioning = "provisioning"
)

// marker renders the description's marker line for a template.
func marker(t *TemplateSpec) string {
	if t.Name != "" {
		return markerPrefix + "; " + markerTmplNm + t.Name + markerComment
	}
	return markerPrefix + "; " + markerTmplID + strconv.Itoa(t.VMID) + markerComment
}

// provisioningDescription is the description a clone starts with: the
// marker flagged "provisioning" until the VM is configured.
func provisioningDescription(user string, t *TemplateSpec) string {
	return strings.TrimSuffix(description(user, t), markerComment) + "; " + markerProvisioning + markerComment
}

// isProvisioning reports whether a VM's creation never finished.
func isProvisioning(conf vmConfig) bool {
	desc := strings.TrimRight(conf["description"], "\n")
	i := strings.LastIndex(desc, markerPrefix)
	return i >= 0 && strings.Contains(desc[i:], "; "+markerProvisioning+markerComment)
}

// splitDescription separates the user's description from openctl's
// marker; managed reports whether the marker is there.
func splitDescription(desc string) (user string, tmpl TemplateSpec, managed bool) {
	desc = strings.TrimRight(desc, "\n")
	i := strings.LastIndex(desc, markerPrefix)
	if i < 0 || (i > 0 && desc[i-1] != '\n') || strings.Contains(desc[i:], "\n") {
		return desc, tmpl, false
	}
	line := strings.TrimSuffix(desc[i:], markerComment)
	for f := range strings.SplitSeq(line, "; ") {
		if v, ok := strings.CutPrefix(f, markerTmplNm); ok {
			tmpl.Name = v
		}
		if v, ok := strings.CutPrefix(f, markerTmplID); ok {
			tmpl.VMID, _ = strconv.Atoi(v)
		}
	}
	return strings.TrimRight(desc[:i], "\n"), tmpl, true
}

// description joins the user's description and the marker.
func description(user string, t *TemplateSpec) string {
	if user == "" {
		return marker(t)
	}
	return user + "\n\n" + marker(t)
}

// propList parses a Proxmox property string "a=1,b=2" (a first entry
// without "=" is returned as first, e.g. the model of "virtio=MAC,...").
func propList(s string) (first string, kv map[string]string) {
	kv = map[string]string{}
	for i, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			if i == 0 {
				first = part
			} else {
				kv[part] = ""
			}
			continue
		}
		kv[k] = v
	}
	return first, kv
}

// renderProps renders kv with the given keys first, then the rest sorted.
func renderProps(kv map[string]string, first ...string) string {
	var parts []string
	done := map[string]bool{}
	for _, k := range first {
		if v, ok := kv[k]; ok {
			parts = append(parts, k+"="+v)
			done[k] = true
		}
	}
	for _, k := range sortedKeys(kv) {
		if !done[k] {
			parts = append(parts, k+"="+kv[k])
		}
	}
	return strings.Join(parts, ",")
}

// netDevice is a parsed netN value: "virtio=BC:24:11:..,bridge=vmbr0,tag=10,firewall=1".
type netDevice struct {
	Model, MAC string
	Opts       map[string]string
}

func parseNet(s string) netDevice {
	_, kv := propList(s)
	d := netDevice{Opts: map[string]string{}}
	for k, v := range kv {
		if slices.Contains(netModels, k) {
			d.Model, d.MAC = k, strings.ToUpper(v)
			continue
		}
		d.Opts[k] = v
	}
	return d
}

func (d netDevice) String() string {
	head := d.Model
	if d.MAC != "" {
		head += "=" + d.MAC
	}
	rest := renderProps(d.Opts, "bridge", "tag", "firewall")
	if rest == "" {
		return head
	}
	return head + "," + rest
}

// diskSize returns the size= of a disk value in bytes.
func diskSize(val string) (uint64, bool) {
	_, kv := propList(val)
	n, err := parseSize(kv["size"])
	return n, err == nil
}

// isCDROM reports whether a drive value is a CD-ROM (cloud-init drives
// included).
func isCDROM(val string) bool {
	_, kv := propList(val)
	return kv["media"] == "cdrom" || strings.Contains(val, "cloudinit")
}

// parseIPConfig parses "ip=dhcp,gw=...,ip6=...,gw6=...".
func parseIPConfig(s string) IPConfig {
	_, kv := propList(s)
	return IPConfig{IP: kv["ip"], Gateway: kv["gw"], IP6: kv["ip6"], Gateway6: kv["gw6"]}
}

func (c IPConfig) String() string {
	kv := map[string]string{}
	for k, v := range map[string]string{"ip": c.IP, "gw": c.Gateway, "ip6": c.IP6, "gw6": c.Gateway6} {
		if v != "" {
			kv[k] = v
		}
	}
	return renderProps(kv, "ip", "gw", "ip6", "gw6")
}

// agentEnabled reads the agent option ("1", "enabled=1,fstrim_cloned_disks=1").
func agentEnabled(val string) bool {
	first, kv := propList(val)
	if first != "" {
		return first == "1"
	}
	return kv["enabled"] == "1"
}

// tagsOf splits a Proxmox tag list.
func tagsOf(val string) []string {
	var out []string
	for t := range strings.FieldsFuncSeq(val, func(r rune) bool { return r == ';' || r == ',' || r == ' ' }) {
		out = append(out, t)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// sshKeysOf decodes the URL-encoded sshkeys option into one key per entry.
func sshKeysOf(val string) []string {
	dec, err := url.QueryUnescape(strings.ReplaceAll(val, "+", "%2B"))
	if err != nil {
		dec = val
	}
	var out []string
	for l := range strings.SplitSeq(dec, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// plan is what converging a VM to a spec takes.
type plan struct {
	config  map[string]string // options to set in one config request
	resizes []resize
	fields  []manifest.FieldChange
	// restart lists changes that take effect only after a reboot when the
	// VM is running.
	restart []string
	// replace lists reasons why the VM must be re-created.
	replace []string
}

type resize struct {
	disk string
	size string // "+NG" or absolute like "20G"
	from uint64
	to   uint64
}

func (pl *plan) empty() bool { return len(pl.config) == 0 && len(pl.resizes) == 0 }

// hotplugged reports whether Proxmox applies a change to key on a running
// VM at once (default hotplug "network,disk,usb"); everything else stays
// pending until the next boot.
func hotplugged(key string) bool {
	switch key {
	case "name", "description", "tags", "onboot", "protection", "startup":
		return true
	}
	return netNameRe.MatchString(key) || diskNameRe.MatchString(key)
}

// planChanges compares spec with a VM's config (pending values included,
// as GET config returns them) and says what to set. live is the node the
// VM is on. defaults come from the context.
func planChanges(s *VMSpec, name, node string, conf vmConfig, running bool, d Defaults) (*plan, error) {
	pl := &plan{config: map[string]string{}}
	set := func(key, path string, old, new any) {
		pl.fields = append(pl.fields, manifest.FieldChange{Path: path, Old: old, New: new})
		if running && !hotplugged(key) {
			pl.restart = append(pl.restart, path)
		}
	}
	setKey := func(key, path, old, new string, oldV, newV any) {
		if old == new {
			return
		}
		pl.config[key] = new
		set(key, path, oldV, newV)
	}

	userDesc, tmpl, managed := splitDescription(conf["description"])
	if !managed {
		return nil, errcode.New(errcode.AlreadyExists, fmt.Sprintf("a VM named %s exists (VMID %s on %s) that openctl did not create; rename or remove it, or choose another name", name, conf["vmid"], node))
	}
	// Replacement: another template, or a node the spec does not allow.
	if s.Template.Name != tmpl.Name || s.Template.VMID != tmpl.VMID {
		pl.replace = append(pl.replace, fmt.Sprintf("template changed from %s to %s: needs a new VM", tmplLabel(tmpl), tmplLabel(*s.Template)))
	}
	if s.Node != "" && s.Node != node {
		pl.replace = append(pl.replace, fmt.Sprintf("node changed from %s to %s: needs a new VM", node, s.Node))
	}
	if len(s.Nodes) > 0 && !slices.Contains(s.Nodes, node) {
		pl.replace = append(pl.replace, fmt.Sprintf("the VM is on %s, which nodes %v excludes: needs a new VM", node, s.Nodes))
	}

	setKey("name", "metadata.name", conf["name"], name, conf["name"], name)
	wantDesc := description(s.Description, s.Template)
	if conf["description"] != wantDesc {
		pl.config["description"] = wantDesc
		if userDesc != s.Description {
			set("description", "spec.description", userDesc, s.Description)
		}
	}
	wantTags := tagsOf(strings.Join(append([]string{managedTag}, s.Tags...), ";"))
	if have := tagsOf(conf["tags"]); !slices.Equal(have, wantTags) {
		pl.config["tags"] = strings.Join(wantTags, ";")
		set("tags", "spec.tags", without(have, managedTag), without(wantTags, managedTag))
	}
	if s.OnBoot != nil {
		setKey("onboot", "spec.onBoot", boolStr(conf["onboot"] == "1"), boolStr(*s.OnBoot), conf["onboot"] == "1", *s.OnBoot)
	}
	if c := s.CPU; c != nil {
		if c.Cores != 0 {
			setKey("cores", "spec.cpu.cores", orDefault(conf["cores"], "1"), strconv.Itoa(c.Cores), atoi(orDefault(conf["cores"], "1")), c.Cores)
		}
		if c.Sockets != 0 {
			setKey("sockets", "spec.cpu.sockets", orDefault(conf["sockets"], "1"), strconv.Itoa(c.Sockets), atoi(orDefault(conf["sockets"], "1")), c.Sockets)
		}
		if c.Type != "" {
			first, kv := propList(conf["cpu"])
			have := first
			if have == "" {
				have = kv["cputype"]
			}
			if have != c.Type {
				pl.config["cpu"] = c.Type
				set("cpu", "spec.cpu.type", have, c.Type)
			}
		}
	}
	if s.Memory != nil && s.Memory.Size != 0 {
		first, kv := propList(conf["memory"])
		have := first
		if have == "" {
			have = kv["current"]
		}
		setKey("memory", "spec.memory.size", orDefault(have, "512"), strconv.Itoa(s.Memory.Size), atoi(orDefault(have, "512")), s.Memory.Size)
	}
	if s.Agent != nil && s.Agent.Enabled != nil {
		have := agentEnabled(conf["agent"])
		if have != *s.Agent.Enabled {
			_, kv := propList(conf["agent"])
			kv["enabled"] = boolStr(*s.Agent.Enabled)
			pl.config["agent"] = renderProps(kv, "enabled")
			set("agent", "spec.agent.enabled", have, *s.Agent.Enabled)
		}
	}
	for i, n := range s.Networks {
		path := fmt.Sprintf("spec.networks[%d]", i)
		old, exists := conf[n.Name]
		dev := parseNet(old)
		want := dev
		want.Opts = map[string]string{}
		for k, v := range dev.Opts {
			want.Opts[k] = v
		}
		if n.Model != "" {
			want.Model = n.Model
		}
		if want.Model == "" {
			want.Model = "virtio"
		}
		if n.MACAddress != "" {
			want.MAC = strings.ToUpper(n.MACAddress)
		}
		bridge := n.Bridge
		if bridge == "" && !exists {
			bridge = orDefault(d.Bridge, "vmbr0")
		}
		if bridge != "" {
			want.Opts["bridge"] = bridge
		}
		if n.VLAN != 0 {
			want.Opts["tag"] = strconv.Itoa(n.VLAN)
		} else {
			delete(want.Opts, "tag")
		}
		if n.Firewall != nil {
			want.Opts["firewall"] = boolStr(*n.Firewall)
		}
		if !exists || want.String() != dev.String() {
			pl.config[n.Name] = want.String()
			set(n.Name, path, old, want.String())
		}
	}
	for i, disk := range s.Disks {
		path := fmt.Sprintf("spec.disks[%d]", i)
		want, _ := parseSize(disk.Size)
		val, exists := conf[disk.Name]
		if !exists {
			st := disk.Storage
			if st == "" {
				st = orDefault(s.Storage, d.Storage)
			}
			if st == "" {
				return nil, ferr(path+".storage", "disk %s does not exist in the template: name the storage to create it on", disk.Name)
			}
			// "storage:N" allocates N GiB; N may be fractional, so a
			// size such as 1500M is created exactly rather than rounded
			// up to a GiB (which the next Apply would see as a shrink).
			gib := strconv.FormatFloat(float64(want)/(1<<30), 'f', -1, 64)
			pl.config[disk.Name] = st + ":" + gib
			set(disk.Name, path, nil, disk.Size)
			continue
		}
		if isCDROM(val) {
			return nil, ferr(path+".name", "%s is a CD-ROM drive, not a disk", disk.Name)
		}
		have, ok := diskSize(val)
		if !ok {
			continue
		}
		switch {
		case want < have:
			return nil, ferr(path+".size", "disk %s cannot shrink from %s to %s (Proxmox only grows disks)", disk.Name, formatSize(have), disk.Size)
		case want > have:
			pl.resizes = append(pl.resizes, resize{disk: disk.Name, size: formatSize(want), from: have, to: want})
			pl.fields = append(pl.fields, manifest.FieldChange{Path: path + ".size", Old: formatSize(have), New: formatSize(want)})
		}
	}
	if ci := s.CloudInit; ci != nil {
		if ci.User != "" {
			setKey("ciuser", "spec.cloudInit.user", conf["ciuser"], ci.User, conf["ciuser"], ci.User)
		}
		if ci.Password != "" && conf["cipassword"] == "" {
			// Proxmox never returns the password: it is set when the VM
			// has none (in practice, at creation).
			pl.config["cipassword"] = ci.Password
			set("cipassword", "spec.cloudInit.password", nil, "[redacted]")
		}
		if ci.SSHKeys != nil {
			have := sshKeysOf(conf["sshkeys"])
			want := make([]string, 0, len(ci.SSHKeys))
			for _, k := range ci.SSHKeys {
				want = append(want, strings.TrimSpace(k))
			}
			if !slices.Equal(have, want) {
				pl.config["sshkeys"] = pve.EncodeSSHKeys(want...)
				set("sshkeys", "spec.cloudInit.sshKeys", have, want)
			}
		}
		if ci.SearchDomain != "" {
			setKey("searchdomain", "spec.cloudInit.searchDomain", conf["searchdomain"], ci.SearchDomain, conf["searchdomain"], ci.SearchDomain)
		}
		if ci.Nameservers != nil {
			want := strings.Join(ci.Nameservers, " ")
			setKey("nameserver", "spec.cloudInit.nameservers", conf["nameserver"], want, strings.Fields(conf["nameserver"]), ci.Nameservers)
		}
		for _, n := range sortedKeys(ci.IPConfig) {
			key := "ipconfig" + strings.TrimPrefix(n, "net")
			want := ci.IPConfig[n].String()
			if parseIPConfig(conf[key]).String() != want {
				pl.config[key] = want
				set(key, "spec.cloudInit.ipConfig."+n, conf[key], want)
			}
		}
	}
	return pl, nil
}

func tmplLabel(t TemplateSpec) string {
	if t.Name != "" {
		return t.Name
	}
	if t.VMID != 0 {
		return "VMID " + strconv.Itoa(t.VMID)
	}
	return "(unknown)"
}

func without(list []string, drop string) []string {
	out := []string{}
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

func boolStr(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
