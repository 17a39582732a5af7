package proxmoxtest

import (
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// param is the schema of one API parameter, a hand-written subset of the
// method's "parameters" in Proxmox VE's API (PVE::JSONSchema).
type param struct {
	typ      string // "string" (default), "integer", "number", "boolean"
	optional bool
	format   string // named format, see formats
	pattern  *regexp.Regexp
	maxLen   int
	minLen   int
	min, max *float64
	enum     []string
	// prop is the format of a property string ("key=value,...").
	prop       map[string]param
	alias      string // in prop: this key is another key's alias
	keyAlias   string // in prop: an alias whose own name is the value of this key ("virtio=MAC" sets model=virtio)
	defaultKey bool   // in prop: the key of a bare value
	requires   string // another parameter this one needs
}

// re compiles a Proxmox pattern anchored as m/^$pattern$/; a Perl-only
// pattern Go cannot compile is not checked.
func re(pattern string) *regexp.Regexp {
	r, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		return nil
	}
	return r
}

func fp(f float64) *float64 { return &f }

var (
	pNode      = param{format: "pve-node"}
	pVMID      = param{typ: "integer", format: "pve-vmid", min: fp(100), max: fp(999999999)}
	pBool      = param{typ: "boolean", optional: true}
	pOptStr    = param{optional: true}
	pTimeout   = param{typ: "integer", optional: true, min: fp(0)}
	pOptNode   = param{optional: true, format: "pve-node"}
	diskEnum   = diskNames()
	vmParams   = map[string]param{"node": pNode, "vmid": pVMID}
	nodeParams = map[string]param{"node": pNode}
)

func diskNames() []string {
	var out []string
	for _, d := range []struct {
		p string
		n int
	}{{"ide", 4}, {"scsi", 31}, {"virtio", 16}, {"sata", 6}} {
		for i := 0; i < d.n; i++ {
			out = append(out, d.p+strconv.Itoa(i))
		}
	}
	return append(out, "efidisk0", "tpmstate0")
}

func with(base map[string]param, more map[string]param) map[string]param {
	out := make(map[string]param, len(base)+len(more))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// routeParams are the parameters of every served route except config
// POST/PUT, which checkConfigValue validates. Every method has
// additionalProperties 0: unknown parameters are refused.
var routeParams = map[string]map[string]param{
	"GET /version":             {},
	"GET /nodes":               {},
	"GET /cluster/status":      {},
	"GET /cluster/resources":   {"type": {optional: true, enum: []string{"vm", "storage", "node", "sdn"}}},
	"GET /cluster/nextid":      {"vmid": {typ: "integer", optional: true, format: "pve-vmid", min: fp(100), max: fp(999999999)}},
	"GET /nodes/{node}/status": nodeParams,
	"GET /nodes/{node}/storage": with(nodeParams, map[string]param{
		"content": pOptStr, "enabled": pBool, "format": pBool,
		"storage": {optional: true, format: "pve-storage-id"}, "target": pOptNode,
	}),
	"GET /nodes/{node}/network": with(nodeParams, map[string]param{"type": {optional: true, enum: []string{
		"bridge", "bond", "eth", "alias", "vlan", "fabric", "OVSBridge", "OVSBond", "OVSPort", "OVSIntPort", "vnet", "any_bridge", "any_local_bridge", "include_sdn"}}}),
	"GET /nodes/{node}/network/{iface}":            with(nodeParams, map[string]param{"iface": {format: "pve-iface", maxLen: 20, minLen: 2}}),
	"GET /nodes/{node}/qemu":                       with(nodeParams, map[string]param{"full": pBool}),
	"GET /nodes/{node}/qemu/{vmid}/status/current": vmParams,
	"GET /nodes/{node}/qemu/{vmid}/pending":        vmParams,
	"GET /nodes/{node}/qemu/{vmid}/config": with(vmParams, map[string]param{
		"current": pBool, "snapshot": {optional: true, format: "pve-configid", maxLen: 40},
	}),
	"POST /nodes/{node}/qemu/{vmid}/clone": with(vmParams, map[string]param{
		"bwlimit": {typ: "integer", optional: true, min: fp(0)}, "description": pOptStr,
		"format": {optional: true, enum: []string{"raw", "qcow2", "vmdk"}}, "full": pBool,
		"name": {optional: true, format: "dns-name"}, "newid": pVMID, "pool": pOptStr,
		"snapname": {optional: true, format: "pve-configid", maxLen: 40},
		"storage":  {optional: true, format: "pve-storage-id"}, "target": pOptNode,
	}),
	"PUT /nodes/{node}/qemu/{vmid}/resize": with(vmParams, map[string]param{
		"digest": {optional: true, maxLen: 40}, "disk": {enum: diskEnum},
		"size": {pattern: regexp.MustCompile(`^(?:\+?\d+(\.\d+)?[KMGT]?)$`)}, "skiplock": pBool,
	}),
	"POST /nodes/{node}/qemu/{vmid}/status/start": with(vmParams, map[string]param{
		"force-cpu": pOptStr, "machine": configParams["machine"], "migratedfrom": pOptNode,
		"migration_network": {optional: true, format: "CIDR"},
		"migration_type":    {optional: true, enum: []string{"secure", "insecure"}},
		"nets-host-mtu":     {optional: true, pattern: regexp.MustCompile(`^(?:net\d+=\d+(,net\d+=\d+)*)$`)},
		"skiplock":          pBool, "stateuri": {optional: true, maxLen: 128}, "targetstorage": pOptStr,
		"timeout": pTimeout, "with-conntrack-state": pBool,
	}),
	"POST /nodes/{node}/qemu/{vmid}/status/stop": with(vmParams, map[string]param{
		"keepActive": pBool, "migratedfrom": pOptNode, "overrule-shutdown": pBool, "skiplock": pBool, "timeout": pTimeout,
	}),
	"POST /nodes/{node}/qemu/{vmid}/status/shutdown": with(vmParams, map[string]param{
		"forceStop": pBool, "keepActive": pBool, "skiplock": pBool, "timeout": pTimeout,
	}),
	"POST /nodes/{node}/qemu/{vmid}/status/reboot": with(vmParams, map[string]param{"timeout": pTimeout}),
	"DELETE /nodes/{node}/qemu/{vmid}": with(vmParams, map[string]param{
		"destroy-unreferenced-disks": pBool, "purge": pBool, "skiplock": pBool,
	}),
	"POST /nodes/{node}/qemu/{vmid}/template":                    with(vmParams, map[string]param{"disk": {optional: true, enum: diskEnum}}),
	"GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces": vmParams,
	"GET /nodes/{node}/qemu/{vmid}/agent/get-osinfo":             vmParams,
	"GET /nodes/{node}/qemu/{vmid}/agent/file-read":              with(vmParams, map[string]param{"file": {}}),
	"GET /nodes/{node}/tasks": with(nodeParams, map[string]param{
		"errors": pBool, "limit": {typ: "integer", optional: true, min: fp(0)},
		"since": {typ: "integer", optional: true}, "until": {typ: "integer", optional: true},
		"source":       {optional: true, enum: []string{"archive", "active", "all"}},
		"start":        {typ: "integer", optional: true, min: fp(0)},
		"statusfilter": {optional: true, format: "pve-task-status-type-list"}, "typefilter": pOptStr, "userfilter": pOptStr,
		"vmid": {typ: "integer", optional: true, format: "pve-vmid", min: fp(100), max: fp(999999999)},
	}),
	"GET /nodes/{node}/tasks/{upid}/status": with(nodeParams, map[string]param{"upid": {}}),
	"GET /nodes/{node}/tasks/{upid}/log": with(nodeParams, map[string]param{
		"upid": {}, "download": pBool,
		"limit": {typ: "integer", optional: true, min: fp(0)}, "start": {typ: "integer", optional: true, min: fp(0)},
	}),
}

// formats are the named formats checked, each returning the message its
// verifier in pve-common src/PVE/JSONSchema.pm (or qemu-server) dies with,
// or "" when v is valid.
var formats = map[string]func(v string) string{
	"pve-vmid":       reMsg(`^[1-9][0-9]{2,8}$`, func(string) string { return "value does not look like a valid VM ID" }),
	"pve-node":       reMsg(nodeNameRe.String(), func(string) string { return "value does not look like a valid node name" }),
	"pve-configid":   reMsg(`(?i)^[a-z][a-z0-9_-]+$`, func(v string) string { return "invalid configuration ID '" + v + "'" }),
	"pve-storage-id": reMsg(`(?i)^[a-z][a-z0-9\-_.]*[a-z0-9]$`, func(v string) string { return "storage ID '" + v + "' contains illegal characters" }),
	"pve-iface":      reMsg(`(?i)^[a-z][a-z0-9_]{1,20}([:.]\d+)?$`, func(v string) string { return "invalid network interface name '" + v + "'" }),
	"dns-name":       reMsg(dnsNameRe.String(), func(string) string { return "value does not look like a valid DNS name" }),
	"urlencoded":     reMsg(urlEncodedRe.String(), func(v string) string { return "invalid urlencoded string: " + v }),
	"CIDR": func(v string) string {
		if p, err := netip.ParsePrefix(v); err == nil && p.Bits() > 7 {
			return ""
		}
		return "value does not look like a valid CIDR network"
	},
	"address-list": func(v string) string {
		for _, e := range splitList(v) {
			if _, err := netip.ParseAddr(e); err != nil {
				return "value does not look like a valid address: " + e
			}
		}
		return ""
	},
	// PVE::JSONSchema::pve_verify_startup_order
	"pve-startup-order": func(v string) string {
		for _, part := range strings.Split(v, ",") {
			if !startupRe.MatchString(part) {
				return "unable to parse startup options"
			}
		}
		return ""
	},
	// PVE::JSONSchema::pve_verify_tag_list
	"pve-tag-list": func(v string) string {
		for _, e := range splitList(v) {
			if !tagRe.MatchString(e) {
				return "invalid characters in tag"
			}
		}
		return ""
	},
	"pve-task-status-type-list": func(v string) string {
		for _, e := range splitList(v) {
			switch e {
			case "ok", "error", "warning", "unknown":
			default:
				return "invalid status '" + e + "'"
			}
		}
		return ""
	},
}

func formatOK(name, v string) bool { return formats[name](v) == "" }

// ipconfigFormat is qemu-server's pve-qm-ipconfig property string.
var ipconfigFormat = map[string]param{
	"ip": {optional: true}, "gw": {optional: true}, "ip6": {optional: true}, "gw6": {optional: true},
}

var (
	startupRe = regexp.MustCompile(`^((order=)?\d+|up=\d+|down=\d+)$`)
	tagRe     = regexp.MustCompile(`(?i)^[a-z0-9_][a-z0-9_\-+.]*$`)
)

func reMsg(expr string, msg func(string) string) func(string) string {
	r := regexp.MustCompile(expr)
	return func(v string) string {
		if r.MatchString(v) {
			return ""
		}
		return msg(v)
	}
}

var (
	integerRe = regexp.MustCompile(`^[+-]?\d+$`)
	numberRe  = regexp.MustCompile(`^[+-]?(\d+\.\d+|\d+\.|\.\d+|\d+)([eE][+-]?\d+)?$`)
)

// checkValue is PVE::JSONSchema check_prop for one value: type, format,
// pattern, maxLength, minLength, maximum, minimum, enum; first failure wins.
func (p param) check(v string) string {
	switch p.typ {
	case "boolean":
		// check_type accepts exactly '1' and '0'.
		if v != "1" && v != "0" {
			return fmt.Sprintf("type check ('boolean') failed - got '%s'", v)
		}
	case "integer":
		if !integerRe.MatchString(v) {
			return fmt.Sprintf("type check ('integer') failed - got '%s'", v)
		}
	case "number":
		if !numberRe.MatchString(v) {
			return fmt.Sprintf("type check ('number') failed - got '%s'", v)
		}
	}
	if f, ok := formats[p.format]; ok {
		if msg := f(v); msg != "" {
			return "invalid format - " + msg + "\n"
		}
	} else if base, ok := strings.CutSuffix(p.format, "-list"); ok {
		if f, ok := formats[base]; ok {
			for _, e := range splitList(v) {
				if msg := f(e); msg != "" {
					return "invalid format - " + msg + "\n"
				}
			}
		}
	}
	prop := p.prop
	if p.format == "pve-qm-ipconfig" {
		prop = ipconfigFormat
	}
	if prop != nil {
		if msg := checkPropertyString(prop, v); msg != "" {
			return "invalid format - " + msg
		}
	}
	if p.pattern != nil && !p.pattern.MatchString(v) {
		return "value does not match the regex pattern"
	}
	if p.maxLen > 0 && utf8.RuneCountInString(v) > p.maxLen {
		return fmt.Sprintf("value may only be %d characters long", p.maxLen)
	}
	if p.minLen > 0 && utf8.RuneCountInString(v) < p.minLen {
		return fmt.Sprintf("value must be at least %d characters long", p.minLen)
	}
	if numberRe.MatchString(v) {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			if p.max != nil && f > *p.max {
				return "value must have a maximum value of " + strconv.FormatFloat(*p.max, 'f', -1, 64)
			}
			if p.min != nil && f < *p.min {
				return "value must have a minimum value of " + strconv.FormatFloat(*p.min, 'f', -1, 64)
			}
		}
	}
	if len(p.enum) > 0 {
		for _, e := range p.enum {
			if e == v {
				return ""
			}
		}
		return fmt.Sprintf("value '%s' does not have a value in the enumeration '%s'", v, strings.Join(p.enum, ", "))
	}
	return ""
}

// validate checks the request parameters (path ones included) against the
// route's schema, collecting one message per parameter like
// PVE::JSONSchema::validate, and answers 400 "Parameter verification
// failed." with all of them.
func validate(route string, params map[string]string) *apiError {
	schema, ok := routeParams[route]
	open := false
	if !ok {
		// Config POST/PUT: validateConfig checks the other keys.
		schema, open = vmParams, true
	}
	errs := map[string]string{}
	for k, v := range params {
		p, ok := schema[k]
		if !ok {
			if !open {
				errs[k] = "property is not defined in schema and the schema does not allow additional properties"
			}
			continue
		}
		if msg := p.check(v); msg != "" {
			errs[k] = msg
		}
	}
	for k, p := range schema {
		if _, ok := params[k]; !ok && !p.optional {
			errs[k] = "property is missing and it is not optional"
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &apiError{code: 400, msg: "Parameter verification failed.", params: errs}
}

// checkPropertyString follows PVE::JSONSchema::parse_property_string:
// comma-separated key=value parts or one bare value for the default key,
// aliases followed, then every key checked like a parameter.
func checkPropertyString(format map[string]param, data string) string {
	res := map[string]string{}
	bare := false
	for _, part := range strings.Split(data, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		switch {
		case ok && k != "" && v != "":
			if _, dup := res[k]; dup {
				return "duplicate key in comma-separated list property: " + k + "\n"
			}
			s, known := format[k]
			if known && s.alias != "" {
				if s.keyAlias != "" {
					// PVE::JSONSchema parse_property_string: "virtio=MAC"
					// is macaddr=MAC and model=virtio.
					if _, dup := res[s.keyAlias]; dup {
						return "duplicate key in comma-separated list property: " + s.keyAlias + "\n"
					}
					res[s.keyAlias] = k
				}
				k = s.alias
				s, known = format[k]
			}
			if !known {
				return "invalid key in comma-separated list property: " + k + "\n"
			}
			if s.typ == "boolean" {
				if b, ok := parseBool(v); ok {
					v = map[bool]string{true: "1", false: "0"}[b]
				}
			}
			res[k] = v
		case !ok:
			def := ""
			for key, s := range format {
				if s.defaultKey {
					def = key
				}
			}
			if def == "" {
				return "value without key, but schema does not define a default key\n"
			}
			if _, dup := res[def]; dup || bare {
				return "duplicate key in comma-separated list property: " + def + "\n"
			}
			bare = true
			res[def] = part
		default:
			return "missing key in comma-separated list property\n"
		}
	}
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(format)) {
		s := format[k]
		v, ok := res[k]
		if !ok {
			if !s.optional && s.alias == "" {
				lines = append(lines, k+": property is missing and it is not optional")
			}
			continue
		}
		if msg := s.check(v); msg != "" {
			lines = append(lines, k+": "+strings.TrimSuffix(msg, "\n"))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "format error\n" + strings.Join(lines, "\n") + "\n"
}

// configParam finds the schema of a config key; net3 finds "net[n]".
func configParam(k string) (param, bool) {
	if p, ok := configParams[k]; ok {
		return p, true
	}
	i := len(k)
	for i > 0 && k[i-1] >= '0' && k[i-1] <= '9' {
		i--
	}
	if i == len(k) || i == 0 {
		return param{}, false
	}
	p, ok := configParams[k[:i]+"[n]"]
	return p, ok
}

// validateConfig checks config POST/PUT parameters against configParams.
func validateConfig(params map[string]string, put bool) *apiError {
	errs := map[string]string{}
	for k, v := range params {
		if k == "node" || k == "vmid" {
			continue
		}
		p, ok := configParam(k)
		if !ok || (put && (k == "background_delay" || k == "import-working-storage")) {
			errs[k] = "property is not defined in schema and the schema does not allow additional properties"
			continue
		}
		if msg := p.check(v); msg != "" {
			errs[k] = msg
		}
		if p.requires != "" {
			if _, ok := params[p.requires]; !ok {
				errs[p.requires] = fmt.Sprintf("missing property - '%s' requires this property", k)
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &apiError{code: 400, msg: "Parameter verification failed.", params: errs}
}
