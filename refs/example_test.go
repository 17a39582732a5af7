package refs_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
)

func ExampleResolve() {
	vm := manifest.ID{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: "cp-0"}
	live := map[manifest.ID]*manifest.Resource{
		vm: {
			APIVersion: vm.APIVersion,
			Kind:       vm.Kind,
			Metadata:   manifest.Metadata{Name: vm.Name},
			Spec:       map[string]any{"cores": int64(4)},
			Status:     map[string]any{"ip": "10.0.0.5"},
		},
	}
	// In the engine, the Getter is the provider registry.
	g := refs.GetterFunc(func(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
		r, ok := live[id]
		if !ok {
			return nil, fmt.Errorf("example: %s: %w", id.Short(), errcode.NotFound)
		}
		return r.DeepCopy(), nil
	})

	node := &manifest.Resource{
		APIVersion: "k3s.openctl.io/v1",
		Kind:       "K3sNode",
		Metadata:   manifest.Metadata{Name: "cp-0"},
		Spec: map[string]any{
			"role":  "server",
			"host":  refs.Marker(vm, "status.ip"),
			"cores": refs.Marker(vm, "spec.cores"),
		},
	}
	deps, _ := refs.Dependencies(node)
	fmt.Println("depends on:", deps[0])

	resolved, err := refs.Resolve(context.Background(), g, node)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(resolved.Spec) // encoding/json sorts map keys
	fmt.Println(string(out))
	// Output:
	// depends on: proxmox.openctl.io/v1/VirtualMachine/cp-0
	// {"cores":4,"host":"10.0.0.5","role":"server"}
}

func ExampleCollect() {
	web := &manifest.Resource{
		APIVersion: "proxmox.openctl.io/v1",
		Kind:       "VirtualMachine",
		Metadata:   manifest.Metadata{Name: "web-01"},
		Spec: map[string]any{
			"dns": []any{
				map[string]any{"$ref": map[string]any{"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "name": "dns-0", "field": "status.ip"}},
			},
			"db": map[string]any{"$ref": map[string]any{"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine"}},
		},
	}
	found, err := refs.Collect(web)
	for _, r := range found {
		fmt.Println(r)
	}
	fmt.Println(err)
	// Output:
	// spec.dns[0] -> proxmox.openctl.io/v1/VirtualMachine/dns-0 field status.ip
	// refs: VirtualMachine/web-01 spec.db: $ref missing name
}
