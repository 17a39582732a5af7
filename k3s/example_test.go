package k3s_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/secret"
)

// Example embeds the K3s provider with the Proxmox VE one and plans a
// cluster on Proxmox: the VMs, then the nodes, each waiting for the
// values — addresses, host keys, the first server's token — that only
// exist once what it refers to is applied. (Against the built-in
// simulator; Apply then needs VMs that answer SSH.)
func Example() {
	srv, err := proxmoxtest.New(proxmoxtest.SandboxLayout(3, proxmoxtest.DefaultSharedStorage)...)
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	id, sec := srv.Token()
	vms, err := proxmox.New(proxmox.Config{Contexts: map[string]proxmox.Context{"lab": {
		Endpoint: srv.URL(), TokenID: id, TokenSecret: secret.New(sec), Fingerprint: srv.Fingerprint(),
	}}})
	if err != nil {
		log.Fatal(err)
	}
	cache, err := os.MkdirTemp("", "k3s-binaries-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(cache)
	clusters, err := k3s.New(k3s.Config{BinaryDir: cache})
	if err != nil {
		log.Fatal(err)
	}
	defer clusters.Close()
	eng, err := openctl.New(openctl.WithProviders(vms, clusters))
	if err != nil {
		log.Fatal(err)
	}
	rs, err := manifest.DecodeBytes([]byte(`
apiVersion: k3s.openctl.io/v1
kind: Cluster
metadata: {name: dev}
spec:
  compute:
    provider: proxmox
    image: {template: ubuntu-24.04-cloud}
    nodes: [pve1, pve2, pve3]
  nodes:
    controlPlane: {count: 3}
    workers: [{name: worker, count: 1}]
  k3s: {version: v1.37.2+k3s1}
  ssh: {user: ubuntu, publicKeys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEcdtQmjFPGm30AYaUtvS9Yvn1XzkbYpM5xkh3r3Jtha me"]}
`), "cluster.yaml")
	if err != nil {
		log.Fatal(err)
	}
	plan, err := eng.Plan(context.Background(), rs...)
	if err != nil {
		log.Fatal(err)
	}
	for i, wave := range plan.Waves {
		fmt.Print("wave ", i+1, ":")
		for _, id := range wave {
			fmt.Print(" ", id.Kind, "/", id.Name)
		}
		fmt.Println()
	}
	// Output:
	// wave 1: VirtualMachine/dev-cp-0 VirtualMachine/dev-cp-1 VirtualMachine/dev-cp-2 VirtualMachine/dev-worker-0
	// wave 2: Node/dev-cp-0
	// wave 3: Node/dev-cp-1
	// wave 4: Node/dev-cp-2
	// wave 5: Node/dev-worker-0
	// wave 6: Cluster/dev
}
