package proxmoxtest

import (
	"fmt"
	"sort"
)

// clusterResources serves GET /cluster/resources (PVE/API2/Cluster.pm
// resources): guests, nodes and storages, optionally of one type; guests
// the caller may not audit are left out.
func (s *Server) clusterResources(q *request) (any, *apiError) {
	typ, _ := q.get("type")
	out := []map[string]any{}
	if typ == "" || typ == "vm" {
		s.mu.Lock()
		ids := make([]int, 0, len(s.vms))
		for id := range s.vms {
			ids = append(ids, id)
		}
		sort.Ints(ids)
		if q.tok.has("VM.Audit") {
			for _, id := range ids {
				v := s.vms[id]
				m := s.vmSummary(v)
				m["id"] = fmt.Sprintf("qemu/%d", id)
				m["type"] = "qemu"
				m["node"] = v.node
				m["template"] = 0
				if v.conf["template"] == "1" {
					m["template"] = 1
				}
				m["maxcpu"] = m["cpus"]
				delete(m, "cpus")
				out = append(out, m)
			}
		}
		s.mu.Unlock()
	}
	if typ == "" || typ == "node" {
		for _, n := range s.nodeNames() {
			out = append(out, s.nodeSummary(n))
		}
	}
	if typ == "" || typ == "storage" {
		for _, n := range s.nodeNames() {
			for _, st := range s.cfg.storages {
				shared := 0
				if st.shared {
					shared = 1
				}
				out = append(out, map[string]any{
					"id": "storage/" + n + "/" + st.name, "type": "storage", "storage": st.name, "node": n,
					"status": "available", "content": st.content, "plugintype": st.typ, "shared": shared,
					"disk": st.total / 10, "maxdisk": st.total,
				})
			}
		}
	}
	return out, nil
}
