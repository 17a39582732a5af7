package proxmox_test

import (
	"context"
	"fmt"
	"log"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/secret"
)

// Example applies a VirtualMachine manifest through an engine, against the
// built-in simulator (a real Proxmox endpoint works the same way).
func Example() {
	srv, err := proxmoxtest.New(proxmoxtest.WithSpeed(50))
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	id, sec := srv.Token()

	p, err := proxmox.New(proxmox.Config{Contexts: map[string]proxmox.Context{"lab": {
		Endpoint:    srv.URL(),
		TokenID:     id,
		TokenSecret: secret.New(sec),
		Fingerprint: srv.Fingerprint(), // pin the self-signed certificate
	}}})
	if err != nil {
		log.Fatal(err)
	}
	eng, err := openctl.New(openctl.WithProviders(p))
	if err != nil {
		log.Fatal(err)
	}
	rs, err := manifest.DecodeBytes([]byte(`
apiVersion: proxmox.openctl.io/v1
kind: VirtualMachine
metadata: {name: web-01}
spec:
  node: pve1
  template: {name: ubuntu-24.04-cloud}
  cpu: {cores: 2}
  memory: {size: 2048}
  cloudInit: {user: ubuntu, ipConfig: {net0: {ip: dhcp}}}
`), "vms.yaml")
	if err != nil {
		log.Fatal(err)
	}
	rep, err := eng.Apply(context.Background(), rs...)
	if err != nil {
		log.Fatal(err)
	}
	vm := rep.Results[0].Resource
	fmt.Println(rep.Results[0].Outcome, vm.Metadata.Name, vm.Status["node"], vm.Status["vmid"], vm.Status["state"])
	// Output: created web-01 pve1 100 running
}
