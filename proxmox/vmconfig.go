package proxmox

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

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
// last line of the description,
//
//	managed-by: openctl; template-name=T; owner=O; provisioning (do not edit this line)
//
// owner (the identity of the state store that created or adopted the VM,
// registry.Call.Owner) and provisioning (the creation is not finished) are
// there only when they apply.
const (
	managedTag    = "openctl"
	markerPrefix  = "managed-by: openctl"
	markerTmplNm  = "template-name="
	markerTmplID  = "template-vmid="
	markerOwner   = "owner="
	markerComment = " (do not edit this line)"
	// markerProvisioning marks a VM whose creation has not finished: it
	// stays until the VM is configured, in its desired power state and,
	// when running, its address is known. An Apply that finds it finishes
	// the VM as new, and Diff reports it.
	markerProvisioning = "provisioning"
)

// marking is what the marker line says besides "managed by openctl".
type marking struct {
	tmpl TemplateSpec
	// owner is the state store that owns the VM; "" for a VM marked
	// before owners were recorded (or by a provider used without an
	// engine), which any store may adopt.
	owner        string
	provisioning bool
}

// marker renders the description's marker line.
func (m marking) marker() string {
	var b strings.Builder
	b.WriteString(markerPrefix + "; ")
	if m.tmpl.Name != "" {
		b.WriteString(markerTmplNm + m.tmpl.Name)
	} else {
		b.WriteString(markerTmplID + strconv.Itoa(m.tmpl.VMID))
	}
	if m.owner != "" {
		// Escaped: an owner is one field of one line.
		b.WriteString("; " + markerOwner + url.QueryEscape(m.owner))
	}
	if m.provisioning {
		b.WriteString("; " + markerProvisioning)
	}
	b.WriteString(markerComment)
	return b.String()
}

// isProvisioning reports whether a VM's creation never finished.
func isProvisioning(conf vmConfig) bool {
	_, m, ok := splitDescription(conf["description"])
	return ok && m.provisioning
}

// ownerOf is the owner the VM's marker names ("" for none).
func ownerOf(conf vmConfig) string {
	_, m, _ := splitDescription(conf["description"])
	return m.owner
}

// splitDescription separates the user's description from openctl's
// marker; managed reports whether the marker is there.
func splitDescription(desc string) (user string, m marking, managed bool) {
	desc = strings.TrimRight(desc, "\n")
	i := strings.LastIndex(desc, markerPrefix)
	if i < 0 || (i > 0 && desc[i-1] != '\n') || strings.Contains(desc[i:], "\n") {
		return desc, m, false
	}
	line := strings.TrimSuffix(desc[i:], markerComment)
	for f := range strings.SplitSeq(line, "; ") {
		if v, ok := strings.CutPrefix(f, markerTmplNm); ok {
			m.tmpl.Name = v
		}
		if v, ok := strings.CutPrefix(f, markerTmplID); ok {
			m.tmpl.VMID, _ = strconv.Atoi(v)
		}
		if v, ok := strings.CutPrefix(f, markerOwner); ok {
			if o, err := url.QueryUnescape(v); err == nil {
				m.owner = o
			} else {
				m.owner = v
			}
		}
		if f == markerProvisioning {
			m.provisioning = true
		}
	}
	return strings.TrimRight(desc[:i], "\n"), m, true
}

// description joins the user's description and the marker.
func description(user string, m marking) string {
	if user == "" {
		return m.marker()
	}
	return user + "\n\n" + m.marker()
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
