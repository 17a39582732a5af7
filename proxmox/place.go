package proxmox

import (
	"context"
	"slices"

	"github.com/openctl/openctl/manifest"
)

// Place chooses, when planning, the Proxmox VE node of each VM that
// lists allowed nodes (spec.nodes) rather than naming one: a VM that
// exists stays where it is; a new one goes to the allowed online node
// with the most memory not yet allotted — the node's memory less that of
// the VMs on it and of the VMs placed before it in this plan (VMs named
// on a node, such as a cluster's control planes, count there too) — the
// first listed on a tie. spec.nodes becomes spec.node, so the plan shows
// where each VM goes and apply clones it there. Memory allotted, not
// memory in use, decides: the same manifests on the same cluster are
// placed the same way, whenever they are planned.
func (p *Provider) Place(ctx context.Context, rs []*manifest.Resource) error {
	type ctxState struct {
		rs       []clusterResource
		allotted map[string]int64 // node → bytes allotted
		maxMem   map[string]int64
		online   map[string]bool
		vms      map[string]string // VM name → its node
	}
	contexts := map[string]*ctxState{}
	state := func(ctxName string) (*ctxState, error) {
		c, err := p.conn(ctxName)
		if err != nil {
			return nil, err
		}
		if st, ok := contexts[c.name]; ok {
			return st, nil
		}
		crs, err := c.resources(ctx)
		if err != nil {
			return nil, err
		}
		st := &ctxState{rs: crs, allotted: map[string]int64{}, maxMem: map[string]int64{}, online: map[string]bool{}, vms: map[string]string{}}
		for _, r := range crs {
			switch {
			case r.Type == "node":
				st.maxMem[r.Node] = int64(r.MaxMem)
				st.online[r.Node] = r.Status == "" || r.Status == "online"
			case r.Type == "qemu" && r.Template == 0:
				st.allotted[r.Node] += int64(r.MaxMem)
				st.vms[r.Name] = r.Node
			}
		}
		contexts[c.name] = st
		return st, nil
	}
	// memory is what a new VM will be given: its spec's, else its
	// template's.
	memory := func(st *ctxState, s *VMSpec) int64 {
		if s.Memory != nil && s.Memory.Size > 0 {
			return int64(s.Memory.Size) << 20
		}
		for _, r := range st.rs {
			if r.Type == "qemu" && r.Template != 0 && (r.VMID == s.Template.VMID || r.Name == s.Template.Name) {
				return int64(r.MaxMem)
			}
		}
		return 0
	}
	type vm struct {
		r  *manifest.Resource
		s  *VMSpec
		st *ctxState
	}
	var vms []vm
	undecided := false
	for _, r := range rs {
		if r.Kind != KindVirtualMachine || r.Spec == nil {
			continue
		}
		s, err := DecodeVMSpec(r)
		if err != nil {
			continue // a $ref or an error: validation and apply say which
		}
		vms = append(vms, vm{r: r, s: s})
		undecided = undecided || len(s.Nodes) > 0 && s.Node == ""
	}
	if !undecided {
		return nil // nothing to choose: no read of the cluster
	}
	// New VMs named on a node are allotted there first.
	for i := range vms {
		v := &vms[i]
		st, err := state(v.s.Context)
		if err != nil {
			return err
		}
		v.st = st
		if _, exists := st.vms[v.r.Metadata.Name]; !exists && v.s.Node != "" {
			st.allotted[v.s.Node] += memory(st, v.s)
		}
	}
	// Then those that list nodes, in order.
	for _, v := range vms {
		if len(v.s.Nodes) == 0 || v.s.Node != "" {
			continue
		}
		node, exists := v.st.vms[v.r.Metadata.Name]
		if !exists {
			best := int64(-1 << 62)
			for _, n := range v.s.Nodes {
				if !v.st.online[n] {
					continue
				}
				if free := v.st.maxMem[n] - v.st.allotted[n]; free > best {
					node, best = n, free
				}
			}
			if node == "" {
				continue // none online: apply says so
			}
			v.st.allotted[node] += memory(v.st, v.s)
		} else if !slices.Contains(v.s.Nodes, node) {
			continue // it is elsewhere: apply's Diff says what to do
		}
		delete(v.r.Spec, "nodes")
		v.r.Spec["node"] = node
	}
	return nil
}
