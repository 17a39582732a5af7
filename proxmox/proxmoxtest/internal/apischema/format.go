package apischema

import (
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// Named formats Proxmox registers with register_format, each with the
// message its verifier dies with (pve-common src/PVE/JSONSchema.pm).
// Formats not listed here are accepted.
var formats = map[string]func(string) string{
	"pve-vmid": reFormat(`^[1-9][0-9]{2,8}$`, func(string) string {
		return "value does not look like a valid VM ID"
	}),
	"pve-node": reFormat(`^([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)$`, func(string) string {
		return "value does not look like a valid node name"
	}),
	"pve-configid": reFormat(`(?i)^[a-z][a-z0-9_-]+$`, func(v string) string {
		return "invalid configuration ID '" + v + "'"
	}),
	"pve-storage-id": reFormat(`(?i)^[a-z][a-z0-9\-\_\.]*[a-z0-9]$`, func(v string) string {
		return "storage ID '" + v + "' contains illegal characters"
	}),
	"pve-bridge-id": reFormat(`^[-_.\w\d]+$`, func(v string) string {
		return "invalid bridge ID '" + v + "'"
	}),
	"pve-iface": reFormat(`(?i)^[a-z][a-z0-9_]{1,20}([:\.]\d+)?$`, func(v string) string {
		return "invalid network interface name '" + v + "'"
	}),
	"mac-addr": reFormat(`(?i)^[a-f0-9][02468ace](?::[a-f0-9]{2}){5}$`, func(string) string {
		return "value does not look like a valid unicast MAC address"
	}),
	"dns-name": func(v string) string {
		if dnsNameRE.MatchString(v) {
			return ""
		}
		return "value does not look like a valid DNS name"
	},
	"pve-tag": reFormat(`(?i)^[a-z0-9_][a-z0-9_\-\+\.]*$`, func(string) string {
		return "invalid characters in tag"
	}),
	"disk-size": reFormat(`^(\d+(\.\d+)?)([KMGT])?$`, func(v string) string {
		return "value does not look like a valid disk size: " + v
	}),
	"pve-startup-order": func(v string) string {
		ok := v != ""
		for _, p := range strings.Split(v, ",") {
			if strings.TrimSpace(p) != "" && !startupPartRE.MatchString(p) {
				ok = false
			}
		}
		if ok {
			return ""
		}
		return "unable to parse startup options"
	},
	"pve-task-status-type": reFormat(`(?i)^(ok|error|warning|unknown)$`, func(v string) string {
		return "invalid status '" + v + "'"
	}),
	"address": func(v string) string {
		if a, err := netip.ParseAddr(v); (err == nil && a.Zone() == "") || dnsNameRE.MatchString(v) {
			return ""
		}
		return "value does not look like a valid address: " + v
	},
	"pve-ipv4-config": func(v string) string {
		if v == "dhcp" || v == "manual" || cidr(v, true) {
			return ""
		}
		return "value does not look like a valid ipv4 network configuration"
	},
	"pve-ipv6-config": func(v string) string {
		if v == "auto" || v == "dhcp" || v == "manual" || cidr(v, false) {
			return ""
		}
		return "value does not look like a valid ipv6 network configuration"
	},
	"urlencoded": reFormat(`^[-%a-zA-Z0-9_.!~*'()]*$`, func(v string) string {
		return "invalid urlencoded string: " + v
	}),
	"ipv4": func(v string) string {
		if a, err := netip.ParseAddr(v); err == nil && a.Is4() {
			return ""
		}
		return "value does not look like a valid IPv4 address"
	},
	"ipv6": func(v string) string {
		if a, err := netip.ParseAddr(v); err == nil && a.Is6() && a.Zone() == "" {
			return ""
		}
		return "value does not look like a valid IPv6 address"
	},
	"ip": func(v string) string {
		if a, err := netip.ParseAddr(v); err == nil && a.Zone() == "" {
			return ""
		}
		return "value does not look like a valid IP address"
	},
	"CIDRv4": func(v string) string {
		if cidr(v, true) {
			return ""
		}
		return "value does not look like a valid IPv4 CIDR network"
	},
	"CIDRv6": func(v string) string {
		if cidr(v, false) {
			return ""
		}
		return "value does not look like a valid IPv6 CIDR network"
	},
	"CIDR": func(v string) string {
		if cidr(v, true) || cidr(v, false) {
			return ""
		}
		return "value does not look like a valid CIDR network"
	},
	"ipv4mask": func(v string) string {
		a, err := netip.ParseAddr(v)
		if err == nil && a.Is4() {
			b := a.As4()
			m := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
			if m == 0 || (^m)&(^m+1) == 0 { // contiguous ones, then zeros
				return ""
			}
		}
		return "value does not look like a valid IP netmask"
	},
}

var (
	dnsNameRE     = regexp.MustCompile(`^(([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)\.)*([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)$`)
	startupPartRE = regexp.MustCompile(`^((order=)?\d+|up=\d+|down=\d+)$`)
)

// namedPropertyStrings are property-string formats registered by name
// (register_format with a hash), which the viewer data shows only as
// typetext. pve-qm-ipconfig is qemu-server's $ipconfig_fmt; its validator
// callback is not run.
var namedPropertyStrings = map[string]map[string]*Property{
	"pve-qm-ipconfig": {
		"ip":  {Name: "ip", Type: "string", Format: "pve-ipv4-config", Optional: true},
		"gw":  {Name: "gw", Type: "string", Format: "ipv4", Optional: true},
		"ip6": {Name: "ip6", Type: "string", Format: "pve-ipv6-config", Optional: true},
		"gw6": {Name: "gw6", Type: "string", Format: "ipv6", Optional: true},
	},
}

func reFormat(expr string, msg func(string) string) func(string) string {
	re := regexp.MustCompile(expr)
	return func(v string) string {
		if re.MatchString(v) {
			return ""
		}
		return msg(v)
	}
}

// cidr is pve_verify_cidrv4/v6: an address and a prefix length above 7.
func cidr(v string, four bool) bool {
	addr, bits, ok := strings.Cut(v, "/")
	if !ok {
		return false
	}
	a, err := netip.ParseAddr(addr)
	if err != nil || a.Zone() != "" || a.Is4() != four {
		return false
	}
	n, err := strconv.Atoi(bits)
	if err != nil {
		return false
	}
	limit := 128
	if four {
		limit = 32
	}
	return n > 7 && n <= limit
}

// checkFormat is check_format for a named format: "" when valid, else the
// verifier's message. "X-list" checks every element of a
// PVE::Tools::split_list list with X; "X-opt" checks a non-empty value
// with X.
func checkFormat(path, name, v string) string {
	if f, ok := formats[name]; ok {
		return f(v)
	}
	if ps, ok := namedPropertyStrings[name]; ok {
		return checkPropertyString(path, ps, v)
	}
	if base, ok := strings.CutSuffix(name, "-list"); ok {
		if f, known := formats[base]; known {
			for _, e := range splitList(v) {
				if msg := f(e); msg != "" {
					return msg
				}
			}
		}
		return ""
	}
	if base, ok := strings.CutSuffix(name, "-opt"); ok && v != "" {
		if f, known := formats[base]; known {
			return f(v)
		}
	}
	return ""
}

// splitList is PVE::Tools::split_list.
func splitList(v string) []string {
	if strings.Contains(v, "\x00") {
		return strings.Split(v, "\x00")
	}
	v = strings.NewReplacer(",", " ", ";", " ").Replace(v)
	return strings.Fields(v)
}
