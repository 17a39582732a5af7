package proxmoxtest

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

func vmPerm(privs ...string) *perm { return &perm{path: "/vms/{vmid}", privs: privs} }

func (s *Server) registerRoutes() {
	s.registerClusterRoutes()
	s.registerTaskRoutes()
	s.registerQemuRoutes()
	s.registerAgentRoutes()
	s.registerNotImplemented()
}

func (s *Server) registerQemuRoutes() {
	s.handle("GET /nodes/{node}/qemu", nil, s.qemuList)
	s.handle("GET /nodes/{node}/qemu/{vmid}/status/current", vmPerm("VM.Audit"), s.qemuCurrent)
	s.handle("GET /nodes/{node}/qemu/{vmid}/config", vmPerm("VM.Audit"), s.qemuConfigGet)
	// Any VM.Config.* privilege passes the schema's check; the handler then
	// asks for the one each changed key needs (check_vm_modify_config_perm).
	configAny := vmPerm("VM.Config.Disk", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Memory",
		"VM.Config.Network", "VM.Config.HWType", "VM.Config.Options", "VM.Config.Cloudinit")
	s.handle("POST /nodes/{node}/qemu/{vmid}/config", configAny, func(q *request) (any, *apiError) { return s.qemuConfigSet(q, true) })
	s.handle("PUT /nodes/{node}/qemu/{vmid}/config", configAny, func(q *request) (any, *apiError) { return s.qemuConfigSet(q, false) })
	s.handle("POST /nodes/{node}/qemu/{vmid}/clone", vmPerm("VM.Clone"), s.qemuClone)
	s.handle("PUT /nodes/{node}/qemu/{vmid}/resize", vmPerm("VM.Config.Disk"), s.qemuResize)
	for _, op := range []string{"start", "stop", "shutdown", "reboot"} {
		s.handle("POST /nodes/{node}/qemu/{vmid}/status/"+op, vmPerm("VM.PowerMgmt"), func(q *request) (any, *apiError) { return s.qemuPower(q, op) })
	}
	s.handle("GET /nodes/{node}/qemu/{vmid}/pending", vmPerm("VM.Audit"), s.qemuPending)
	s.handle("DELETE /nodes/{node}/qemu/{vmid}", vmPerm("VM.Allocate"), s.qemuDelete)
	s.handle("POST /nodes/{node}/qemu/{vmid}/template", vmPerm("VM.Allocate"), s.qemuTemplate)
}

// loadVM finds the VM of the request like PVE::QemuConfig->load_config.
// Callers hold s.mu.
func (s *Server) loadVM(q *request) (*vm, *apiError) {
	node := q.path("node")
	if e := s.checkNode(node); e != nil {
		return nil, e
	}
	id, _ := strconv.Atoi(q.path("vmid"))
	v, ok := s.vms[id]
	if !ok || v.node != node {
		return nil, errf("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", node, id)
	}
	return v, nil
}

// lockVM loads the request's VM and takes its config lock the way
// PVE::AbstractConfig::lock_config does for destroy and template: a held
// flock (or an injected fault) is a lock timeout, then check_lock refuses a
// VM with a "lock" set. s.mu must be held.
func (s *Server) lockVM(q *request) (*vm, *apiError) {
	v, e := s.loadVM(q)
	if e != nil {
		return nil, e
	}
	if s.faults.lockTimeout(q.route) || v.flock != 0 {
		return nil, lockTimeoutErr(v.id)
	}
	if e := checkLock(q, v); e != nil {
		return nil, e
	}
	return v, nil
}

// checkLock is PVE::AbstractConfig::check_lock: "VM is locked (<lock>)".
func checkLock(q *request, v *vm) *apiError {
	if skip, _ := parseBool(q.params["skiplock"]); skip {
		return nil
	}
	if l, ok := v.conf["lock"]; ok {
		return errf("VM is locked (%s)", l)
	}
	return nil
}

func lockTimeoutErr(id int) *apiError {
	return errf("can't lock file '/var/lock/qemu-server/lock-%d.conf' - got timeout", id)
}

func (s *Server) qemuList(q *request) (any, *apiError) {
	node := q.path("node")
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.checkNode(node); e != nil {
		return nil, e
	}
	out := []map[string]any{}
	ids := []int{}
	for id, v := range s.vms {
		if v.node == node {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	// Objects the caller may not audit are left out, not refused.
	if !q.tok.has("VM.Audit") {
		return out, nil
	}
	for _, id := range ids {
		out = append(out, s.vmSummary(s.vms[id]))
	}
	return out, nil
}

func (s *Server) vmSummary(v *vm) map[string]any {
	mem := 512
	if m, err := strconv.Atoi(strings.Split(v.conf["memory"], ",")[0]); err == nil {
		mem = m
	}
	if _, kv := propList(v.conf["memory"]); kv["current"] != "" {
		if m, err := strconv.Atoi(kv["current"]); err == nil {
			mem = m
		}
	}
	cores, sockets := 1, 1
	if n, err := strconv.Atoi(v.conf["cores"]); err == nil {
		cores = n
	}
	if n, err := strconv.Atoi(v.conf["sockets"]); err == nil {
		sockets = n
	}
	var maxdisk uint64
	for _, k := range []string{"scsi0", "virtio0", "sata0", "ide0"} {
		if d, ok := v.conf[k]; ok && !isCDROM(d) {
			maxdisk = diskSize(d)
			break
		}
	}
	status := "stopped"
	m := map[string]any{
		"vmid": v.id, "cpus": cores * sockets, "maxmem": uint64(mem) << 20, "maxdisk": maxdisk,
		"mem": 0, "cpu": 0, "disk": 0, "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0, "uptime": 0,
	}
	if n, ok := v.conf["name"]; ok {
		m["name"] = n
	}
	if v.running {
		status = "running"
		m["uptime"] = uint64(time.Since(v.bootAt).Seconds())
		m["pid"] = 10000 + v.id
		m["mem"] = (uint64(mem) << 20) / 3
		m["cpu"] = 0.01
	}
	m["status"] = status
	if v.conf["template"] == "1" {
		m["template"] = 1
	}
	if l, ok := v.conf["lock"]; ok {
		m["lock"] = l
	}
	if t, ok := v.conf["tags"]; ok {
		m["tags"] = t
	}
	return m
}

func (s *Server) qemuCurrent(q *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, e := s.loadVM(q)
	if e != nil {
		return nil, e
	}
	m := s.vmSummary(v)
	m["qmpstatus"] = m["status"]
	m["ha"] = map[string]any{"managed": 0}
	if agentEnabled(v.conf) {
		m["agent"] = 1
	}
	if v.running {
		m["running-qemu"] = "9.2.0"
		m["running-machine"] = "pc-i440fx-9.2+pve1"
	}
	return m, nil
}

func (s *Server) qemuConfigGet(q *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, e := s.loadVM(q)
	if e != nil {
		return nil, e
	}
	conf := v.conf
	if cur, _ := q.get("current"); cur != "1" {
		conf = v.withPending()
	}
	out := renderConfig(conf)
	if _, ok := out["cipassword"]; ok {
		// PVE/API2/Qemu.pm vm_config never returns the cloud-init password.
		out["cipassword"] = "**********"
	}
	return out, nil
}

// qemuPending is GET pending: every key with its current value and the
// value queued for the next start (PVE/API2/Qemu.pm vm_pending).
func (s *Server) qemuPending(q *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, e := s.loadVM(q)
	if e != nil {
		return nil, e
	}
	keys := map[string]bool{}
	for k := range v.conf {
		keys[k] = true
	}
	for k := range v.pending {
		keys[k] = true
	}
	out := []map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		m := map[string]any{"key": k}
		if val, ok := v.conf[k]; ok {
			m["value"] = renderConfig(map[string]string{k: val})[k]
		}
		if val, ok := v.pending[k]; ok {
			m["pending"] = renderConfig(map[string]string{k: val})[k]
		}
		if v.pendingDel[k] {
			m["delete"] = 1
		}
		out = append(out, m)
	}
	return out, nil
}

// hotplugged reports whether a change to k applies to a running VM at once:
// the default hotplug set "network,disk,usb" and the options qemu-server
// always applies directly ($fast_plug_option). Everything else is pending
// until the next start.
func hotplugged(k string) bool {
	switch k {
	case "name", "description", "tags", "onboot", "protection", "startup", "hookscript", "lock", "vmstatestorage":
		return true
	}
	return (strings.HasPrefix(k, "net") || strings.HasPrefix(k, "usb")) && indexedKeyRe.MatchString(k) ||
		diskKeyRe.MatchString(k) && k != "efidisk0" && k != "tpmstate0"
}

// configPrivs maps config keys to the privileges PVE/API2/Qemu.pm
// check_vm_modify_config_perm asks for.
func configPriv(k string) string {
	switch {
	case k == "memory" || k == "balloon" || k == "shares":
		return "VM.Config.Memory"
	case k == "cores" || k == "sockets" || k == "vcpus" || k == "cpu" || k == "cpulimit" || k == "cpuunits" || k == "numa" || k == "affinity":
		return "VM.Config.CPU"
	case strings.HasPrefix(k, "net"):
		return "VM.Config.Network"
	case diskKeyRe.MatchString(k) || strings.HasPrefix(k, "unused"):
		return "VM.Config.Disk"
	case strings.HasPrefix(k, "ipconfig") || strings.HasPrefix(k, "ci") || k == "sshkeys" || k == "nameserver" || k == "searchdomain":
		return "VM.Config.Cloudinit"
	case k == "name" || k == "description" || k == "tags" || k == "onboot" || k == "boot" || k == "agent" || k == "ostype" || k == "protection" || k == "startup":
		return "VM.Config.Options"
	}
	return "VM.Config.HWType"
}

var configControlParams = map[string]bool{"delete": true, "digest": true, "skiplock": true, "revert": true, "force": true, "background_delay": true}

// qemuConfigSet is POST (async, qmconfig task) and PUT (sync) config. As in
// PVE/API2/Qemu.pm update_vm_api, the lock is checked and changes are
// written before the worker runs, so GET config (which shows pending
// values) sees them at once.
func (s *Server) qemuConfigSet(q *request, async bool) (any, *apiError) {
	if e := validateConfig(q.params, !async); e != nil {
		return nil, e
	}
	changes := map[string]string{}
	var deletes []string
	for k, v := range q.params {
		if configControlParams[k] || k == "import-working-storage" {
			continue
		}
		if !knownKey(k) {
			// In the schema but not simulated: stored as given.
			changes[k] = v
			continue
		}
		if e := checkConfigValue(k, v); e != nil {
			return nil, e
		}
		if booleanKeys[k] {
			b, _ := parseBool(v)
			v = map[bool]string{true: "1", false: "0"}[b]
		}
		changes[k] = v
	}
	if d, ok := q.params["delete"]; ok {
		for _, k := range splitList(d) {
			if _, ok := configParam(k); !ok {
				return nil, paramErr("delete", fmt.Sprintf("invalid format - invalid configuration ID '%s'\n", k))
			}
			if _, both := changes[k]; both {
				return nil, paramErr("delete", fmt.Sprintf("you can't use '-%s' and -delete %s' at the same time", k, k))
			}
			deletes = append(deletes, k)
		}
	}
	if len(changes) == 0 && len(deletes) == 0 && q.params["revert"] == "" {
		// PVE/API2/Qemu.pm update_vm_api dies "no options specified".
		return nil, errf("no options specified")
	}
	for k := range changes {
		if p := configPriv(k); !q.tok.has(p) {
			return nil, &apiError{code: http.StatusForbidden, msg: fmt.Sprintf("Permission check failed (/vms/%s, %s)", q.path("vmid"), p)}
		}
	}
	for _, k := range deletes {
		if p := configPriv(k); !q.tok.has(p) {
			return nil, &apiError{code: http.StatusForbidden, msg: fmt.Sprintf("Permission check failed (/vms/%s, %s)", q.path("vmid"), p)}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, e := s.loadVM(q)
	if e != nil {
		return nil, e
	}
	if s.faults.lockTimeout(q.route) || v.flock != 0 {
		return nil, lockTimeoutErr(v.id)
	}
	if d, ok := q.params["digest"]; ok && d != configDigest(v.conf) {
		return nil, errf("detected modified configuration - file changed by other user? Try again.")
	}
	if e := checkLock(q, v); e != nil {
		return nil, e
	}
	for k, val := range changes {
		switch {
		case k == "tags":
			val = normalizeTags(val)
		case strings.HasPrefix(k, "net") && indexedKeyRe.MatchString(k):
			val = s.withMAC(v.id, k, val, v.conf[k])
		case diskKeyRe.MatchString(k):
			nv, e := s.allocDisk(v, k, val)
			if e != nil {
				return nil, e
			}
			val = nv
		}
		changes[k] = val
	}
	for k, val := range changes {
		if v.running && !hotplugged(k) {
			v.pending[k] = val
			delete(v.pendingDel, k)
			continue
		}
		v.conf[k] = val
		delete(v.pending, k)
	}
	for _, k := range deletes {
		if v.running && !hotplugged(k) {
			v.pendingDel[k] = true
			delete(v.pending, k)
			continue
		}
		delete(v.conf, k)
	}
	if !async {
		return nil, nil
	}
	return s.startTask(q, v.node, "qmconfig", strconv.Itoa(v.id), s.cfg.latencies.Config, func() error { return nil }, nil), nil
}

// checkConfigValue validates one config value against $confdesc.
func checkConfigValue(k, v string) *apiError {
	switch {
	case booleanKeys[k]:
		if v != "0" && v != "1" { // check_type accepts exactly '1' and '0'
			return paramErr(k, fmt.Sprintf("type check ('boolean') failed - got '%s'", v))
		}
	case k == "cpulimit":
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return paramErr(k, fmt.Sprintf("type check ('number') failed - got '%s'", v))
		}
	case numericKeys[k]:
		n, err := strconv.Atoi(v)
		if err != nil {
			return paramErr(k, fmt.Sprintf("type check ('integer') failed - got '%s'", v))
		}
		if (k == "cores" || k == "sockets" || k == "vcpus") && n < 1 {
			return paramErr(k, "value must have a minimum value of 1")
		}
	case k == "name":
		if !dnsNameRe.MatchString(v) {
			return paramErr(k, "invalid format - value does not look like a valid DNS name")
		}
	case k == "memory":
		first, kv := propList(v)
		cur := kv["current"]
		if cur == "" {
			cur = first
		}
		if n, err := strconv.Atoi(cur); err != nil || n < 16 {
			return paramErr(k, fmt.Sprintf("invalid format - value '%s' does not look like a valid memory size", v))
		}
	case k == "sshkeys":
		// PVE/API2/Qemu.pm: sshkeys must be URL-encoded (%20 for spaces).
		if !urlEncodedRe.MatchString(v) {
			return paramErr(k, "invalid urlencoded string: "+v)
		}
	case strings.HasPrefix(k, "ipconfig"):
		_, kv := propList(v)
		if ip, ok := kv["ip"]; ok && ip != "dhcp" && !ipCIDRRe.MatchString(ip) {
			return paramErr(k, fmt.Sprintf("invalid format - format error\n%s.ip: invalid format - value does not look like a valid IPv4 network configuration", k))
		}
	case k == "agent":
		first, kv := propList(v)
		e, ok := kv["enabled"]
		if !ok {
			e = first
		}
		if _, ok := parseBool(e); !ok {
			return paramErr(k, "invalid format - format error\nagent.enabled: type check ('boolean') failed - got '"+e+"'")
		}
	}
	return nil
}

// withMAC adds a MAC to a netN value "model[=mac],bridge=..." that has
// none, keeping the old MAC when the model is unchanged.
func (s *Server) withMAC(id int, key, val, old string) string {
	first, _ := propList(val)
	if strings.Contains(first, "=") {
		return val
	}
	model := first
	mac := ""
	if oldFirst, _ := propList(old); oldFirst != "" {
		if m, om, ok := strings.Cut(oldFirst, "="); ok && m == model {
			mac = om
		}
	}
	if mac == "" {
		mac = s.newMAC(id, key)
	}
	return model + "=" + mac + strings.TrimPrefix(val, first)
}

// allocDisk turns "storage:SIZE_GB[,opts]" into an allocated volume and
// "storage:cloudinit" into a cloud-init drive. Callers hold s.mu.
func (s *Server) allocDisk(v *vm, key, val string) (string, *apiError) {
	if m := newDiskRe.FindStringSubmatch(val); m != nil {
		if _, ok := s.storageByName(m[1]); !ok {
			return "", errf("storage '%s' does not exist", m[1])
		}
		gb, _ := strconv.ParseFloat(m[2], 64)
		n := 0
		for _, d := range v.conf {
			if strings.Contains(d, fmt.Sprintf("vm-%d-disk-", v.id)) {
				n++
			}
		}
		return fmt.Sprintf("%s:vm-%d-disk-%d%s,size=%s", m[1], v.id, n, m[3], formatSize(uint64(gb*(1<<30)))), nil
	}
	if st, rest, ok := strings.Cut(val, ":cloudinit"); ok && !strings.Contains(st, ",") {
		if _, ok := s.storageByName(st); !ok {
			return "", errf("storage '%s' does not exist", st)
		}
		return fmt.Sprintf("%s:vm-%d-cloudinit,media=cdrom%s", st, v.id, strings.TrimPrefix(strings.TrimPrefix(rest, ",media=cdrom"), ",media=cdrom")), nil
	}
	return val, nil
}

// qemuClone follows PVE/API2/Qemu.pm clone_vm: synchronous checks, then
// the target config holding only "lock: clone", then a qmclone worker whose
// id is the source VMID; a failed clone removes the target.
func (s *Server) qemuClone(q *request) (any, *apiError) {
	newidS, ok := q.get("newid")
	if !ok {
		return nil, paramErr("newid", "property is missing and it is not optional")
	}
	if e := checkVMID("newid", newidS); e != nil {
		return nil, e
	}
	newid, _ := strconv.Atoi(newidS)
	for k := range q.params {
		switch k {
		case "newid", "name", "full", "storage", "target", "description", "pool", "snapname", "format", "bwlimit":
		default:
			return nil, paramErr(k, "property is not defined in schema and the schema does not allow additional properties")
		}
	}
	name, hasName := q.get("name")
	if hasName && !dnsNameRe.MatchString(name) {
		return nil, paramErr("name", "invalid format - value does not look like a valid DNS name")
	}
	var full, hasFull bool
	if f, ok := q.get("full"); ok {
		b, valid := parseBool(f)
		if !valid {
			return nil, paramErr("full", fmt.Sprintf("type check ('boolean') failed - got '%s'", f))
		}
		full, hasFull = b, true
	}
	if f, ok := q.get("format"); ok && f != "raw" && f != "qcow2" && f != "vmdk" {
		return nil, paramErr("format", fmt.Sprintf("value '%s' does not have a value in the enumeration 'raw, qcow2, vmdk'", f))
	}
	if !q.tok.has("VM.Allocate") {
		return nil, &apiError{code: http.StatusForbidden, msg: fmt.Sprintf("Permission check failed (/vms/%d, VM.Allocate)", newid)}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	src, e := s.loadVM(q)
	if e != nil {
		return nil, e
	}
	// PVE/API2/Qemu.pm clone_vm: lock_config_mode(..., $shared_lock = !$running).
	if s.faults.lockTimeout(q.route) || src.flock < 0 || (src.running && src.flock != 0) {
		return nil, lockTimeoutErr(src.id)
	}
	if e := checkLock(q, src); e != nil {
		return nil, e
	}
	isTemplate := src.conf["template"] == "1"
	if !hasFull {
		full = !isTemplate
	}
	storage, hasStorage := q.get("storage")
	if hasStorage && !full {
		return nil, paramErr("storage", "parameter 'storage' not allowed for linked clones")
	}
	if hasStorage {
		if _, ok := s.storageByName(storage); !ok {
			return nil, errf("storage '%s' does not exist", storage)
		}
	}
	if !full && !isTemplate {
		// clone_vm: volume_has_feature('clone') needs a base volume.
		for _, k := range slices.Sorted(maps.Keys(src.conf)) {
			if diskKeyRe.MatchString(k) && !isCDROM(src.conf[k]) {
				return nil, errf("Linked clone feature is not supported for drive '%s'", k)
			}
		}
	}
	if snap, ok := q.get("snapname"); ok && snap != "current" {
		return nil, errf("snapshot '%s' does not exist", snap)
	}
	target := src.node
	if t, ok := q.get("target"); ok {
		if !s.hasNode(t) {
			return nil, errf("no such cluster node '%s'", t)
		}
		if t != src.node {
			for k, d := range src.conf {
				if !diskKeyRe.MatchString(k) || (isCDROM(d) && !strings.Contains(d, "cloudinit")) {
					continue
				}
				st, _, _ := strings.Cut(d, ":")
				if def, ok := s.storageByName(st); !ok || !def.shared {
					return nil, errf("can't clone VM to node '%s' (VM uses local storage)", t)
				}
			}
		}
		target = t
	}
	if _, exists := s.vms[newid]; exists {
		return nil, errf("unable to create VM %d: config file already exists", newid)
	}
	dst := newVM(newid, target, map[string]string{"lock": "clone"})
	s.vms[newid] = dst
	if !hasName {
		name = fmt.Sprintf("Copy-of-VM-%d", src.id)
		if n, ok := src.conf["name"]; ok {
			name = "Copy-of-VM-" + n
		}
	}
	desc, hasDesc := q.get("description")
	if src.running {
		src.flock = -1
	} else {
		src.flock++
	}
	released := false
	release := func() {
		if released {
			return
		}
		released = true
		if src.flock < 0 {
			src.flock = 0
		} else if src.flock > 0 {
			src.flock--
		}
	}
	return s.startTask(q, src.node, "qmclone", strconv.Itoa(src.id), s.cfg.latencies.Clone, func() error {
		release()
		if s.vms[src.id] != src {
			return fmt.Errorf("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", src.node, src.id)
		}
		conf := map[string]string{}
		for k, val := range src.conf {
			switch {
			case k == "template" || k == "lock" || k == "meta" || k == "vmgenid" || k == "smbios1":
				continue
			case strings.HasPrefix(k, "net") && indexedKeyRe.MatchString(k):
				first, _ := propList(val)
				model, _, _ := strings.Cut(first, "=")
				val = model + "=" + s.newMAC(newid, k) + strings.TrimPrefix(val, first)
			case diskKeyRe.MatchString(k):
				val = cloneVolume(val, src.id, newid, full, storage)
			}
			conf[k] = val
		}
		conf["name"] = name
		if hasDesc {
			conf["description"] = desc
		}
		conf["smbios1"] = "uuid=" + s.newUUID("smbios", newid, s.hostGen[newid])
		conf["vmgenid"] = s.newUUID("vmgenid", newid, s.hostGen[newid])
		conf["meta"] = fmt.Sprintf("creation-qemu=9.2.0,ctime=%d", time.Now().Unix())
		dst.conf = conf
		dst.hostKey = s.newHostKey(newid)
		return nil
	}, func() {
		release()
		if s.vms[newid] == dst {
			delete(s.vms, newid)
		}
	}), nil
}

// cloneVolume renames a disk volume for the clone target.
func cloneVolume(val string, src, dst int, full bool, storage string) string {
	vol, opts, _ := strings.Cut(val, ",")
	st, volname, ok := strings.Cut(vol, ":")
	if !ok {
		return val
	}
	if opts != "" {
		opts = "," + opts
	}
	if strings.Contains(volname, "cloudinit") {
		return fmt.Sprintf("%s:vm-%d-cloudinit%s", st, dst, opts)
	}
	if isCDROM(val) {
		return val
	}
	disk := volname[strings.LastIndex(volname, "-")+1:]
	if full {
		if storage != "" {
			st = storage
		}
		return fmt.Sprintf("%s:vm-%d-disk-%s%s", st, dst, disk, opts)
	}
	base := volname
	if i := strings.Index(base, "/"); i >= 0 {
		base = base[:i]
	}
	return fmt.Sprintf("%s:%s/vm-%d-disk-%s%s", st, base, dst, disk, opts)
}

// qemuResize is PUT resize (PVE 8+: async, task type "resize"). Shrinking
// fails inside the task.
func (s *Server) qemuResize(q *request) (any, *apiError) {
	disk, ok := q.get("disk")
	if !ok {
		return nil, paramErr("disk", "property is missing and it is not optional")
	}
	if !diskKeyRe.MatchString(disk) {
		return nil, paramErr("disk", fmt.Sprintf("value '%s' does not have a value in the enumeration", disk))
	}
	size, ok := q.get("size")
	if !ok {
		return nil, paramErr("size", "property is missing and it is not optional")
	}
	m := sizeRe.FindStringSubmatch(size)
	if m == nil {
		return nil, paramErr("size", fmt.Sprintf("value does not match the regex pattern"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, e := s.loadVM(q)
	if e != nil {
		return nil, e
	}
	lockFault := s.faults.lockTimeout(q.route)
	return s.startTask(q, v.node, "resize", strconv.Itoa(v.id), s.cfg.latencies.Resize, func() error {
		if lockFault || v.flock != 0 {
			return lockTimeoutErr(v.id)
		}
		if s.vms[v.id] != v {
			return fmt.Errorf("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", v.node, v.id)
		}
		if l, ok := v.conf["lock"]; ok && q.params["skiplock"] != "1" {
			return fmt.Errorf("VM is locked (%s)", l)
		}
		cur, ok := v.conf[disk]
		if !ok {
			return fmt.Errorf("disk '%s' does not exist", disk)
		}
		if isCDROM(cur) {
			return fmt.Errorf("you can't resize a cdrom")
		}
		old := diskSize(cur)
		n, _ := parseSize(strings.TrimPrefix(size, "+"))
		newSize := n
		if m[1] == "+" {
			newSize = old + n
		}
		if newSize < old {
			return fmt.Errorf("shrinking disks is not supported")
		}
		if newSize == old {
			return nil
		}
		first, kv := propList(cur)
		kv["size"] = formatSize(newSize)
		keys := make([]string, 0, len(kv))
		for k := range kv {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := []string{first}
		for _, k := range keys {
			parts = append(parts, k+"="+kv[k])
		}
		v.conf[disk] = strings.Join(parts, ",")
		return nil
	}, nil), nil
}

// qemuPower serves status/{start,stop,shutdown,reboot}. Failures happen
// inside the task (PVE/QemuServer.pm vm_start: "you can't start a vm if
// it's a template", check_lock, "VM <id> already running").
func (s *Server) qemuPower(q *request, op string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, e := s.loadVM(q)
	if e != nil {
		return nil, e
	}
	lockFault := s.faults.lockTimeout(q.route)
	skiplock, _ := parseBool(q.params["skiplock"])
	lat := s.cfg.latencies
	checks := func() error {
		if lockFault || v.flock != 0 {
			return lockTimeoutErr(v.id)
		}
		if s.vms[v.id] != v {
			return fmt.Errorf("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", v.node, v.id)
		}
		if l, ok := v.conf["lock"]; ok && !skiplock {
			return fmt.Errorf("VM is locked (%s)", l)
		}
		return nil
	}
	id := strconv.Itoa(v.id)
	switch op {
	case "start":
		return s.startTask(q, v.node, "qmstart", id, lat.Start, func() error {
			if v.conf["template"] == "1" {
				return fmt.Errorf("you can't start a vm if it's a template")
			}
			if err := checks(); err != nil {
				return err
			}
			if v.running {
				return fmt.Errorf("VM %d already running", v.id)
			}
			return s.boot(v)
		}, nil), nil
	case "stop":
		return s.startTask(q, v.node, "qmstop", id, lat.Stop, func() error {
			if err := checks(); err != nil {
				return err
			}
			if v.running {
				s.guestStop(v)
			}
			v.running = false
			return nil
		}, nil), nil
	case "shutdown":
		return s.startTask(q, v.node, "qmshutdown", id, lat.Shutdown, func() error {
			if err := checks(); err != nil {
				return err
			}
			if !v.running {
				return fmt.Errorf("VM %d not running", v.id)
			}
			s.guestStop(v)
			v.running = false
			return nil
		}, nil), nil
	default: // reboot: PVE/API2/Qemu.pm vm_reboot dies synchronously when stopped.
		if !v.running {
			return nil, errf("VM %d not running", v.id)
		}
		return s.startTask(q, v.node, "qmreboot", id, lat.Reboot, func() error {
			if err := checks(); err != nil {
				return err
			}
			if !v.running {
				return fmt.Errorf("VM %d not running", v.id)
			}
			s.guestStop(v)
			return s.boot(v)
		}, nil), nil
	}
}

// boot marks v running, leases its DHCP address and starts its guest
// (WithGuests); a guest that fails to start leaves v stopped. Callers
// hold s.mu.
func (s *Server) boot(v *vm) error {
	v.applyPending()
	v.running = true
	v.bootAt = time.Now()
	if v.ip == "" {
		v.ip = s.leaseDHCP()
	}
	if err := s.guestStart(v); err != nil {
		v.running = false
		return err
	}
	return nil
}

// leaseDHCP hands out 10.10.0.100-10.10.0.250 in order, skipping leases
// still held. Callers hold s.mu.
func (s *Server) leaseDHCP() string {
	used := map[string]bool{}
	for _, v := range s.vms {
		used[v.ip] = true
	}
	for i := 0; i < 151; i++ {
		ip := fmt.Sprintf("10.10.0.%d", 100+(s.dhcpNext+i)%151)
		if !used[ip] {
			s.dhcpNext = (s.dhcpNext + i + 1) % 151
			return ip
		}
	}
	return ""
}

// qemuDelete follows destroy_vm: "VM <id> is running - destroy failed" is
// checked before the worker starts.
func (s *Server) qemuDelete(q *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, e := s.lockVM(q)
	if e != nil {
		return nil, e
	}
	if v.conf["protection"] == "1" {
		return nil, errf("can't remove VM %d - protection mode enabled", v.id)
	}
	if v.running {
		return nil, errf("VM %d is running - destroy failed", v.id)
	}
	// The worker holds the config lock while it removes disks and config
	// (PVE/API2/Qemu.pm destroy_vm: lock_config around destroy_vm): other
	// writers time out meanwhile, and the VM is listed until it is gone.
	v.flock = -1
	unlock := func() {
		if v.flock < 0 {
			v.flock = 0
		}
	}
	return s.startTask(q, v.node, "qmdestroy", strconv.Itoa(v.id), s.cfg.latencies.Destroy, func() error {
		unlock()
		if v.running {
			return fmt.Errorf("VM %d is running - destroy failed", v.id)
		}
		if s.vms[v.id] == v {
			delete(s.vms, v.id)
			if s.cfg.guests != nil {
				s.cfg.guests.Destroy(v.id)
			}
		}
		return nil
	}, unlock), nil
}

// qemuTemplate follows PVE/API2/Qemu.pm template: checks under the config
// lock, "template: 1" written before the qmtemplate worker.
func (s *Server) qemuTemplate(q *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, e := s.lockVM(q)
	if e != nil {
		return nil, e
	}
	if v.conf["template"] == "1" {
		return nil, errf("you can't convert a template to a template")
	}
	if v.running {
		return nil, errf("you can't convert a VM to template if VM is running")
	}
	v.conf["template"] = "1"
	return s.startTask(q, v.node, "qmtemplate", strconv.Itoa(v.id), s.cfg.latencies.Template, func() error {
		for k, d := range v.conf {
			if diskKeyRe.MatchString(k) && !isCDROM(d) {
				v.conf[k] = strings.Replace(d, fmt.Sprintf("vm-%d-disk-", v.id), fmt.Sprintf("base-%d-disk-", v.id), 1)
			}
		}
		return nil
	}, nil), nil
}
