package proxmox

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"

	pve "github.com/luthermonson/go-proxmox"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
)

// vmField is one row of vmFields, the one description of how a
// VirtualMachine spec field maps to Proxmox: validation (VMSpec.validate),
// the diff and the config write (planChanges) and the spec read back from a
// live VM (vmResource) all walk the table, so a field is added or changed
// in one place. Rows are in the order changes are reported.
type vmField struct {
	// path is the field's path, "spec.cpu.cores"; a list or map field
	// names its root ("spec.networks").
	path string
	// validate checks the field in a decoded spec; nil when any value
	// decoding accepts is valid.
	validate func(s *VMSpec) error
	// plan compares the spec with the live VM and records in pl what to
	// write, grow or re-create; nil for fields Apply reads elsewhere.
	plan func(pl *planner) error
	// read sets the field's live value in a spec rebuilt from the VM
	// (spec is the map under "spec"); nil for write-only fields.
	read func(vm liveVM, spec map[string]any)
}

// liveVM is what the table reads from: a VM's config (pending values
// included) and where it is.
type liveVM struct {
	context string // the context's name, "" for an unnamed default
	node    string
	state   string // running, stopped, ...
	conf    vmConfig
}

// configField builds the row of a field that is one Proxmox config
// option. A change is written when want differs from have (both config
// values) and reported when their spec values (value) differ.
type configField struct {
	path, key string
	// hotplug: Proxmox applies a change on a running VM at once (default
	// hotplug "network,disk,usb"); otherwise it stays pending until the
	// next boot.
	hotplug bool
	// want is the config value the spec asks for; false when the spec
	// leaves the option alone.
	want func(s *VMSpec, conf vmConfig) (string, bool)
	// have is the option's current value in the form want renders,
	// Proxmox's default filled in (default: conf[key]).
	have func(conf vmConfig) string
	// value is the spec value of a config value (default: the string).
	value func(v string) any
	// write renders want into the option, keeping what the spec does not
	// manage (default: want as is).
	write func(want string, conf vmConfig) string
	// omitEmpty leaves an empty value ("", empty list) out of a rebuilt
	// spec; writeOnly leaves the field out altogether (Proxmox hides it).
	omitEmpty, writeOnly bool
	validate             func(s *VMSpec) error
}

func (f configField) row() vmField {
	have := f.have
	if have == nil {
		have = func(conf vmConfig) string { return conf[f.key] }
	}
	value := f.value
	if value == nil {
		value = func(v string) any { return v }
	}
	row := vmField{path: f.path, validate: f.validate}
	row.plan = func(pl *planner) error {
		want, ok := f.want(pl.spec, pl.vm.conf)
		old := have(pl.vm.conf)
		if !ok || want == old {
			return nil
		}
		if f.write != nil {
			want = f.write(want, pl.vm.conf)
		}
		pl.config[f.key] = want
		if oldV, newV := value(old), value(want); !reflect.DeepEqual(oldV, newV) {
			pl.change(f.path, f.hotplug, oldV, newV)
		}
		return nil
	}
	if !f.writeOnly {
		row.read = func(vm liveVM, spec map[string]any) {
			v := value(have(vm.conf))
			if f.omitEmpty && isEmpty(v) {
				return
			}
			setPath(spec, strings.TrimPrefix(f.path, "spec."), v)
		}
	}
	return row
}

// vmFields is the field table.
var vmFields = []vmField{
	{path: "spec.template", validate: validateTemplate, plan: planTemplate, read: readTemplate},
	{path: "spec.node", validate: validateNodes, plan: planNode, read: func(vm liveVM, spec map[string]any) { spec["node"] = vm.node }},
	{path: "spec.context", read: func(vm liveVM, spec map[string]any) {
		if vm.context != "" {
			spec["context"] = vm.context
		}
	}},
	{path: "spec.storage", validate: validateStorage},
	{path: "metadata.name", plan: func(pl *planner) error {
		if have := pl.vm.conf["name"]; have != pl.name {
			pl.config["name"] = pl.name
			pl.change("metadata.name", true, have, pl.name)
		}
		return nil
	}},
	{path: "spec.description", plan: planDescription, read: readDescription, validate: func(s *VMSpec) error {
		if len(s.Description) > 8000 {
			return manifest.FieldErrorf("spec.description", "longer than 8000 bytes")
		}
		return nil
	}},
	configField{path: "spec.tags", key: "tags", hotplug: true, omitEmpty: true,
		want: func(s *VMSpec, _ vmConfig) (string, bool) {
			return strings.Join(tagsOf(strings.Join(append([]string{managedTag}, s.Tags...), ";")), ";"), true
		},
		have:  func(conf vmConfig) string { return strings.Join(tagsOf(conf["tags"]), ";") },
		value: func(v string) any { return anyList(without(tagsOf(v), managedTag)) },
		validate: func(s *VMSpec) error {
			if len(s.Tags) > maxTags {
				return manifest.FieldErrorf("spec.tags", "at most %d tags, got %d", maxTags, len(s.Tags))
			}
			for i, t := range s.Tags {
				if len(t) > maxTagLen {
					return manifest.FieldErrorf(fmt.Sprintf("spec.tags[%d]", i), "a tag is at most %d characters, got %d", maxTagLen, len(t))
				}
				if !tagRe.MatchString(t) {
					return manifest.FieldErrorf(fmt.Sprintf("spec.tags[%d]", i), "tags are lower-case letters, digits and _-+. (got %q)", t)
				}
			}
			return nil
		}}.row(),
	configField{path: "spec.onBoot", key: "onboot", hotplug: true,
		want: func(s *VMSpec, _ vmConfig) (string, bool) {
			return boolStr(s.OnBoot != nil && *s.OnBoot), s.OnBoot != nil
		},
		have:  func(conf vmConfig) string { return boolStr(conf["onboot"] == "1") },
		value: func(v string) any { return v == "1" }}.row(),
	configField{path: "spec.cpu.cores", key: "cores",
		want:     func(s *VMSpec, _ vmConfig) (string, bool) { return intSet(s.cpu().Cores) },
		have:     func(conf vmConfig) string { return orDefault(conf["cores"], "1") },
		value:    int64Value,
		validate: func(s *VMSpec) error { return inRange("spec.cpu.cores", s.cpu().Cores, 1, 1024, "") }}.row(),
	configField{path: "spec.cpu.sockets", key: "sockets",
		want:     func(s *VMSpec, _ vmConfig) (string, bool) { return intSet(s.cpu().Sockets) },
		have:     func(conf vmConfig) string { return orDefault(conf["sockets"], "1") },
		value:    int64Value,
		validate: func(s *VMSpec) error { return inRange("spec.cpu.sockets", s.cpu().Sockets, 1, 4, "") }}.row(),
	configField{path: "spec.cpu.type", key: "cpu", omitEmpty: true,
		want: func(s *VMSpec, _ vmConfig) (string, bool) { return strSet(s.cpu().Type) },
		have: func(conf vmConfig) string { first, kv := propList(conf["cpu"]); return orDefault(first, kv["cputype"]) },
		validate: func(s *VMSpec) error {
			return matches("spec.cpu.type", s.cpu().Type, cpuTypeRe.MatchString, "invalid CPU type %q")
		}}.row(),
	configField{path: "spec.memory.size", key: "memory",
		want: func(s *VMSpec, _ vmConfig) (string, bool) { return intSet(s.memory().Size) },
		have: func(conf vmConfig) string {
			first, kv := propList(conf["memory"])
			return orDefault(orDefault(first, kv["current"]), "512")
		},
		value:    int64Value,
		validate: func(s *VMSpec) error { return inRange("spec.memory.size", s.memory().Size, 16, 4178944, " MiB") }}.row(),
	configField{path: "spec.agent.enabled", key: "agent",
		want: func(s *VMSpec, _ vmConfig) (string, bool) {
			if s.Agent == nil || s.Agent.Enabled == nil {
				return "", false
			}
			return boolStr(*s.Agent.Enabled), true
		},
		have:  func(conf vmConfig) string { return boolStr(agentEnabled(conf["agent"])) },
		value: func(v string) any { return agentEnabled(v) },
		// Keep the agent's other options (fstrim_cloned_disks, type).
		write: func(want string, conf vmConfig) string {
			_, kv := propList(conf["agent"])
			kv["enabled"] = want
			return renderProps(kv, "enabled")
		}}.row(),
	{path: "spec.networks", validate: validateNetworks, plan: planNetworks, read: readNetworks},
	{path: "spec.disks", validate: validateDisks, plan: planDisks, read: readDisks},
	configField{path: "spec.cloudInit.user", key: "ciuser", omitEmpty: true,
		want: func(s *VMSpec, _ vmConfig) (string, bool) { return strSet(s.cloudInit().User) },
		validate: func(s *VMSpec) error {
			return matches("spec.cloudInit.user", s.cloudInit().User, noneOf(" \t\n:"), "invalid user name %q")
		}}.row(),
	// Proxmox never returns the password: it is set when the VM has none
	// (in practice, at creation).
	configField{path: "spec.cloudInit.password", key: "cipassword", writeOnly: true,
		want: func(s *VMSpec, conf vmConfig) (string, bool) {
			if conf["cipassword"] != "" {
				return "", false
			}
			return strSet(s.cloudInit().Password)
		},
		value: func(v string) any {
			if v == "" {
				return nil
			}
			return "[redacted]"
		}}.row(),
	configField{path: "spec.cloudInit.sshKeys", key: "sshkeys", omitEmpty: true,
		want: func(s *VMSpec, _ vmConfig) (string, bool) {
			if s.cloudInit().SSHKeys == nil {
				return "", false
			}
			keys := make([]string, 0, len(s.CloudInit.SSHKeys))
			for _, k := range s.CloudInit.SSHKeys {
				keys = append(keys, strings.TrimSpace(k))
			}
			return pve.EncodeSSHKeys(keys...), true
		},
		// Compared decoded: Proxmox may encode the same keys differently.
		have:  func(conf vmConfig) string { return pve.EncodeSSHKeys(sshKeysOf(conf["sshkeys"])...) },
		value: func(v string) any { return anyList(sshKeysOf(v)) },
		validate: func(s *VMSpec) error {
			for i, k := range s.cloudInit().SSHKeys {
				if f := strings.Fields(k); len(f) < 2 || !strings.HasPrefix(f[0], "ssh-") && !strings.HasPrefix(f[0], "ecdsa-") && !strings.HasPrefix(f[0], "sk-") {
					return manifest.FieldErrorf(fmt.Sprintf("spec.cloudInit.sshKeys[%d]", i), "not an OpenSSH public key (want \"ssh-ed25519 AAAA... comment\")")
				}
			}
			return nil
		}}.row(),
	configField{path: "spec.cloudInit.searchDomain", key: "searchdomain", omitEmpty: true,
		want: func(s *VMSpec, _ vmConfig) (string, bool) { return strSet(s.cloudInit().SearchDomain) },
		validate: func(s *VMSpec) error {
			return matches("spec.cloudInit.searchDomain", s.cloudInit().SearchDomain, noneOf(" \t\n,;"), "invalid domain %q")
		}}.row(),
	configField{path: "spec.cloudInit.nameservers", key: "nameserver", omitEmpty: true,
		want: func(s *VMSpec, _ vmConfig) (string, bool) {
			if s.cloudInit().Nameservers == nil {
				return "", false
			}
			return strings.Join(s.CloudInit.Nameservers, " "), true
		},
		value: func(v string) any { return anyList(strings.Fields(v)) },
		validate: func(s *VMSpec) error {
			for i, ns := range s.cloudInit().Nameservers {
				if _, err := netip.ParseAddr(ns); err != nil {
					return manifest.FieldErrorf(fmt.Sprintf("spec.cloudInit.nameservers[%d]", i), "not an IP address: %q", ns)
				}
			}
			return nil
		}}.row(),
	{path: "spec.cloudInit.ipConfig", validate: validateIPConfigs, plan: planIPConfigs, read: readIPConfigs},
	{path: "spec.state", validate: func(s *VMSpec) error {
		return oneOf("spec.state", s.State, "must be running or stopped, got %q", StateRunning, StateStopped)
	}, read: func(vm liveVM, spec map[string]any) {
		if vm.state == StateRunning || vm.state == StateStopped {
			spec["state"] = vm.state
		}
	}},
	{path: "spec.restartPolicy", validate: func(s *VMSpec) error {
		return oneOf("spec.restartPolicy", s.RestartPolicy, "must be never or ifRequired, got %q", RestartNever, RestartIfRequired)
	}},
	{path: "spec.replacePolicy", validate: func(s *VMSpec) error {
		return oneOf("spec.replacePolicy", s.ReplacePolicy, "must be never or allow, got %q", ReplaceNever, ReplaceAllow)
	}},
}

// planner is a plan being made for one spec and one live VM.
type planner struct {
	*plan
	spec     *VMSpec
	name     string // metadata.name
	vm       liveVM
	running  bool
	defaults Defaults
	mark     marking // what the marker should say (its template is the spec's)
}

// change records a field change, and that it waits for a reboot when the
// VM runs and Proxmox does not apply it hot.
func (pl *planner) change(path string, hotplug bool, old, new any) {
	pl.fields = append(pl.fields, manifest.FieldChange{Path: path, Old: old, New: new})
	if pl.running && !hotplug {
		pl.restart = append(pl.restart, path)
	}
}

// validate checks ranges, formats and combinations, field by field.
func (s *VMSpec) validate() error {
	for _, f := range vmFields {
		if f.validate == nil {
			continue
		}
		if err := f.validate(s); err != nil {
			return err
		}
	}
	return nil
}

// planChanges compares spec with a VM's config (pending values included,
// as GET config returns them) and says what to set. node is the node the
// VM is on; defaults come from the context. mark says who the caller is
// (its owner, "" for none) and whether the VM's creation is unfinished:
// the marker keeps "provisioning" while it is. A VM without the marker,
// or whose marker names another owner, is an ALREADY_EXISTS error.
func planChanges(s *VMSpec, name, node string, conf vmConfig, running bool, d Defaults, mark marking) (*plan, error) {
	_, have, managed := splitDescription(conf["description"])
	if !managed {
		return nil, errcode.New(errcode.AlreadyExists, fmt.Sprintf("a VM named %s exists (VMID %s on %s) that openctl did not create; rename or remove it, or choose another name", name, conf["vmid"], node))
	}
	if err := checkOwner(name, conf["vmid"], node, have.owner, mark.owner); err != nil {
		return nil, err
	}
	if mark.owner == "" {
		mark.owner = have.owner // a caller without an owner keeps the VM's
	}
	pl := &planner{plan: &plan{config: map[string]string{}}, spec: s, name: name, vm: liveVM{node: node, conf: conf}, running: running, defaults: d, mark: mark}
	for _, f := range vmFields {
		if f.plan == nil {
			continue
		}
		if err := f.plan(pl); err != nil {
			return nil, err
		}
	}
	return pl.plan, nil
}

// checkOwner refuses a VM whose marker names an owner other than the
// caller's (both non-empty): it belongs to another openctl state.
func checkOwner(name, vmid, node, have, want string) error {
	if have == "" || want == "" || have == want {
		return nil
	}
	return &ownedError{fmt.Sprintf("a VM named %s (VMID %s on %s) belongs to another openctl state (owner %s; this state is %s): "+
		"openctl never adopts, changes or deletes another state's VMs on its own; choose another name, manage it with the state that created it, "+
		"or take it into this one: openctl state adopt --from <that state's DSN or file:DIR> vm/%s", name, vmid, node, have, want, name)}
}

// ownedError is checkOwner's refusal: errcode.AlreadyExists, and
// registry.ErrOwnedElsewhere.
type ownedError struct{ msg string }

func (e *ownedError) Error() string { return e.msg + " (" + string(errcode.AlreadyExists) + ")" }

// Unwrap classifies the error.
func (e *ownedError) Unwrap() []error {
	return []error{errcode.AlreadyExists, registry.ErrOwnedElsewhere}
}

// planDescription writes the user's description and the marker (the
// spec's template, the owner, "provisioning" while the creation is
// unfinished); only the user's part is reported as a field change.
func planDescription(pl *planner) error {
	old := pl.vm.conf["description"]
	user, _, _ := splitDescription(old)
	mark := pl.mark
	mark.tmpl = *pl.spec.Template
	if want := description(pl.spec.Description, mark); want != old {
		pl.config["description"] = want
		if user != strings.TrimRight(pl.spec.Description, "\n") {
			pl.change("spec.description", true, user, pl.spec.Description)
		}
	}
	return nil
}

func readDescription(vm liveVM, spec map[string]any) {
	if user, _, _ := splitDescription(vm.conf["description"]); user != "" {
		spec["description"] = user
	}
}

// readSpec rebuilds the spec of a live VM from its config.
func readSpec(vm liveVM) map[string]any {
	spec := map[string]any{}
	for _, f := range vmFields {
		if f.read != nil {
			f.read(vm, spec)
		}
	}
	return spec
}

// ---- node, template, storage ----

func validateNodes(s *VMSpec) error {
	if s.Node != "" && len(s.Nodes) > 0 {
		return manifest.FieldErrorf("spec.nodes", "set node or nodes, not both")
	}
	for i, n := range append([]string{s.Node}, s.Nodes...) {
		if n != "" && !identRe.MatchString(n) {
			return manifest.FieldErrorf(nodePath(i), "invalid node name %q", n)
		}
	}
	return nil
}

// planNode: a node the spec does not allow needs a new VM.
func planNode(pl *planner) error {
	s, node := pl.spec, pl.vm.node
	if s.Node != "" && s.Node != node {
		pl.replace = append(pl.replace, fmt.Sprintf("node changed from %s to %s: needs a new VM", node, s.Node))
	}
	if len(s.Nodes) > 0 && !slices.Contains(s.Nodes, node) {
		pl.replace = append(pl.replace, fmt.Sprintf("the VM is on %s, which nodes %v excludes: needs a new VM", node, s.Nodes))
	}
	return nil
}

func validateTemplate(s *VMSpec) error {
	t := s.Template
	if t == nil || (t.Name == "" && t.VMID == 0) {
		return manifest.FieldErrorf("spec.template", "required: a template name or vmid to clone from")
	}
	if t.Name != "" && t.VMID != 0 {
		return manifest.FieldErrorf("spec.template", "set name or vmid, not both")
	}
	if t.VMID != 0 && (t.VMID < 100 || t.VMID > 999999999) {
		return manifest.FieldErrorf("spec.template.vmid", "must be in 100..999999999, got %d", t.VMID)
	}
	if t.Full != nil && *t.Full && t.Linked {
		return manifest.FieldErrorf("spec.template.linked", "contradicts full: true")
	}
	return nil
}

// planTemplate: another template than the marker names needs a new VM.
func planTemplate(pl *planner) error {
	_, m, _ := splitDescription(pl.vm.conf["description"])
	tmpl := m.tmpl
	if t := pl.spec.Template; t.Name != tmpl.Name || t.VMID != tmpl.VMID {
		pl.replace = append(pl.replace, fmt.Sprintf("template changed from %s to %s: needs a new VM", tmplLabel(tmpl), tmplLabel(*t)))
	}
	return nil
}

func readTemplate(vm liveVM, spec map[string]any) {
	_, m, _ := splitDescription(vm.conf["description"])
	switch tmpl := m.tmpl; {
	case tmpl.Name != "":
		spec["template"] = map[string]any{"name": tmpl.Name}
	case tmpl.VMID != 0:
		spec["template"] = map[string]any{"vmid": int64(tmpl.VMID)}
	}
}

func validateStorage(s *VMSpec) error {
	if s.Template.Linked && s.Storage != "" {
		return manifest.FieldErrorf("spec.storage", "a linked clone stays on the template's storage; remove storage or make a full clone")
	}
	if s.Storage != "" && !identRe.MatchString(s.Storage) {
		return manifest.FieldErrorf("spec.storage", "invalid storage name %q", s.Storage)
	}
	return nil
}

// ---- networks: netN ----

func validateNetworks(s *VMSpec) error {
	seen := map[string]bool{}
	for i, n := range s.Networks {
		p := fmt.Sprintf("spec.networks[%d]", i)
		if !netNameRe.MatchString(n.Name) {
			return manifest.FieldErrorf(p+".name", "must be net0..net31, got %q", n.Name)
		}
		if seen[n.Name] {
			return manifest.FieldErrorf(p+".name", "network %s listed twice", n.Name)
		}
		seen[n.Name] = true
		if n.Model != "" && !slices.Contains(netModels, n.Model) {
			return manifest.FieldErrorf(p+".model", "must be one of %s, got %q", strings.Join(netModels, ", "), n.Model)
		}
		if n.Bridge != "" && !identRe.MatchString(n.Bridge) {
			return manifest.FieldErrorf(p+".bridge", "invalid bridge name %q", n.Bridge)
		}
		if n.VLAN != 0 && (n.VLAN < 1 || n.VLAN > 4094) {
			return manifest.FieldErrorf(p+".vlan", "must be in 1..4094, got %d", n.VLAN)
		}
		if n.MACAddress != "" && !macRe.MatchString(n.MACAddress) {
			return manifest.FieldErrorf(p+".macAddress", "must look like BC:24:11:00:00:01, got %q", n.MACAddress)
		}
	}
	return nil
}

// planNetworks sets each listed device, keeping the options the spec does
// not manage; a new device gets the context's default bridge.
func planNetworks(pl *planner) error {
	for i, n := range pl.spec.Networks {
		old, exists := pl.vm.conf[n.Name]
		dev := parseNet(old)
		want := netDevice{Model: dev.Model, MAC: dev.MAC, Opts: map[string]string{}}
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
			bridge = orDefault(pl.defaults.Bridge, "vmbr0")
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
			pl.change(fmt.Sprintf("spec.networks[%d]", i), true, old, want.String())
		}
	}
	return nil
}

func readNetworks(vm liveVM, spec map[string]any) {
	var nets []any
	for _, k := range sortedNetKeys(vm.conf) {
		d := parseNet(vm.conf[k])
		n := map[string]any{"name": k, "model": d.Model, "macAddress": d.MAC}
		if b := d.Opts["bridge"]; b != "" {
			n["bridge"] = b
		}
		if t := d.Opts["tag"]; t != "" {
			n["vlan"] = int64(atoi(t))
		}
		if f, ok := d.Opts["firewall"]; ok {
			n["firewall"] = f == "1"
		}
		nets = append(nets, n)
	}
	if nets != nil {
		spec["networks"] = nets
	}
}

// ---- disks: scsiN, virtioN, sataN, ideN ----

func validateDisks(s *VMSpec) error {
	seen := map[string]bool{}
	for i, d := range s.Disks {
		p := fmt.Sprintf("spec.disks[%d]", i)
		if !diskNameRe.MatchString(d.Name) {
			return manifest.FieldErrorf(p+".name", "must be scsi0..30, virtio0..15, sata0..5 or ide0..3, got %q", d.Name)
		}
		if seen[d.Name] {
			return manifest.FieldErrorf(p+".name", "disk %s listed twice", d.Name)
		}
		seen[d.Name] = true
		if _, err := parseSize(d.Size); err != nil {
			return manifest.FieldErrorf(p+".size", "%v", err)
		}
		if d.Storage != "" && !identRe.MatchString(d.Storage) {
			return manifest.FieldErrorf(p+".storage", "invalid storage name %q", d.Storage)
		}
	}
	return nil
}

// planDisks creates the disks the VM lacks (in the config write) and grows
// the others (resize requests); disks never shrink.
func planDisks(pl *planner) error {
	s := pl.spec
	for i, disk := range s.Disks {
		path := fmt.Sprintf("spec.disks[%d]", i)
		want, _ := parseSize(disk.Size)
		val, exists := pl.vm.conf[disk.Name]
		if !exists {
			st := disk.Storage
			if st == "" {
				st = orDefault(s.Storage, pl.defaults.Storage)
			}
			if st == "" {
				return manifest.FieldErrorf(path+".storage", "disk %s does not exist in the template: name the storage to create it on", disk.Name)
			}
			// "storage:N" allocates N GiB; N may be fractional, so a
			// size such as 1500M is created exactly rather than rounded
			// up to a GiB (which the next Apply would see as a shrink).
			gib := strconv.FormatFloat(float64(want)/(1<<30), 'f', -1, 64)
			pl.config[disk.Name] = st + ":" + gib
			pl.change(path, true, nil, disk.Size)
			continue
		}
		if isCDROM(val) {
			return manifest.FieldErrorf(path+".name", "%s is a CD-ROM drive, not a disk", disk.Name)
		}
		have, ok := diskSize(val)
		if !ok {
			continue
		}
		switch {
		case want < have:
			return manifest.FieldErrorf(path+".size", "disk %s cannot shrink from %s to %s (Proxmox only grows disks)", disk.Name, formatSize(have), disk.Size)
		case want > have:
			pl.resizes = append(pl.resizes, resize{disk: disk.Name, size: formatSize(want), from: have, to: want})
			pl.fields = append(pl.fields, manifest.FieldChange{Path: path + ".size", Old: formatSize(have), New: formatSize(want)})
		}
	}
	return nil
}

func readDisks(vm liveVM, spec map[string]any) {
	var disks []any
	for _, k := range sortedKeys(vm.conf) {
		if !diskNameRe.MatchString(k) || isCDROM(vm.conf[k]) {
			continue
		}
		if n, ok := diskSize(vm.conf[k]); ok {
			d := map[string]any{"name": k, "size": formatSize(n)}
			if st, _, ok := strings.Cut(vm.conf[k], ":"); ok {
				d["storage"] = st
			}
			disks = append(disks, d)
		}
	}
	if disks != nil {
		spec["disks"] = disks
	}
}

// ---- cloud-init addresses: ipconfigN ----

func validateIPConfigs(s *VMSpec) error {
	for _, name := range sortedKeys(s.cloudInit().IPConfig) {
		if err := s.CloudInit.IPConfig[name].validate("spec.cloudInit.ipConfig." + name); err != nil {
			return err
		}
		if !netNameRe.MatchString(name) {
			return manifest.FieldErrorf("spec.cloudInit.ipConfig."+name, "keys are network names net0..net31")
		}
	}
	return nil
}

func planIPConfigs(pl *planner) error {
	if pl.spec.CloudInit == nil {
		return nil
	}
	ipc := pl.spec.CloudInit.IPConfig
	for _, n := range sortedKeys(ipc) {
		key := "ipconfig" + strings.TrimPrefix(n, "net")
		want := ipc[n].String()
		if parseIPConfig(pl.vm.conf[key]).String() != want {
			pl.config[key] = want
			pl.change("spec.cloudInit.ipConfig."+n, false, pl.vm.conf[key], want)
		}
	}
	return nil
}

func readIPConfigs(vm liveVM, spec map[string]any) {
	ipc := map[string]any{}
	for k, v := range vm.conf {
		if n, ok := strings.CutPrefix(k, "ipconfig"); ok {
			c := parseIPConfig(v)
			m := map[string]any{}
			for key, val := range map[string]string{"ip": c.IP, "gateway": c.Gateway, "ip6": c.IP6, "gateway6": c.Gateway6} {
				if val != "" {
					m[key] = val
				}
			}
			ipc["net"+n] = m
		}
	}
	if len(ipc) > 0 {
		setPath(spec, "cloudInit.ipConfig", ipc)
	}
}

// ---- helpers ----

// intSet is the config value of an optional integer: unset when zero.
func intSet(v int) (string, bool) { return strconv.Itoa(v), v != 0 }

// strSet is the config value of an optional string: unset when empty.
func strSet(v string) (string, bool) { return v, v != "" }

// inRange checks an optional integer: zero, or in lo..hi.
func inRange(path string, v, lo, hi int, unit string) error {
	if v != 0 && (v < lo || v > hi) {
		return manifest.FieldErrorf(path, "must be in %d..%d%s, got %d", lo, hi, unit, v)
	}
	return nil
}

// matches checks an optional string: empty, or accepted by ok.
func matches(path, v string, ok func(string) bool, msg string) error {
	if v != "" && !ok(v) {
		return manifest.FieldErrorf(path, msg, v)
	}
	return nil
}

// noneOf accepts strings without any of chars.
func noneOf(chars string) func(string) bool {
	return func(v string) bool { return !strings.ContainsAny(v, chars) }
}

// cpu, memory and cloudInit return the spec's optional sections, zero
// when unset.
func (s *VMSpec) cpu() CPUSpec {
	if s.CPU == nil {
		return CPUSpec{}
	}
	return *s.CPU
}

func (s *VMSpec) memory() MemorySpec {
	if s.Memory == nil {
		return MemorySpec{}
	}
	return *s.Memory
}

func (s *VMSpec) cloudInit() CloudInitSpec {
	if s.CloudInit == nil {
		return CloudInitSpec{}
	}
	return *s.CloudInit
}

func int64Value(v string) any { return int64(atoi(v)) }

func anyList(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	}
	return v == nil
}

// setPath sets a dotted path in nested maps, creating them.
func setPath(m map[string]any, path string, v any) {
	head, rest, nested := strings.Cut(path, ".")
	if !nested {
		m[head] = v
		return
	}
	sub, ok := m[head].(map[string]any)
	if !ok {
		sub = map[string]any{}
		m[head] = sub
	}
	setPath(sub, rest, v)
}

// oneOf checks an optional enum value.
func oneOf(path, v, msg string, allowed ...string) error {
	if v == "" || slices.Contains(allowed, v) {
		return nil
	}
	return manifest.FieldErrorf(path, msg, v)
}
