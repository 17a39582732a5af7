// Command openctl-vmset is an example composite exec plugin: a VMSet
// (apiVersion vmset.openctl.io/v1) is a number of identical Proxmox VE
// virtual machines, which it does not create itself but asks openctl to
// create through the Proxmox provider — the protocol's dispatch:
//
//	apiVersion: vmset.openctl.io/v1
//	kind: VMSet
//	metadata:
//	  name: web
//	spec:
//	  count: 2
//	  vm:                  # the spec of every member, web-1 and web-2
//	    template: {name: ubuntu-24.04-cloud}
//	    memory: {size: 1024}
//
// Applying a VMSet answers the first request with one dispatch request
// per member (a proxmox.openctl.io/v1 VirtualMachine, waiting for
// status.state to be "running") and one delete per member a smaller
// count no longer has, and a continuation token; the second request
// carries the results, and the answer saves the VMSet's state with its
// members as children. openctl records every member as the VMSet's child
// as soon as it exists, so deleting the VMSet deletes its VMs first.
//
// The plugin keeps what it saved as JSON files in the directory its
// configuration names (providers.vmset.dir), to answer get and list.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"

	"github.com/openctl/openctl/examples/plugins/internal/jsonfile"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/plugin"
)

const (
	apiVersion   = "vmset.openctl.io/v1"
	vmAPIVersion = "proxmox.openctl.io/v1"
	// tokenMembers is the continuation token of the round that carries
	// the members' dispatch results.
	tokenMembers = "members-dispatched"
	// maxCount bounds spec.count.
	maxCount = 64
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--capabilities" {
		write(plugin.Capabilities{
			ProviderName:     "vmset",
			ProtocolVersion:  plugin.ProtocolVersion,
			SupportsDispatch: true,
			Resources: []plugin.ResourceCapability{{
				Kind:    "VMSet",
				Plural:  "vmsets",
				Actions: []string{plugin.ActionGet, plugin.ActionList, plugin.ActionApply, plugin.ActionDelete},
			}},
		})
		return
	}
	write(handle(os.Stdin))
}

func write(v any) {
	if err := json.NewEncoder(os.Stdout).Encode(v); err != nil {
		fmt.Fprintln(os.Stderr, "openctl-vmset:", err)
		os.Exit(1)
	}
}

func fail(code, format string, args ...any) *plugin.Response {
	return &plugin.Response{Status: "error", Error: &plugin.ErrorBody{Code: code, Message: fmt.Sprintf(format, args...)}}
}

var nameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func handle(in io.Reader) *plugin.Response {
	var req plugin.Request
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		return fail("INVALID_REQUEST", "decoding the request: %v", err)
	}
	dir, _ := req.Config["dir"].(string)
	if dir == "" {
		return fail("INVALID_REQUEST", "providers.vmset.dir is not set: name the directory to keep VM sets in")
	}
	if req.ResourceType != "VMSet" {
		return fail("INVALID_REQUEST", "unknown kind %q", req.ResourceType)
	}
	name := req.ResourceName
	if req.Manifest != nil {
		name = req.Manifest.Metadata.Name
	}
	if req.Action != plugin.ActionList && !nameRe.MatchString(name) {
		return fail("INVALID_REQUEST", "bad name %q", name)
	}
	path := jsonfile.Path(dir, name)
	switch req.Action {
	case plugin.ActionGet:
		r, err := jsonfile.Read(path)
		if errors.Is(err, fs.ErrNotExist) {
			return fail("NOT_FOUND", "VM set %s not found", name)
		}
		if err != nil {
			return fail("INTERNAL", "%v", err)
		}
		return &plugin.Response{Status: "success", Resource: r}
	case plugin.ActionList:
		out, err := jsonfile.List(dir)
		if err != nil {
			return fail("INTERNAL", "%v", err)
		}
		return &plugin.Response{Status: "success", Resources: out}
	case plugin.ActionApply:
		return apply(&req, dir, path)
	case plugin.ActionDelete:
		// openctl deletes the members first: they are recorded as this
		// set's children.
		if err := os.Remove(path); errors.Is(err, fs.ErrNotExist) {
			return fail("NOT_FOUND", "VM set %s not found", name)
		} else if err != nil {
			return fail("INTERNAL", "%v", err)
		}
		return &plugin.Response{Status: "success", Message: "VM set " + name + " deleted",
			StateUpdate: &plugin.StateUpdate{Operation: plugin.StateDelete, Provider: "vmset", Name: name}}
	}
	return fail("INVALID_REQUEST", "unknown action %q", req.Action)
}

// apply runs the two rounds of an apply.
func apply(req *plugin.Request, dir, path string) *plugin.Response {
	m := req.Manifest
	if m == nil {
		return fail("INVALID_REQUEST", "apply without a manifest")
	}
	count, ok := m.Spec["count"].(float64)
	if !ok || count < 0 || count > maxCount || count != float64(int(count)) {
		return fail("INVALID_REQUEST", "VMSet %s: spec.count must be a whole number from 0 to %d", m.Metadata.Name, maxCount)
	}
	vm, ok := m.Spec["vm"].(map[string]any)
	if !ok {
		return fail("INVALID_REQUEST", "VMSet %s: spec.vm (the members' VirtualMachine spec) is required", m.Metadata.Name)
	}
	n := int(count)
	if req.ContinuationToken != tokenMembers {
		// Round 1: ask for the members, and for the deletion of those a
		// smaller count drops.
		var reqs []plugin.DispatchRequest
		for i := 1; i <= n; i++ {
			member := memberName(m.Metadata.Name, i)
			reqs = append(reqs, plugin.DispatchRequest{
				ID: member, Provider: "proxmox", Action: plugin.ActionApply, ResourceType: "VirtualMachine",
				Manifest: &manifest.Resource{APIVersion: vmAPIVersion, Kind: "VirtualMachine", Metadata: manifest.Metadata{Name: member}, Spec: vm},
				WaitFor:  &plugin.WaitFor{Field: "status.state", Value: "running", Timeout: "10m"},
			})
		}
		if prev, err := jsonfile.Read(path); err == nil {
			was, _ := prev.Spec["count"].(float64)
			for i := n + 1; i <= int(was); i++ {
				member := memberName(m.Metadata.Name, i)
				reqs = append(reqs, plugin.DispatchRequest{
					ID: member, Provider: "proxmox", Action: plugin.ActionDelete, ResourceType: "VirtualMachine",
					Manifest: &manifest.Resource{APIVersion: vmAPIVersion, Kind: "VirtualMachine", Metadata: manifest.Metadata{Name: member}},
				})
			}
		}
		if len(reqs) > 0 {
			return &plugin.Response{Status: "success", Message: fmt.Sprintf("VM set %s: %d members", m.Metadata.Name, n),
				DispatchRequests: reqs, Continuation: &plugin.Continuation{Token: tokenMembers}}
		}
	}
	// Round 2 (or nothing to dispatch): every member must have made it.
	var failed []string
	var members []any
	var children []plugin.ChildRef
	for _, res := range req.DispatchResults {
		if res.Status != "success" {
			msg := res.Status
			if res.Error != nil {
				msg = res.Error.Code + ": " + res.Error.Message
			}
			failed = append(failed, res.ID+" ("+msg+")")
			continue
		}
		if res.Resource == nil {
			continue // deleted
		}
		members = append(members, map[string]any{
			"name": res.Resource.Metadata.Name, "vmid": res.Resource.Status["vmid"],
			"node": res.Resource.Status["node"], "ip": res.Resource.Status["ip"],
		})
		children = append(children, plugin.ChildRef{Provider: "proxmox", Kind: "VirtualMachine", Name: res.Resource.Metadata.Name})
	}
	if len(failed) > 0 {
		return fail("INTERNAL", "VM set %s: %d of its VMs failed: %s", m.Metadata.Name, len(failed), strings.Join(failed, "; "))
	}
	status := map[string]any{"phase": "Ready", "ready": len(members), "members": members}
	r := &manifest.Resource{APIVersion: apiVersion, Kind: "VMSet", Metadata: m.Metadata, Spec: m.Spec, Status: status}
	if err := jsonfile.Save(dir, path, r); err != nil {
		return fail("INTERNAL", "%v", err)
	}
	return &plugin.Response{
		Status: "success", Resource: r, Message: fmt.Sprintf("VM set %s: %d VMs running", m.Metadata.Name, len(members)),
		StateUpdate: &plugin.StateUpdate{Operation: plugin.StateSave, Provider: "vmset", Name: m.Metadata.Name,
			State: &plugin.State{Status: status, Children: children}},
	}
}

func memberName(set string, i int) string { return fmt.Sprintf("%s-%d", set, i) }
