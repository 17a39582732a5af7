package manifest_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

const locateDoc = `apiVersion: proxmox.openctl.io/v1
kind: VirtualMachine
metadata: {name: db}
# the spec
spec:
  cpu:
    <<: {sockets: 1}
    cores: 4
  disks:
    - name: scsi0
      size: 10G
    - {name: scsi1, size: big}
`

func TestSourceField(t *testing.T) {
	rs, err := manifest.DecodeBytes([]byte(locateDoc), "vms.yaml")
	require.NoError(t, err)
	src := rs[0].Source
	for _, tc := range []struct {
		path      string
		line, col int
	}{
		{"spec", 5, 1},
		{"spec.cpu", 6, 3},
		{"spec.cpu.cores", 8, 5},
		{"spec.cpu.sockets", 7, 10},    // from the merge key's map
		{"spec.disks[0]", 10, 7},       // a list element: its node
		{"spec.disks[0].size", 11, 7},  // a key in it
		{"spec.disks[1].size", 12, 21}, // flow style
		{"spec.cpu.type", 6, 3},        // not written: its enclosing field
		{"spec.network.ip", 5, 1},      // nothing of it written: spec
		{"", 1, 0},                     // no field: the document
	} {
		line, col := src.Field(tc.path)
		assert.Equal(t, [2]int{tc.line, tc.col}, [2]int{line, col}, tc.path)
	}

	// Built in code: the document's line, no column.
	assert.Equal(t, [2]int{0, 0}, func() [2]int { l, c := manifest.Source{}.Field("spec.cpu"); return [2]int{l, c} }())
}

func TestLocate(t *testing.T) {
	rs, err := manifest.DecodeBytes([]byte("apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata: {name: db}\nspec:\n  cpu: {cores: 0}\n  memory: 3\n"), "vms.yaml")
	require.NoError(t, err)
	r := rs[0]
	err = r.Locate(errors.Join(
		manifest.FieldErrorf("spec.cpu.cores", "must be in 1..1024, got %d", 0),
		manifest.FieldErrorf("spec.memory", "too small"),
		&errcode.InputError{Input: "manifest", File: "other.yaml", Line: 2, Msg: "placed already"},
	))
	require.ErrorIs(t, err, errcode.Invalid)
	es := manifest.Errors(err)
	require.Len(t, es, 3)
	assert.Equal(t, "vms.yaml:5:9: spec.cpu.cores: must be in 1..1024, got 0", es[0].Error())
	assert.Equal(t, "vms.yaml:6:3: spec.memory: too small", es[1].Error())
	assert.Equal(t, "other.yaml:2: placed already", es[2].Error(), "an error placed already is left alone")

	// A resource built in code is named instead of a file.
	built := &manifest.Resource{Kind: "VirtualMachine", Metadata: manifest.Metadata{Name: "db"}}
	err = built.Locate(manifest.FieldErrorf("spec.cpu.cores", "must be in 1..1024"))
	assert.EqualError(t, err, "VirtualMachine db: spec.cpu.cores: must be in 1..1024")

	// A copy keeps the positions.
	assert.Equal(t, "vms.yaml:5:9: spec.cpu.cores: x", r.DeepCopy().Locate(manifest.FieldErrorf("spec.cpu.cores", "x")).Error())
}

// A JSON input and a List: each resource finds its own fields, whatever
// was decoded around it.
func TestSourceFieldJSONAndList(t *testing.T) {
	rs, err := manifest.DecodeBytes([]byte("\n  [{\"apiVersion\": \"proxmox.openctl.io/v1\", \"kind\": \"VirtualMachine\", \"metadata\": {\"name\": \"a\"}},\n"+
		"   {\"apiVersion\": \"proxmox.openctl.io/v1\", \"kind\": \"VirtualMachine\", \"metadata\": {\"name\": \"b\"},\n    \"spec\": {\"cpu\": {\"cores\": 0}}}]\n"), "vms.json")
	require.NoError(t, err)
	require.Len(t, rs, 2)
	line, col := rs[1].Source.Field("spec.cpu.cores")
	assert.Equal(t, [2]int{4, 22}, [2]int{line, col})

	rs, err = manifest.DecodeBytes([]byte("apiVersion: v1\nkind: List\nitems:\n- apiVersion: proxmox.openctl.io/v1\n  kind: VirtualMachine\n  metadata: {name: a}\n  spec: {memory: 1}\n- apiVersion: proxmox.openctl.io/v1\n  kind: VirtualMachine\n  metadata: {name: b}\n  spec:\n    memory: 2\n"), "list.yaml")
	require.NoError(t, err)
	require.Len(t, rs, 2)
	line, col = rs[0].Source.Field("spec.memory")
	assert.Equal(t, [2]int{7, 10}, [2]int{line, col})
	line, col = rs[1].Source.Field("spec.memory")
	assert.Equal(t, [2]int{12, 5}, [2]int{line, col})
}
