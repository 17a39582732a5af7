package proxmox

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/registry"
)

// Actions lists the power actions on VirtualMachines: start, stop,
// shutdown and reboot. A CLI turns them into subcommands
// ("openctl proxmox start vm web-01").
func (p *Provider) Actions() []registry.ActionSpec {
	return []registry.ActionSpec{
		{Name: "start", Kind: KindVirtualMachine, Short: "Start a VM and wait until the start task finished"},
		{Name: "stop", Kind: KindVirtualMachine, Short: "Stop a VM at once (like pulling the plug)"},
		{Name: "shutdown", Kind: KindVirtualMachine, Short: "Shut a VM down through ACPI or the guest agent, stopping it if it does not power off in time",
			Args: []registry.ArgSpec{{Name: "timeout", Type: registry.ArgDuration, Default: "3m", Help: "how long to wait for a graceful shutdown before stopping the VM"}}},
		{Name: "reboot", Kind: KindVirtualMachine, Short: "Reboot a VM (applies pending configuration changes)"},
	}
}

// Do runs a power action on a VM openctl manages and returns the VM
// afterwards.
func (p *Provider) Do(ctx context.Context, req registry.ActionRequest) (*registry.ActionResult, error) {
	if err := checkAPIVersion(req.ID); err != nil {
		return nil, err
	}
	_, spec, err := registry.FindAction(p, req.ID.Kind, req.Action)
	if err != nil {
		return nil, err
	}
	args, err := spec.CheckArgs(req.Args)
	if err != nil {
		return nil, err
	}
	name := req.ID.Name
	fail := func(err error) (*registry.ActionResult, error) {
		return nil, fmt.Errorf("proxmox: %s VirtualMachine %s: %w", req.Action, name, classify(err))
	}
	r, v, conf, err := p.settledVM(ctx, name)
	switch {
	case errcode.Is(err, errcode.NotFound):
		return nil, err
	case err != nil:
		return fail(err)
	}
	if !isManaged(conf) {
		return fail(errcode.New(errcode.Invalid, fmt.Sprintf("VM %d on %s was not created by openctl; use the Proxmox UI or API for it", r.VMID, r.Node)))
	}
	if err := checkOwner(name, strconv.Itoa(r.VMID), r.Node, ownerOf(conf), registry.CallOf(ctx).Owner); err != nil {
		return fail(err)
	}
	t := p.cfg.Timeouts
	msg := ""
	switch req.Action {
	case "start":
		if r.Status == StateRunning {
			msg = name + " is already running"
			break
		}
		err, msg = p.power(ctx, v, "start", t.Start), name+" started"
	case "stop":
		if r.Status != StateRunning {
			msg = name + " is already stopped"
			break
		}
		err, msg = p.power(ctx, v, "stop", t.Stop), name+" stopped"
	case "shutdown":
		if r.Status != StateRunning {
			msg = name + " is already stopped"
			break
		}
		if d, ok := args["timeout"].(time.Duration); ok && d > 0 {
			t.Shutdown = d
		}
		err, msg = p.shutdown(ctx, v, t.Shutdown), name+" shut down"
	case "reboot":
		if r.Status != StateRunning {
			return fail(errcode.New(errcode.Invalid, "the VM is not running"))
		}
		err, msg = p.power(ctx, v, "reboot", t.Reboot), name+" rebooted"
	}
	if err != nil {
		return fail(err)
	}
	res, err := p.getVM(ctx, name)
	if err != nil {
		return fail(err)
	}
	return &registry.ActionResult{Message: msg, Resource: res}, nil
}
