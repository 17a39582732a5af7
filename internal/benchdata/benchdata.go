// Package benchdata makes the large manifests the memory and speed
// benchmarks of package manifest and of the CLI decode: the same inputs
// in both, so their figures compare.
package benchdata

import (
	"fmt"
	"strings"
)

// Tags returns one VirtualMachine whose spec.tags is a flow list of n
// one-letter tags (999,000 of them make about 2 MB).
func Tags(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata: {name: web-01}\nspec:\n  node: pve1\n  tags: [")
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('t')
	}
	b.WriteString("]\n")
	return []byte(b.String())
}

// Resources returns a stream of n realistic VirtualMachine documents
// (about 400 bytes each: 5,000 make about 2 MB).
func Resources(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `---
apiVersion: proxmox.openctl.io/v1
kind: VirtualMachine
metadata:
  name: vm-%05d
  labels: {app: web, tier: frontend}
spec:
  node: pve%d
  template: {name: ubuntu-24.04-cloud}
  cpu: {cores: 2, sockets: 1}
  memory: {size: 4096}
  disks:
    - {size: 32G, storage: local-lvm}
  networks:
    - {bridge: vmbr0, model: virtio}
  cloudInit:
    user: ubuntu
    sshKeys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx bench@example"]
    ipConfig: {net0: {ip: dhcp}}
  tags: [web, bench]
`, i, i%3+1)
	}
	return []byte(b.String())
}

// Dense returns one VirtualMachine just under the 1 MiB document limit and
// within every other limit, as dense as YAML gets: lists lists of n
// one-letter items in flow style. It is the worst case the decoder
// accepts.
func Dense(lists, n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata: {name: web-01}\nspec:\n")
	for l := range lists {
		fmt.Fprintf(&b, "  l%d: [", l)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('t')
		}
		b.WriteString("]\n")
	}
	return []byte(b.String())
}
