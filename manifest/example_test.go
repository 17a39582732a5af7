package manifest_test

import (
	"fmt"

	"github.com/openctl/openctl/manifest"
)

func ExampleDecodeBytes() {
	data := []byte(`
apiVersion: proxmox.openctl.io/v1
kind: VirtualMachine
metadata:
  name: web-01
spec:
  cores: 2
---
apiVersion: k3s.openctl.io/v1
kind: Cluster
metadata:
  name: prod
spec:
  nodes: [web-01]
`)
	rs, err := manifest.DecodeBytes(data, "cluster.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rs {
		fmt.Println(r.ID(), "at", r.Source)
	}

	_, err = manifest.DecodeBytes([]byte("apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata:\n  name: Web_01\n"), "bad.yaml")
	fmt.Println(err)
	// Output:
	// proxmox.openctl.io/v1/VirtualMachine/web-01 at cluster.yaml:2
	// k3s.openctl.io/v1/Cluster/prod at cluster.yaml:9
	// bad.yaml:4:9: metadata.name: name "Web_01" is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', each part starting and ending with a letter or digit)
}

func ExampleField() {
	spec := map[string]any{
		"cores": int64(2),
		"disks": []any{
			map[string]any{"size": "32G"},
		},
	}
	size, found, err := manifest.Field(spec, "disks[0].size")
	fmt.Println(size, found, err)

	// Missing is not an error.
	_, found, err = manifest.Field(spec, "disks[3].size")
	fmt.Println(found, err)

	// Running into a value of the wrong type is.
	_, _, err = manifest.Field(spec, "cores.count")
	fmt.Println(err)
	// Output:
	// 32G true <nil>
	// false <nil>
	// manifest: field cores.count: cores is an integer, not a map (INVALID_REQUEST)
}
