package proxmox

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
)

// clusterResource is one entry of GET /cluster/resources: a node, a
// storage or a guest (QEMU VM, template, LXC container). VMIDs and the
// template flag are integers; the other numbers are float64 because
// Proxmox sends some of them as fractions (an LXC guest's maxcpu under a
// cpulimit), which integer fields refuse.
type clusterResource struct {
	ID         string  `json:"id"`
	Type       string  `json:"type"` // node, qemu, lxc, storage, pool, sdn, ...
	Node       string  `json:"node"`
	Name       string  `json:"name"`
	Status     string  `json:"status"`
	Tags       string  `json:"tags"`
	Lock       string  `json:"lock"`
	VMID       int     `json:"vmid"`
	Template   int     `json:"template"`
	Storage    string  `json:"storage"`
	PluginType string  `json:"plugintype"`
	Content    string  `json:"content"`
	Shared     float64 `json:"shared"`
	CPU        float64 `json:"cpu"`
	MaxCPU     float64 `json:"maxcpu"`
	Mem        float64 `json:"mem"`
	MaxMem     float64 `json:"maxmem"`
	Disk       float64 `json:"disk"`
	MaxDisk    float64 `json:"maxdisk"`
	Uptime     float64 `json:"uptime"`
}

// resources reads /cluster/resources: the one reader of it. It asks once;
// a transient failure is returned for the engine to retry the whole call
// (see the package documentation).
func (c *conn) resources(ctx context.Context) ([]clusterResource, error) {
	var rs []clusterResource
	if err := c.client.Get(ctx, "/cluster/resources", &rs); err != nil {
		return nil, fmt.Errorf("proxmox: context %q: read /cluster/resources: %w", c.name, classify(err))
	}
	return rs, nil
}

// vmConfig reads a guest's config (pending values included): the one
// reader of it. It asks once, like resources.
func (c *conn) vmConfig(ctx context.Context, node string, vmid int) (vmConfig, error) {
	var raw map[string]any
	if err := c.client.Get(ctx, fmt.Sprintf("/nodes/%s/qemu/%d/config", url.PathEscape(node), vmid), &raw); err != nil {
		return nil, fmt.Errorf("proxmox: context %q: read the config of VM %d on %s: %w", c.name, vmid, node, classify(err))
	}
	conf := newVMConfig(raw)
	conf["vmid"] = strconv.Itoa(vmid)
	return conf, nil
}

// readConfig reads the VM's config; see conn.vmConfig.
func (v vmRef) readConfig(ctx context.Context) (vmConfig, error) {
	return v.c.vmConfig(ctx, v.node, v.vmid)
}
