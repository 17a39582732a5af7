package manifest_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/manifest"
)

// A kubectl-style List is read as its items, each with its own line and
// index, in YAML and JSON, among other documents.
func TestDecodeList(t *testing.T) {
	in := `apiVersion: v1
kind: List
metadata:
  resourceVersion: ""
items:
- apiVersion: proxmox.openctl.io/v1
  kind: VirtualMachine
  metadata:
    name: a
- apiVersion: proxmox.openctl.io/v1
  kind: VirtualMachine
  metadata:
    name: b
  spec:
    cores: 2
---
` + vmYAML("c")
	rs := decode(t, in)
	require.Len(t, rs, 3)
	assert.Equal(t, []string{"a", "b", "c"}, []string{rs[0].Metadata.Name, rs[1].Metadata.Name, rs[2].Metadata.Name})
	assert.Equal(t, []int{6, 10, 17}, []int{rs[0].Source.Line, rs[1].Source.Line, rs[2].Source.Line})
	assert.Equal(t, []int{0, 1, 2}, []int{rs[0].Source.Index, rs[1].Source.Index, rs[2].Source.Index})
	assert.Equal(t, int64(2), rs[1].Spec["cores"])

	js := `{"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "metadata": {"name": "a"}},
  {"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "metadata": {"name": "b"}}]}`
	rs, err := manifest.DecodeBytes([]byte(js), "list.json")
	require.NoError(t, err)
	require.Len(t, rs, 2)
	assert.Equal(t, 2, rs[0].Source.Line)
	assert.Equal(t, 3, rs[1].Source.Line)

	for _, empty := range []string{"apiVersion: v1\nkind: List\nitems: []\n", "apiVersion: v1\nkind: List\n", `{"apiVersion":"v1","kind":"List","items":null}`} {
		rs, err := manifest.DecodeBytes([]byte(empty), "empty")
		require.NoError(t, err, empty)
		assert.Empty(t, rs, empty)
	}
}

// A List's own problems and its items' are reported at their lines, and
// no resource comes back.
func TestDecodeListErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"apiVersion: v1\nkind: List\nitems: 3\n", "bad.yaml:3:8: items: want a list of resources, got an integer"},
		{"apiVersion: v1\nkind: List\nresourceVersion: x\nitems: []\n", `bad.yaml:3:1: resourceVersion: unknown field "resourceVersion" in a List (want apiVersion, kind, metadata or items)`},
		{"apiVersion: v1\nkind: List\nitems:\n- apiVersion: proxmox.openctl.io/v1\n  kind: VirtualMachine\n  metadata:\n    name: ok\n- apiVersion: proxmox.openctl.io/v1\n  kind: VirtualMachine\n  metadata:\n    name: Bad_Name\n",
			"bad.yaml:11:11: metadata.name: "},
	} {
		rs, err := manifest.DecodeBytes([]byte(tc.in), "bad.yaml")
		require.Error(t, err, tc.in)
		assert.Nil(t, rs)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// EncodeYAMLList and EncodeJSONList write what kubectl writes for a list
// query, and read back to the same resources — block scalars and deep
// values included.
func TestEncodeListRoundTrip(t *testing.T) {
	rs := sampleResources()
	var buf bytes.Buffer
	require.NoError(t, manifest.EncodeYAMLList(&buf, rs...))
	assert.Regexp(t, "^apiVersion: v1\nkind: List\nitems:\n- apiVersion: proxmox.openctl.io/v1\n  kind: VirtualMachine\n  metadata:\n    name: web-01\n", buf.String())
	got, err := manifest.DecodeBytes(buf.Bytes(), "list.yaml")
	require.NoError(t, err, buf.String())
	sameResources(t, rs, got)
	assert.Equal(t, rs[0].Spec["binary"], got[0].Spec["binary"])

	delete(rs[0].Spec, "binary") // not UTF-8: JSON cannot carry it
	buf.Reset()
	require.NoError(t, manifest.EncodeJSONList(&buf, rs...))
	assert.Regexp(t, "^\\{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\",\n  \"items\": \\[\n    \\{\n      \"apiVersion\": \"proxmox.openctl.io/v1\",", buf.String())
	got, err = manifest.DecodeBytes(buf.Bytes(), "list.json")
	require.NoError(t, err, buf.String())
	sameResources(t, rs, got)

	for name, encode := range map[string]func(*bytes.Buffer) error{
		"yaml": func(b *bytes.Buffer) error { return manifest.EncodeYAMLList(b) },
		"json": func(b *bytes.Buffer) error { return manifest.EncodeJSONList(b) },
	} {
		buf.Reset()
		require.NoError(t, encode(&buf))
		got, err := manifest.DecodeBytes(buf.Bytes(), "empty."+name)
		require.NoError(t, err)
		assert.Empty(t, got)
		assert.Contains(t, buf.String(), "[]", "an empty List has an empty items list")
	}
}

func TestEncodeYAMLListBlockScalars(t *testing.T) {
	spec := map[string]any{"lits": []any{"a\nb", "a\nb\n", "a\nb\n\n", "\nlead", " space\nx", "tab\tin\nx", "cr\r\nx", "x\n  \n y", "  two\n\n  lead\n"}}
	rs := []*manifest.Resource{
		{APIVersion: "a.openctl.io/v1", Kind: "K", Metadata: manifest.Metadata{Name: "n", Annotations: map[string]string{"note": "multi\n\n line\n"}}, Spec: spec},
		{APIVersion: "a.openctl.io/v1", Kind: "K", Metadata: manifest.Metadata{Name: "m"}, Spec: spec},
	}
	var buf bytes.Buffer
	require.NoError(t, manifest.EncodeYAMLList(&buf, rs...))
	got, err := manifest.DecodeBytes(buf.Bytes(), "list.yaml")
	require.NoError(t, err, buf.String())
	sameResources(t, rs, got)
}
