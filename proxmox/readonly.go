package proxmox

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

// Labels on Template and Node resources.
const (
	// LabelNode is the Proxmox node a Template lives on. Two templates on
	// different nodes may share a name; the label tells them apart in a
	// List.
	LabelNode = "proxmox.openctl.io/node"
	// LabelContext is the context (Config.Contexts) a Template or Node was
	// read from.
	LabelContext = "proxmox.openctl.io/context"
)

// readConcurrency bounds the parallel reads of listNodes and listTemplates.
const readConcurrency = 8

// clusterView is one read of /cluster/resources, split by type.
type clusterView struct {
	nodes    map[string]clusterResource            // by node name
	storages map[string]map[string]clusterResource // node → storage id → entry
	vms      []clusterResource                     // QEMU guests and templates the token may audit, by VMID
}

// view reads /cluster/resources once: nodes, storages and QEMU guests
// with their nodes. Guests the token may not audit (VM.Audit) are left
// out by Proxmox.
func (c *conn) view(ctx context.Context) (*clusterView, error) {
	rs, err := c.resources(ctx)
	if err != nil {
		return nil, err
	}
	v := &clusterView{nodes: map[string]clusterResource{}, storages: map[string]map[string]clusterResource{}}
	for _, r := range rs {
		switch r.Type {
		case "node":
			name := r.Node
			if name == "" {
				name = strings.TrimPrefix(r.ID, "node/")
			}
			v.nodes[name] = r
		case "storage":
			if v.storages[r.Node] == nil {
				v.storages[r.Node] = map[string]clusterResource{}
			}
			v.storages[r.Node][r.Storage] = r
		case "qemu":
			v.vms = append(v.vms, r)
		}
	}
	slices.SortFunc(v.vms, func(a, b clusterResource) int { return a.VMID - b.VMID })
	return v, nil
}

func (v *clusterView) nodeNames() []string { return sortedKeys(v.nodes) }

// shared reports whether storage id is shared: on node when node is not
// empty (it must then also be available there), on any node otherwise.
func (v *clusterView) shared(id, node string) bool {
	if node != "" {
		st, ok := v.storages[node][id]
		return ok && st.Shared == 1
	}
	for _, sts := range v.storages {
		if st, ok := sts[id]; ok && st.Shared == 1 {
			return true
		}
	}
	return false
}

// templates returns the QEMU templates, by VMID.
func (v *clusterView) templates() []clusterResource {
	var out []clusterResource
	for _, r := range v.vms {
		if r.Template == 1 {
			out = append(out, r)
		}
	}
	return out
}

// ---- Node ----

// getNode reads one node: one /cluster/resources read and, when the node
// is online, its bridges. A node that does not exist is NotFound.
func (c *conn) getNode(ctx context.Context, name string) (*manifest.Resource, error) {
	v, err := c.view(ctx)
	if err != nil {
		return nil, err
	}
	n, ok := v.nodes[name]
	if !ok {
		return nil, errcode.New(errcode.NotFound, fmt.Sprintf("proxmox: context %q: no node %q (nodes: %s)", c.name, name, strings.Join(v.nodeNames(), ", ")))
	}
	bridges, err := c.bridges(ctx, n)
	if err != nil {
		return nil, err
	}
	return c.nodeResource(name, n, v.storages[name], bridges), nil
}

// listNodes reads every node, sorted by name: one /cluster/resources read
// and one network read per online node, in parallel.
func (c *conn) listNodes(ctx context.Context) ([]*manifest.Resource, error) {
	v, err := c.view(ctx)
	if err != nil {
		return nil, err
	}
	names := v.nodeNames()
	bridges := make([][]string, len(names))
	err = parallel(ctx, len(names), func(i int) error {
		var err error
		bridges[i], err = c.bridges(ctx, v.nodes[names[i]])
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]*manifest.Resource, len(names))
	for i, name := range names {
		out[i] = c.nodeResource(name, v.nodes[name], v.storages[name], bridges[i])
	}
	return out, nil
}

// bridges lists a node's bridges (Linux and OVS), sorted; nil for a node
// that is not online (it cannot answer).
func (c *conn) bridges(ctx context.Context, n clusterResource) ([]string, error) {
	name := n.Node
	if n.Status != "online" {
		return nil, nil
	}
	var ifaces []struct {
		Iface string `json:"iface"`
	}
	if err := c.client.Get(ctx, "/nodes/"+url.PathEscape(name)+"/network?type=any_bridge", &ifaces); err != nil {
		return nil, fmt.Errorf("proxmox: context %q: read the bridges of node %s: %w", c.name, name, classify(err))
	}
	out := make([]string, 0, len(ifaces))
	for _, i := range ifaces {
		out = append(out, i.Iface)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// nodeResource renders a Node. Its status:
//
//	status: online | offline | unknown
//	cpu: 0.03          # usage, a fraction of all CPUs
//	cpus: 16
//	memory: {total, used, free}   # bytes
//	uptime: 86400      # seconds
//	storages: [{name, type, shared, total, used, available, content: [images, rootdir]}]
//	bridges: [vmbr0]
func (c *conn) nodeResource(name string, n clusterResource, storages map[string]clusterResource, bridges []string) *manifest.Resource {
	sts := make([]any, 0, len(storages))
	for _, id := range sortedKeys(storages) {
		st := storages[id]
		content := []any{}
		for _, ct := range strings.Split(st.Content, ",") {
			if ct = strings.TrimSpace(ct); ct != "" {
				content = append(content, ct)
			}
		}
		sts = append(sts, map[string]any{
			"name":      id,
			"type":      st.PluginType,
			"shared":    st.Shared == 1,
			"total":     int64(st.MaxDisk),
			"used":      int64(st.Disk),
			"available": int64(max(st.MaxDisk-st.Disk, 0)),
			"content":   content,
		})
	}
	brs := make([]any, len(bridges))
	for i, b := range bridges {
		brs[i] = b
	}
	status := n.Status
	if status == "" {
		status = "unknown"
	}
	return &manifest.Resource{
		APIVersion: APIVersion,
		Kind:       KindNode,
		Metadata:   manifest.Metadata{Name: name, Labels: map[string]string{LabelContext: c.name}},
		Status: map[string]any{
			"status": status,
			"cpu":    n.CPU,
			"cpus":   int64(n.MaxCPU),
			"memory": map[string]any{
				"total": int64(n.MaxMem),
				"used":  int64(n.Mem),
				"free":  int64(max(n.MaxMem-n.Mem, 0)),
			},
			"uptime":   int64(n.Uptime),
			"storages": sts,
			"bridges":  brs,
		},
	}
}

// ---- Template ----

// template is a template as read from Proxmox.
type template struct {
	clusterResource
	conf vmConfig
}

// displayName is the template's name, or its VMID when it has none.
func (t template) displayName() string {
	if t.Name != "" {
		return t.Name
	}
	return strconv.Itoa(t.VMID)
}

// getTemplate reads one template by name: one /cluster/resources read and
// one config read. A name that is all digits also matches an unnamed
// template's VMID. No match is NotFound; two templates of that name (on
// different nodes) are an Invalid error naming both, since a Template is
// identified by name alone.
func (c *conn) getTemplate(ctx context.Context, name string) (*manifest.Resource, error) {
	v, err := c.view(ctx)
	if err != nil {
		return nil, err
	}
	cands := templatesNamed(v, name)
	switch len(cands) {
	case 0:
		return nil, c.noTemplate(v, name)
	case 1:
	default:
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: context %q: template name %q is ambiguous: %s (list templates to see both; a VM can name its template by vmid)", c.name, name, describeTemplates(cands)))
	}
	t := template{clusterResource: cands[0]}
	if t.conf, err = c.vmConfig(ctx, t.Node, t.VMID); err != nil {
		return nil, err
	}
	return c.templateResource(v, t), nil
}

// listTemplates reads every template the token may audit, sorted by name
// (then node and VMID): one /cluster/resources read and one config read
// per template, in parallel. Templates that share a name appear once each,
// told apart by the LabelNode label and status.vmid.
func (c *conn) listTemplates(ctx context.Context) ([]*manifest.Resource, error) {
	v, err := c.view(ctx)
	if err != nil {
		return nil, err
	}
	ts := v.templates()
	tmpls := make([]template, len(ts))
	err = parallel(ctx, len(ts), func(i int) error {
		tmpls[i].clusterResource = ts[i]
		var err error
		tmpls[i].conf, err = c.vmConfig(ctx, ts[i].Node, ts[i].VMID)
		if errcode.Is(err, errcode.NotFound) {
			err = nil // deleted since the list was read
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(tmpls, func(a, b template) int {
		if x := strings.Compare(a.displayName(), b.displayName()); x != 0 {
			return x
		}
		if x := strings.Compare(a.Node, b.Node); x != 0 {
			return x
		}
		return a.VMID - b.VMID
	})
	out := make([]*manifest.Resource, 0, len(tmpls))
	for _, t := range tmpls {
		if t.conf != nil {
			out = append(out, c.templateResource(v, t))
		}
	}
	return out, nil
}

// templatesNamed returns the templates called name; a name of digits
// also matches the VMID of an unnamed template.
func templatesNamed(v *clusterView, name string) []clusterResource {
	var out []clusterResource
	for _, r := range v.templates() {
		if r.Name == name || (r.Name == "" && strconv.Itoa(r.VMID) == name) {
			out = append(out, r)
		}
	}
	return out
}

func (c *conn) noTemplate(v *clusterView, name string) error {
	var names []string
	for _, t := range v.templates() {
		names = append(names, template{clusterResource: t}.displayName())
	}
	slices.Sort(names)
	names = slices.Compact(names)
	have := "there are no templates"
	if len(names) > 0 {
		have = "templates: " + strings.Join(names, ", ")
	}
	return errcode.New(errcode.NotFound, fmt.Sprintf("proxmox: context %q: no template %q (%s; templates the token may not audit (VM.Audit) are not listed)", c.name, name, have))
}

func describeTemplates(ts []clusterResource) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = fmt.Sprintf("VMID %d on node %s", t.VMID, t.Node)
	}
	return strings.Join(parts, ", ")
}

var (
	// driveKeyRe: the config keys that hold volumes (PVE::QemuServer
	// drive keys, plus EFI vars and TPM state).
	driveKeyRe = regexp.MustCompile(`^(scsi|virtio|sata|ide)\d+$|^efidisk0$|^tpmstate0$`)
	// cloudInitVolRe: PVE::QemuServer::Drive::drive_is_cloudinit.
	cloudInitVolRe = regexp.MustCompile(`[:/]vm-\d+-cloudinit(\.\w+)?$`)
)

// volume is one drive of a config: its key, volume id and storage.
type volume struct {
	key, vol, storage string
	cdrom, cloudInit  bool
}

// volumes lists a config's drives, sorted by key. Drives without a
// storage volume (an empty CD-ROM "none", a host "cdrom", a raw device
// path) have no storage.
func (cf vmConfig) volumes() []volume {
	var out []volume
	for _, k := range sortedKeys(cf) {
		if !driveKeyRe.MatchString(k) {
			continue
		}
		vol, kv := propList(cf[k])
		if vol == "" { // the "file=<volume>,..." form
			vol = kv["file"]
		}
		v := volume{key: k, vol: vol, cdrom: kv["media"] == "cdrom", cloudInit: cloudInitVolRe.MatchString(vol)}
		if st, _, ok := strings.Cut(vol, ":"); ok && !strings.HasPrefix(vol, "/") {
			v.storage = st
		}
		out = append(out, v)
	}
	return out
}

// localVolumes lists the drives that keep a template from being cloned to
// another node: those on storage that is not shared (or, with node set,
// not available on node). Like PVE's clone_vm, CD-ROM images count too
// (cloud-init drives included); drives without a storage volume do not.
func localVolumes(v *clusterView, cf vmConfig, node string) []volume {
	var out []volume
	for _, vol := range cf.volumes() {
		if vol.storage != "" && !v.shared(vol.storage, node) {
			out = append(out, vol)
		}
	}
	return out
}

// templateResource renders a Template. Its status:
//
//	vmid: 9000
//	node: pve1
//	disks: {scsi0: 10G}     # disks (not CD-ROMs) and their sizes
//	storage: local-lvm      # storage of the boot disk
//	agent: true             # QEMU guest agent enabled
//	cloudInit: true         # has a cloud-init drive
//	shared: false           # every volume on shared storage: clonable to any node
func (c *conn) templateResource(v *clusterView, t template) *manifest.Resource {
	disks := map[string]any{}
	storageOf := map[string]string{}
	cloudInit := false
	for _, vol := range t.conf.volumes() {
		if vol.cloudInit {
			cloudInit = true
		}
		if vol.cdrom || vol.cloudInit {
			continue
		}
		_, kv := propList(t.conf[vol.key])
		disks[vol.key] = kv["size"]
		storageOf[vol.key] = vol.storage
	}
	return &manifest.Resource{
		APIVersion: APIVersion,
		Kind:       KindTemplate,
		Metadata: manifest.Metadata{
			Name:   t.displayName(),
			Labels: map[string]string{LabelNode: t.Node, LabelContext: c.name},
		},
		Status: map[string]any{
			"vmid":      int64(t.VMID),
			"node":      t.Node,
			"disks":     disks,
			"storage":   storageOf[bootDisk(t.conf, storageOf)],
			"agent":     agentEnabled(t.conf["agent"]),
			"cloudInit": cloudInit,
			"shared":    len(localVolumes(v, t.conf, "")) == 0,
		},
	}
}

// bootDisk returns the first disk of the boot order ("order=scsi0;ide2;net0")
// that is among disks, else the first of disks in scsi, virtio, sata, ide
// order.
func bootDisk(cf vmConfig, disks map[string]string) string {
	_, kv := propList(cf["boot"])
	for _, d := range strings.Split(kv["order"], ";") {
		if _, ok := disks[d]; ok {
			return d
		}
	}
	keys := sortedKeys(disks)
	for _, prefix := range []string{"scsi", "virtio", "sata", "ide"} {
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) {
				return k
			}
		}
	}
	if len(keys) > 0 {
		return keys[0]
	}
	return ""
}

// templateRef is what cloning needs to know about its source.
type templateRef struct {
	Node   string // the node the source lives on
	VMID   int
	Name   string
	Shared bool // every volume on shared storage (available on the wanted node, if one was given)
	// Template is false when a VMID named an ordinary VM: Proxmox can
	// full-clone one, but a linked clone needs a template.
	Template bool
}

// findTemplate finds the source of a clone, with one /cluster/resources
// read and one config read:
//
//   - by vmid (name, if also given, must match): any VM anywhere, template
//     or not;
//   - by name: a template of that name, preferably on node. Proxmox clones
//     to another node only from shared storage, so one elsewhere is
//     accepted only when all its volumes are on storage shared with node;
//     otherwise the error (Invalid) names the template, its node and node.
//     With node empty, the name must be unique.
//
// node, when set, must exist (Invalid otherwise). A missing source is
// NotFound; several candidates are an Invalid error listing them.
func (c *conn) findTemplate(ctx context.Context, node, name string, vmid int) (templateRef, error) {
	if vmid <= 0 && name == "" {
		return templateRef{}, errcode.New(errcode.Invalid, "proxmox: template: set name or vmid")
	}
	v, err := c.view(ctx)
	if err != nil {
		return templateRef{}, err
	}
	if node != "" {
		if _, ok := v.nodes[node]; !ok {
			return templateRef{}, errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: context %q: no node %q (nodes: %s)", c.name, node, strings.Join(v.nodeNames(), ", ")))
		}
	}
	label := fmt.Sprintf("template %q", name)
	var cands []clusterResource
	if vmid > 0 {
		label = fmt.Sprintf("template VMID %d", vmid)
		i := slices.IndexFunc(v.vms, func(r clusterResource) bool { return r.VMID == vmid })
		if i < 0 {
			return templateRef{}, errcode.New(errcode.NotFound, fmt.Sprintf("proxmox: context %q: no VM %d (or the token may not audit it: VM.Audit)", c.name, vmid))
		}
		if name != "" && v.vms[i].Name != name {
			return templateRef{}, errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: context %q: VM %d is named %q, not %q", c.name, vmid, v.vms[i].Name, name))
		}
		cands = v.vms[i : i+1]
	} else {
		cands = templatesNamed(v, name)
		if len(cands) == 0 {
			return templateRef{}, c.noTemplate(v, name)
		}
		if node != "" {
			var local []clusterResource
			for _, r := range cands {
				if r.Node == node {
					local = append(local, r)
				}
			}
			if len(local) > 0 {
				cands = local
			}
		}
	}

	// Read the configs of the candidates (usually one) and keep those
	// that can be cloned to node.
	confs := make([]vmConfig, len(cands))
	err = parallel(ctx, len(cands), func(i int) error {
		var err error
		confs[i], err = c.vmConfig(ctx, cands[i].Node, cands[i].VMID)
		return err
	})
	if err != nil {
		return templateRef{}, err
	}
	var usable []int
	for i, r := range cands {
		if node == "" || r.Node == node || len(localVolumes(v, confs[i], node)) == 0 {
			usable = append(usable, i)
		}
	}
	switch {
	case len(usable) == 0 && len(cands) == 1:
		r := cands[0]
		var on []string
		for _, vol := range localVolumes(v, confs[0], node) {
			on = append(on, vol.key+" on "+vol.storage)
		}
		return templateRef{}, errcode.New(errcode.Invalid, fmt.Sprintf(
			"proxmox: context %q: template %q (VMID %d) is on node %s and not all its volumes are on storage shared with %s (%s): Proxmox clones to another node only from shared storage; place the VM on %s, move the template's disks to shared storage, or copy the template to %s",
			c.name, template{clusterResource: r}.displayName(), r.VMID, r.Node, node, strings.Join(on, ", "), r.Node, node))
	case len(usable) == 0:
		return templateRef{}, errcode.New(errcode.Invalid, fmt.Sprintf(
			"proxmox: context %q: %s is not on node %s and no copy is on storage shared with it (%s): Proxmox clones to another node only from shared storage",
			c.name, label, node, describeTemplates(cands)))
	case len(usable) > 1:
		picked := make([]clusterResource, len(usable))
		for i, u := range usable {
			picked[i] = cands[u]
		}
		where := ""
		if node != "" {
			where = " for node " + node
		}
		return templateRef{}, errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: context %q: %s is ambiguous%s: %s; clone by vmid, or give the VM a node", c.name, label, where, describeTemplates(picked)))
	}
	r, conf := cands[usable[0]], confs[usable[0]]
	return templateRef{
		Node:     r.Node,
		VMID:     r.VMID,
		Name:     r.Name,
		Shared:   len(localVolumes(v, conf, node)) == 0,
		Template: r.Template == 1,
	}, nil
}

// parallel runs f(0..n-1) with at most readConcurrency at once and returns
// the first error (by index).
func parallel(ctx context.Context, n int, f func(i int) error) error {
	if n == 0 {
		return nil
	}
	errs := make([]error, n)
	sem := make(chan struct{}, readConcurrency)
	var wg sync.WaitGroup
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[i] = ctx.Err()
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
