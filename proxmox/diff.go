package proxmox

import (
	"context"
	"fmt"
	"strings"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
)

// Diff says what applying desired to the live VM would do: nothing, an
// in-place update (naming changes that wait for a reboot and whether
// restartPolicy allows it), or a replacement (another template or node).
func (p *Provider) Diff(ctx context.Context, desired, live *manifest.Resource) (registry.Diff, error) {
	if desired.Kind != KindVirtualMachine {
		return registry.Diff{Action: registry.DiffNone}, nil
	}
	s, err := DecodeVMSpec(desired)
	if err != nil {
		return registry.Diff{}, err
	}
	c, err := p.conn(s.Context)
	if err != nil {
		return registry.Diff{}, desired.Locate(manifest.FieldErrorf("spec.context", "%v", err))
	}
	vmid, _, _ := manifest.Field(live.Status, "vmid")
	node, _, _ := manifest.Field(live.Status, "node")
	state, _, _ := manifest.Field(live.Status, "state")
	id, ok := vmid.(int64)
	nodeName, ok2 := node.(string)
	if !ok || !ok2 {
		return registry.Diff{}, errcode.New(errcode.Internal, "proxmox: live VM without status.vmid/node")
	}
	v := vmRef{c: c, node: nodeName, vmid: int(id)}
	conf, err := v.readConfig(ctx)
	if errcode.Is(err, errcode.NotFound) {
		// Destroyed since Get read it: gone, not an error.
		return registry.Diff{Action: registry.DiffUpdate, Reasons: []string{
			fmt.Sprintf("VM %d disappeared while openctl read it (destroyed meanwhile): apply will create it again", id)}}, nil
	}
	if err != nil {
		return registry.Diff{}, fmt.Errorf("proxmox: diff VirtualMachine %s: %w", desired.Metadata.Name, err)
	}
	running := state == StateRunning
	// A VM whose creation was interrupted is compared with what a new VM
	// must be: in its power state (started, unless startOnCreate says
	// otherwise) with its address known.
	created := isProvisioning(conf)
	pl, err := planChanges(s, desired.Metadata.Name, nodeName, conf, running, c.cfg.Defaults, marking{owner: registry.CallOf(ctx).Owner, provisioning: created})
	if err != nil {
		return registry.Diff{}, fmt.Errorf("proxmox: diff VirtualMachine %s: %w", desired.Metadata.Name, err)
	}
	d := registry.Diff{Action: registry.DiffNone, Fields: pl.fields}
	if len(pl.replace) > 0 {
		d.Action = registry.DiffReplace
		d.Reasons = append(d.Reasons, pl.replace...)
		if s.ReplacePolicy != ReplaceAllow {
			d.Reasons = append(d.Reasons, "apply will refuse: set spec.replacePolicy: allow to destroy and re-create the VM")
		}
		return d, nil
	}
	if !pl.empty() {
		d.Action = registry.DiffUpdate
	}
	if created {
		d.Action = registry.DiffUpdate
		d.Reasons = append(d.Reasons, fmt.Sprintf("the creation of VM %d was interrupted: apply will finish it", id))
	}
	if want := s.desiredState(created); want != "" && want != state {
		d.Action = registry.DiffUpdate
		d.Fields = append(d.Fields, manifest.FieldChange{Path: "spec.state", Old: state, New: want})
		verb := map[string]string{StateRunning: "starts", StateStopped: "stops"}[want]
		if verb == "" {
			verb = "changes"
		}
		d.Reasons = append(d.Reasons, fmt.Sprintf("the VM is %v and its spec says %v: apply %s it", state, want, verb))
	}
	restart := pl.restart
	if running && s.desiredState(false) != "stopped" {
		if pend, err := p.pending(ctx, v); err == nil {
			for _, k := range pend {
				restart = append(restart, "pending "+k)
			}
		}
	}
	if len(restart) > 0 && running && s.desiredState(false) != StateStopped {
		if s.RestartPolicy == RestartIfRequired {
			d.Action = registry.DiffUpdate
			d.Reasons = append(d.Reasons, "needs a reboot to take effect ("+strings.Join(restart, ", ")+"): restartPolicy ifRequired reboots the VM")
		} else if len(pl.restart) > 0 {
			d.Reasons = append(d.Reasons, "takes effect after a reboot ("+strings.Join(restart, ", ")+"); restartPolicy never leaves it pending")
		}
	}
	return d, nil
}
