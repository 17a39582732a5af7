package proxmoxtest

// DefaultSharedStorage is the storage, shared by all nodes, that holds
// the template in the sandbox layout, so that VMs can be cloned onto any
// node.
const DefaultSharedStorage = "ceph"

// SandboxLayout returns the options of the cluster `openctl sandbox` and
// `--sandbox` simulate: nodes pve1..pveN and, when shared is not empty,
// an RBD storage of that name shared by all nodes holding the cloud-init
// template, so that VMs can be cloned onto any node (from local storage
// Proxmox clones only onto the template's own node).
func SandboxLayout(nodes int, shared string) []Option {
	opts := []Option{WithNodes(nodes)}
	if shared != "" {
		t := DefaultTemplate()
		t.Storage = shared
		opts = append(opts, WithSharedStorage(shared), WithTemplates(t))
	}
	return opts
}
