package manifest_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/openctl/openctl/manifest"
)

// largeTags is the manifest of issue 12: one VirtualMachine whose
// spec.tags is a flow list of n one-letter tags (999,000 of them make
// about 2 MB).
func largeTags(n int) []byte {
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

// manyResources is a stream of n realistic VirtualMachine documents
// (about 400 bytes each: 5,000 make about 2 MB).
func manyResources(n int) []byte {
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

// BenchmarkDecodeLarge decodes large manifests and reports, besides the
// time and allocations, the bytes allocated per input byte
// ("alloc-B/input-B") and the heap the decoded resources keep alive, per
// input byte ("live-B/input-B"), measured after a garbage collection.
// The peak resident size of a whole "openctl validate" on the same
// inputs is measured by BenchmarkValidateMemory in cmd/openctl.
//
//	go test -run '^$' -bench DecodeLarge -benchmem ./manifest
func BenchmarkDecodeLarge(b *testing.B) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"tags-2MB", largeTags(999_000)},
		{"resources-5000", manyResources(5000)},
		{"dense-1MB", denseLists(50, 10_000)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.data)))
			var before, after runtime.MemStats
			var live uint64
			runtime.GC()
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for range b.N {
				rs, _ := manifest.DecodeBytes(tc.data, "big.yaml")
				if live == 0 {
					b.StopTimer()
					var m runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&m)
					live = m.HeapAlloc - min(m.HeapAlloc, before.HeapAlloc)
					runtime.KeepAlive(rs)
					b.StartTimer()
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			in := float64(len(tc.data))
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/in, "alloc-B/input-B")
			b.ReportMetric(float64(live)/in, "live-B/input-B")
			b.ReportMetric(in/(1<<20), "input-MiB")
		})
	}
}

// denseLists is one VirtualMachine just under the 1 MiB document limit and
// within every other limit, as dense as YAML gets: lists lists of n
// one-letter items in flow style. It is the worst case the decoder
// accepts.
func denseLists(lists, n int) []byte {
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
