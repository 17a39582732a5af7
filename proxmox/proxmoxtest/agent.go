package proxmoxtest

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// HostKeyPath is the guest file agent/file-read serves the VM's SSH host
// key from.
const HostKeyPath = "/etc/ssh/ssh_host_ed25519_key.pub"

func (s *Server) registerAgentRoutes() {
	// PVE 9 guest agent privileges (PVE/API2/Qemu/Agent.pm).
	audit := vmPerm("VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted")
	s.handle("GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces", audit, s.agentNetwork)
	s.handle("GET /nodes/{node}/qemu/{vmid}/agent/get-osinfo", audit, s.agentOSInfo)
	s.handle("GET /nodes/{node}/qemu/{vmid}/agent/file-read", vmPerm("VM.GuestAgent.FileRead", "VM.GuestAgent.Unrestricted"), s.agentFileRead)
}

// agentVM applies the checks of PVE::QemuServer::Agent::agent_available in
// their order: configured, VM running, agent answering.
func (s *Server) agentVM(q *request) (*vm, *apiError) {
	v, e := s.loadVM(q)
	if e != nil {
		return nil, e
	}
	if !agentEnabled(v.conf) {
		return nil, errf("No QEMU guest agent configured")
	}
	if !v.running {
		return nil, errf("VM %d is not running", v.id)
	}
	if time.Since(v.bootAt) < s.scaled(s.cfg.latencies.AgentUp) {
		return nil, errf("QEMU guest agent is not running")
	}
	return v, nil
}

func (s *Server) agentNetwork(q *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, e := s.agentVM(q)
	if e != nil {
		return nil, e
	}
	ifaces := []map[string]any{{
		"name": "lo", "hardware-address": "00:00:00:00:00:00",
		"ip-addresses": []map[string]any{
			{"ip-address-type": "ipv4", "ip-address": "127.0.0.1", "prefix": 8},
			{"ip-address-type": "ipv6", "ip-address": "::1", "prefix": 128},
		},
		"statistics": map[string]any{"rx-bytes": 0, "tx-bytes": 0, "rx-packets": 0, "tx-packets": 0},
	}}
	if time.Since(v.bootAt) >= s.scaled(s.cfg.latencies.AgentUp+s.cfg.latencies.AgentIP) {
		for i := 0; i < 32; i++ {
			net, ok := v.conf["net"+strconv.Itoa(i)]
			if !ok {
				continue
			}
			first, _ := propList(net)
			_, mac, _ := strings.Cut(first, "=")
			mac = strings.ToLower(mac)
			addrs := []map[string]any{}
			ip, prefix := v.ip, 24
			_, ipc := propList(v.conf["ipconfig"+strconv.Itoa(i)])
			if m := ipCIDRRe.FindStringSubmatch(ipc["ip"]); m != nil {
				ip = m[1]
				prefix, _ = strconv.Atoi(m[2])
			} else if i > 0 {
				ip = ""
			}
			if ip != "" {
				addrs = append(addrs, map[string]any{"ip-address-type": "ipv4", "ip-address": ip, "prefix": prefix})
			}
			addrs = append(addrs, map[string]any{"ip-address-type": "ipv6", "ip-address": linkLocal(mac), "prefix": 64})
			ifaces = append(ifaces, map[string]any{
				"name": fmt.Sprintf("ens%d", 18+i), "hardware-address": mac, "ip-addresses": addrs,
				"statistics": map[string]any{"rx-bytes": 1024, "tx-bytes": 512, "rx-packets": 8, "tx-packets": 4},
			})
		}
	}
	return map[string]any{"result": ifaces}, nil
}

// guestIPv4 is the address the guest's first interface has: its static
// cloud-init address, else its DHCP lease.
func guestIPv4(v *vm) string {
	_, ipc := propList(v.conf["ipconfig0"])
	if m := ipCIDRRe.FindStringSubmatch(ipc["ip"]); m != nil {
		return m[1]
	}
	return v.ip
}

// linkLocal is the EUI-64 IPv6 link-local address of mac.
func linkLocal(mac string) string {
	var b [6]byte
	if _, err := fmt.Sscanf(mac, "%02x:%02x:%02x:%02x:%02x:%02x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]); err != nil {
		return "fe80::1"
	}
	return fmt.Sprintf("fe80::%x:%x:%x:%x", uint16(b[0]^2)<<8|uint16(b[1]), uint16(b[2])<<8|0xff, 0xfe00|uint16(b[3]), uint16(b[4])<<8|uint16(b[5]))
}

func (s *Server) agentOSInfo(q *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, e := s.agentVM(q); e != nil {
		return nil, e
	}
	return map[string]any{"result": map[string]any{
		"id": "ubuntu", "name": "Ubuntu", "pretty-name": "Ubuntu 24.04.3 LTS",
		"version": "24.04.3 LTS (Noble Numbat)", "version-id": "24.04",
		"kernel-release": "6.8.0-79-generic", "kernel-version": "#79-Ubuntu SMP PREEMPT_DYNAMIC", "machine": "x86_64",
	}}, nil
}

func (s *Server) agentFileRead(q *request) (any, *apiError) {
	file, ok := q.get("file")
	if !ok {
		return nil, paramErr("file", "property is missing and it is not optional")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, e := s.agentVM(q)
	if e != nil {
		return nil, e
	}
	var content string
	switch file {
	case HostKeyPath:
		key := v.hostKey
		if v.report.HostKey != nil {
			key = v.report.HostKey
		} else if s.cfg.hostKeys != nil {
			if k, ok := s.cfg.hostKeys(guestIPv4(v)); ok {
				key = k
			}
		}
		if key == nil {
			return nil, errf("Agent error: Failed to open file '%s': No such file or directory", file)
		}
		content = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key))) + " root@" + v.conf["name"] + "\n"
	case "/etc/hostname":
		content = v.conf["name"] + "\n"
	default:
		return nil, errf("Agent error: Failed to open file '%s': No such file or directory", file)
	}
	return map[string]any{"content": content, "bytes-read": len(content), "truncated": false}, nil
}
