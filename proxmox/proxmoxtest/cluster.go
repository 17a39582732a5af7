package proxmoxtest

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

var nodeNameRe = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$`)

// Storage is a simulated storage, identical on every node.
type storageDef struct {
	name, typ, content string
	shared             bool
	total              uint64
}

// defaultStorages are on every node: local (dir) and local-lvm (lvmthin).
func defaultStorages() []storageDef {
	return []storageDef{
		{name: "local", typ: "dir", content: "iso,vztmpl,backup,snippets", total: 100 << 30},
		{name: "local-lvm", typ: "lvmthin", content: "images,rootdir", total: 400 << 30},
	}
}

func (s *Server) storageByName(name string) (storageDef, bool) {
	for _, st := range s.cfg.storages {
		if st.name == name {
			return st, true
		}
	}
	return storageDef{}, false
}

func (s *Server) nodeNames() []string {
	out := make([]string, s.cfg.nodes)
	for i := range out {
		out[i] = fmt.Sprintf("pve%d", i+1)
	}
	return out
}

func (s *Server) hasNode(node string) bool {
	var n int
	if _, err := fmt.Sscanf(node, "pve%d", &n); err != nil {
		return false
	}
	return fmt.Sprintf("pve%d", n) == node && n >= 1 && n <= s.cfg.nodes
}

// checkNode fails like pveproxy does when it cannot resolve a node to proxy
// the request to.
func (s *Server) checkNode(node string) *apiError {
	if s.hasNode(node) {
		return nil
	}
	return errf("hostname lookup '%s' failed - failed to get address info for: %s: Name or service not known", node, node)
}

func (s *Server) registerClusterRoutes() {
	s.handle("GET /version", nil, func(q *request) (any, *apiError) {
		return map[string]any{"release": "9.0", "version": "9.0.10", "repoid": "deb1ca707ec72a89"}, nil
	})
	s.handle("GET /nodes", nil, func(q *request) (any, *apiError) {
		out := []map[string]any{}
		for _, n := range s.nodeNames() {
			out = append(out, s.nodeSummary(n))
		}
		return out, nil
	})
	s.handle("GET /nodes/{node}/status", &perm{"/nodes/{node}", []string{"Sys.Audit"}}, func(q *request) (any, *apiError) {
		node := q.path("node")
		if e := s.checkNode(node); e != nil {
			return nil, e
		}
		return map[string]any{
			"uptime":         uint64(time.Since(s.started).Seconds()) + 86400,
			"cpu":            0.03,
			"wait":           0,
			"loadavg":        []string{"0.10", "0.12", "0.09"},
			"kversion":       "Linux 6.14.8-2-pve #1 SMP PREEMPT_DYNAMIC PMX 6.14.8-2 (2025-07-22T10:04Z)",
			"pveversion":     "pve-manager/9.0.10/deb1ca707ec72a89",
			"cpuinfo":        map[string]any{"cpus": 16, "cores": 8, "sockets": 1, "model": "AMD EPYC 7302P 16-Core Processor", "mhz": "3000.000", "hvm": "1", "flags": "", "user_hz": 100},
			"memory":         map[string]any{"total": uint64(64 << 30), "used": uint64(8 << 30), "free": uint64(56 << 30)},
			"swap":           map[string]any{"total": uint64(8 << 30), "used": 0, "free": uint64(8 << 30)},
			"rootfs":         map[string]any{"total": uint64(100 << 30), "used": uint64(10 << 30), "free": uint64(90 << 30), "avail": uint64(85 << 30)},
			"ksm":            map[string]any{"shared": 0},
			"boot-info":      map[string]any{"mode": "efi", "secureboot": 0},
			"current-kernel": map[string]any{"sysname": "Linux", "release": "6.14.8-2-pve", "machine": "x86_64", "version": "#1 SMP PREEMPT_DYNAMIC PMX 6.14.8-2"},
		}, nil
	})
	s.handle("GET /nodes/{node}/storage", nil, func(q *request) (any, *apiError) {
		node := q.path("node")
		if e := s.checkNode(node); e != nil {
			return nil, e
		}
		content, _ := q.get("content")
		out := []map[string]any{}
		for _, st := range s.cfg.storages {
			if content != "" && !containsCSV(st.content, content) {
				continue
			}
			shared := 0
			if st.shared {
				shared = 1
			}
			out = append(out, map[string]any{
				"storage": st.name, "type": st.typ, "content": st.content, "shared": shared,
				"enabled": 1, "active": 1, "total": st.total, "used": st.total / 10,
				"avail": st.total - st.total/10, "used_fraction": 0.1,
			})
		}
		return out, nil
	})
	s.handle("GET /nodes/{node}/network", nil, func(q *request) (any, *apiError) {
		node := q.path("node")
		if e := s.checkNode(node); e != nil {
			return nil, e
		}
		typ, _ := q.get("type")
		all := s.nodeNetworks(node)
		out := []map[string]any{}
		for _, n := range all {
			t := n["type"].(string)
			if typ == "" || typ == t || (typ == "any_bridge" && t == "bridge") {
				out = append(out, n)
			}
		}
		return out, nil
	})
	s.handle("GET /nodes/{node}/network/{iface}", &perm{"/nodes/{node}", []string{"Sys.Audit"}}, func(q *request) (any, *apiError) {
		node := q.path("node")
		if e := s.checkNode(node); e != nil {
			return nil, e
		}
		for _, n := range s.nodeNetworks(node) {
			if n["iface"] == q.path("iface") {
				return n, nil
			}
		}
		return nil, errf("network interface '%s' does not exist", q.path("iface"))
	})
	s.handle("GET /cluster/resources", nil, s.clusterResources)
	s.handle("GET /cluster/status", &perm{"/", []string{"Sys.Audit"}}, func(q *request) (any, *apiError) {
		out := []map[string]any{{
			"type": "cluster", "id": "cluster", "name": "openctl-sim", "nodes": s.cfg.nodes,
			"quorate": 1, "version": s.cfg.nodes + 1,
		}}
		for i, n := range s.nodeNames() {
			local := 0
			if i == 0 {
				local = 1
			}
			out = append(out, map[string]any{
				"type": "node", "id": "node/" + n, "name": n, "nodeid": i + 1, "online": 1,
				"local": local, "ip": fmt.Sprintf("10.10.0.%d", 11+i), "level": "",
			})
		}
		return out, nil
	})
	// PVE/API2/Cluster.pm nextid: the lowest free id from 100, returned as
	// a string; nothing is reserved. With vmid, a taken id is a parameter
	// error "VM N already exists".
	s.handle("GET /cluster/nextid", nil, func(q *request) (any, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if v, ok := q.get("vmid"); ok {
			if e := checkVMID("vmid", v); e != nil {
				return nil, e
			}
			n, _ := strconv.Atoi(v)
			if _, taken := s.vms[n]; taken {
				return nil, paramErr("vmid", fmt.Sprintf("VM %d already exists", n))
			}
			return strconv.Itoa(n), nil
		}
		for id := 100; ; id++ {
			if _, taken := s.vms[id]; !taken {
				return strconv.Itoa(id), nil
			}
		}
	})
}

func (s *Server) nodeSummary(n string) map[string]any {
	return map[string]any{
		"node": n, "id": "node/" + n, "type": "node", "status": "online", "level": "",
		"cpu": 0.03, "maxcpu": 16, "mem": uint64(8 << 30), "maxmem": uint64(64 << 30),
		"disk": uint64(10 << 30), "maxdisk": uint64(100 << 30),
		"uptime":          uint64(time.Since(s.started).Seconds()) + 86400,
		"ssl_fingerprint": s.Fingerprint(),
	}
}

func (s *Server) nodeNetworks(node string) []map[string]any {
	var idx int
	_, _ = fmt.Sscanf(node, "pve%d", &idx)
	return []map[string]any{
		{"iface": "lo", "type": "loopback", "method": "loopback", "method6": "manual", "autostart": 1, "active": 1, "families": []string{"inet"}, "priority": 3},
		{"iface": "eno1", "type": "eth", "method": "manual", "method6": "manual", "active": 1, "exists": 1, "families": []string{"inet"}, "priority": 4},
		{
			"iface": "vmbr0", "type": "bridge", "method": "static", "method6": "manual", "autostart": 1, "active": 1,
			"bridge_ports": "eno1", "bridge_stp": "off", "bridge_fd": "0", "families": []string{"inet"},
			"address": fmt.Sprintf("10.10.0.%d", 10+idx), "netmask": "24", "cidr": fmt.Sprintf("10.10.0.%d/24", 10+idx),
			"gateway": "10.10.0.1", "priority": 5,
		},
	}
}

func containsCSV(list, item string) bool {
	for _, x := range splitList(list) {
		if x == item {
			return true
		}
	}
	return false
}
