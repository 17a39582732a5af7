package proxmox

import (
	"context"
	"fmt"
	"strconv"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
)

// Adopt hands the VM id.Name that the state store from owns to the
// caller's (registry.Call.Owner): its marker's owner is rewritten, the
// rest of the VM (and the user's part of its description) left as it is,
// and the VM is returned as Get reads it. Among several VMs of that name,
// from's is the one taken. A VM not created by openctl, or marked with
// an owner other than from, is ALREADY_EXISTS; one that is not there is
// NOT_FOUND. Adopting a VM the caller already owns changes nothing.
func (p *Provider) Adopt(ctx context.Context, id manifest.ID, from string) (*manifest.Resource, error) {
	owner := registry.CallOf(ctx).Owner
	if id.Kind != KindVirtualMachine {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: %s cannot be adopted: only VirtualMachines carry their owner", id.Short()))
	}
	if owner == "" || from == "" {
		return nil, errcode.New(errcode.Invalid, "proxmox: adopting a VM needs both owners (the state stores' identities)")
	}
	name := id.Name
	fail := func(err error) (*manifest.Resource, error) {
		return nil, fmt.Errorf("proxmox: adopt VirtualMachine %s: %w", name, err)
	}
	// Find from's VM of that name, as from's own calls would.
	asFrom := registry.CallOf(ctx)
	asFrom.Owner = from
	r, v, conf, err := p.settledVM(registry.WithCall(ctx, asFrom), name)
	switch {
	case errcode.Is(err, errcode.NotFound):
		return nil, err
	case err != nil:
		return fail(err)
	}
	_, m, managed := splitDescription(conf["description"])
	switch {
	case !managed:
		return fail(errcode.New(errcode.AlreadyExists, fmt.Sprintf("VM %d on %s was not created by openctl; it is nobody's to hand over", r.VMID, r.Node)))
	case m.owner == owner:
	case m.owner != from:
		return fail(checkOwner(name, strconv.Itoa(r.VMID), r.Node, m.owner, from))
	default:
		m.owner = owner
		if err := p.writeMarker(ctx, v, conf, m); err != nil {
			return fail(fmt.Errorf("rewriting its owner: %w", err))
		}
	}
	return p.getVM(ctx, name)
}
