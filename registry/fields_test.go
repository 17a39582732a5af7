package registry_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openctl/openctl/registry"
)

func TestKindHasField(t *testing.T) {
	k := registry.Kind{Kind: "VirtualMachine", Fields: []string{"spec.tags", "status.ip", "status.disks"}}
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"status.ip", true},
		{"status", true},            // leads to a declared field
		{"spec.tags[0]", true},      // under a declared field
		{"status.disks.root", true}, // under a declared field
		{"metadata.name", true},
		{"apiVersion", true},
		{"", true},
		{"status.ipaddr", false}, // a prefix of the text, not of the path
		{"status.address", false},
		{"spec.cores", false},
		{"metadatax", false},
	} {
		t.Run(tc.path, func(t *testing.T) { assert.Equal(t, tc.want, k.HasField(tc.path)) })
	}
	assert.True(t, registry.Kind{Kind: "Thing"}.HasField("status.anything"), "a kind that declares no fields is not checked")
}
