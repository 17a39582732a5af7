package registry_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/registry/providertest"
)

func ExampleRegistry_Register() {
	var reg registry.Registry // the zero value is ready to use
	err := reg.Register(
		providertest.NewFake("proxmox", "VirtualMachine", "Node"),
		providertest.NewFake("k3s", "Cluster"),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("groups:", reg.Groups())

	// Resources are routed by the group of their apiVersion.
	vm := manifest.ID{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: "web-01"}
	p, kind, err := reg.Lookup(vm)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("lookup:", p.Name(), kind.Kind, kind.Plural)

	// A missing resource is a typed NotFound from the provider.
	_, err = reg.Get(context.Background(), vm)
	fmt.Println("not found:", errors.Is(err, errcode.NotFound))

	// A group no provider serves is an Invalid error listing those that are.
	_, _, err = reg.Lookup(manifest.ID{APIVersion: "aws.openctl.io/v1", Kind: "Instance", Name: "web-01"})
	fmt.Println(err)
	fmt.Println("invalid:", errors.Is(err, errcode.Invalid))

	// Registering a name twice fails and registers nothing.
	err = reg.Register(providertest.NewFake("aws", "Instance"), providertest.NewFake("k3s", "Cluster"))
	fmt.Println(err)
	fmt.Println("names:", reg.Names())
	// Output:
	// groups: [k3s.openctl.io proxmox.openctl.io]
	// lookup: proxmox VirtualMachine virtualmachines
	// not found: true
	// registry: no provider serves apiVersion group "aws.openctl.io" (registered: k3s.openctl.io, proxmox.openctl.io)
	// invalid: true
	// registry: provider "k3s" is already registered (INVALID_REQUEST)
	// names: [k3s proxmox]
}
