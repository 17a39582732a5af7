package manifest_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/manifest"
)

func sampleResources() []*manifest.Resource {
	return []*manifest.Resource{
		{
			APIVersion: "proxmox.openctl.io/v1",
			Kind:       "VirtualMachine",
			Metadata: manifest.Metadata{
				Name:        "web-01",
				Namespace:   "prod",
				Labels:      map[string]string{"tier": "web", "openctl.io/owner-kind": "Cluster"},
				Annotations: map[string]string{"note": "multi\nline", "empty": ""},
			},
			Spec: map[string]any{
				"cores":   int64(2),
				"ratio":   1.5,
				"whole":   2.0,
				"big":     1e300,
				"bigint":  2.000000080000001e16, // integral above 2^53: JSON must keep it a float
				"on":      true,
				"nothing": nil,
				"strs":    []any{"123", "true", "null", "~", "", "yes", "<<", "2001-12-14", "- x", "a: b", "#c", "*a", "&a", "!t", "'q'", "\"dq\"", " lead", "trail ", "tab\there", "\x00nul", "é😀", "\u0085nel", "\ufeffbom"},
				"keys":    map[string]any{"80": "http", "true": 1.0, "<<": "merge", "": "empty", "a.b": "dot", "- x": int64(1)},
				"nested":  map[string]any{"list": []any{map[string]any{}, []any{}}, "deep": map[string]any{"x": map[string]any{"y": int64(-1)}}},
				"binary":  "\xff\xfe",
			},
			Status: map[string]any{"ip": "10.0.0.5"},
		},
		{
			APIVersion: "k3s.openctl.io/v1beta1",
			Kind:       "Cluster",
			Metadata:   manifest.Metadata{Name: "prod", Labels: map[string]string{}},
			Spec:       map[string]any{},
		},
	}
}

// sameResources asserts that got and want are equal resources: IDs,
// metadata and spec/status by Hash.
func sameResources(t *testing.T, want, got []*manifest.Resource) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		assert.Equal(t, w.ID(), g.ID())
		assert.Equal(t, w.Metadata, g.Metadata)
		assert.Equal(t, manifest.Hash(w.Spec), manifest.Hash(g.Spec), "spec of %s", w.ID())
		assert.Equal(t, manifest.Hash(w.Status), manifest.Hash(g.Status), "status of %s", w.ID())
		assert.Equal(t, w.Spec == nil, g.Spec == nil)
		assert.Equal(t, w.Status == nil, g.Status == nil)
	}
}

func TestEncodeYAMLRoundTrip(t *testing.T) {
	rs := sampleResources()
	var buf bytes.Buffer
	require.NoError(t, manifest.EncodeYAML(&buf, rs...))
	got, err := manifest.DecodeBytes(buf.Bytes(), "out.yaml")
	require.NoError(t, err, buf.String())
	sameResources(t, rs, got)
	assert.Equal(t, rs[0].Spec["binary"], got[0].Spec["binary"])

	// Encoding is deterministic.
	var again bytes.Buffer
	require.NoError(t, manifest.EncodeYAML(&again, got...))
	assert.Equal(t, buf.String(), again.String())
}

func TestEncodeJSONRoundTrip(t *testing.T) {
	rs := sampleResources()
	delete(rs[0].Spec, "binary") // not UTF-8: JSON cannot carry it
	var buf bytes.Buffer
	require.NoError(t, manifest.EncodeJSON(&buf, rs...))
	assert.Equal(t, byte('['), buf.Bytes()[0])
	got, err := manifest.DecodeBytes(buf.Bytes(), "out.json")
	require.NoError(t, err, buf.String())
	sameResources(t, rs, got)
}

func TestEncodeYAMLLayout(t *testing.T) {
	r := &manifest.Resource{
		APIVersion: "proxmox.openctl.io/v1",
		Kind:       "VirtualMachine",
		Metadata:   manifest.Metadata{Name: "web-01", Labels: map[string]string{"b": "2", "a": "1"}},
		Spec:       map[string]any{"memory": int64(4096), "cores": 2, "disks": []any{map[string]any{"size": "32G"}}},
		Status:     map[string]any{"ip": "10.0.0.5"},
		Source:     manifest.Source{File: "not-written.yaml", Line: 3},
	}
	var buf bytes.Buffer
	require.NoError(t, manifest.EncodeYAML(&buf, r, r))
	doc := `apiVersion: proxmox.openctl.io/v1
kind: VirtualMachine
metadata:
  name: web-01
  labels:
    a: "1"
    b: "2"
spec:
  cores: 2
  disks:
    - size: 32G
  memory: 4096
status:
  ip: 10.0.0.5
`
	assert.Equal(t, doc+"---\n"+doc, buf.String())

	buf.Reset()
	require.NoError(t, manifest.EncodeYAML(&buf))
	assert.Empty(t, buf.String())
}

func TestEncodeJSONLayout(t *testing.T) {
	r := &manifest.Resource{
		APIVersion: "proxmox.openctl.io/v1",
		Kind:       "VirtualMachine",
		Metadata:   manifest.Metadata{Name: "web-01"},
		Spec:       map[string]any{"cores": int64(2), "html": "<b>"},
	}
	var buf bytes.Buffer
	require.NoError(t, manifest.EncodeJSON(&buf, r))
	assert.Equal(t, `{
  "apiVersion": "proxmox.openctl.io/v1",
  "kind": "VirtualMachine",
  "metadata": {
    "name": "web-01"
  },
  "spec": {
    "cores": 2,
    "html": "<b>"
  }
}
`, buf.String())

	buf.Reset()
	require.NoError(t, manifest.EncodeJSON(&buf))
	assert.Equal(t, "[]\n", buf.String())
}

func TestEncodeRejectsBadValues(t *testing.T) {
	tests := []struct {
		name string
		r    *manifest.Resource
	}{
		{"nil", nil},
		{"NaN", &manifest.Resource{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Metadata: manifest.Metadata{Name: "a"}, Spec: map[string]any{"x": math.NaN()}}},
		{"channel", &manifest.Resource{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Metadata: manifest.Metadata{Name: "a"}, Status: map[string]any{"x": make(chan int)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			assert.Error(t, manifest.EncodeYAML(&buf, tt.r))
			assert.Error(t, manifest.EncodeJSON(&buf, tt.r))
		})
	}
}

func TestEncodeYAMLEdgeCases(t *testing.T) {
	deep := any("bottom")
	for i := 0; i < 100; i++ {
		if i%2 == 0 {
			deep = map[string]any{"k": deep, "s": "a:b", "q": "x:?y", "c": "p,q"}
		} else {
			deep = []any{deep, "multi\nline", map[string]any{}}
		}
	}
	long := strings.Repeat("k", 2000)
	spec := map[string]any{
		"deep":    deep,
		long:      map[string]any{long: []any{long}},
		"inlist":  []any{map[string]any{long: int64(1)}},
		"bin\xff": "key not UTF-8",
		"lits": []any{
			"a\nb", "a\nb\n", "a\nb\n\n", "\nlead", " space\nx", "tab\tin\nx", "cr\r\nx", "x\n  \n y",
		},
		"floats": []any{0.0, -0.0, 1e21, 1e-7, 5e-324, 123456789.125, -2.0},
		"ints":   []any{int64(0), int64(-9223372036854775808), int64(9223372036854775807)},
		"plain":  []any{"web-01", "10.0.0.5", "http://x/y?z=1", "a b", "é", "-", "?", ":", ".hidden", "...", "---", "a #b", "a:", "=", "0x1F", "1:30", "Off", "1_000", ".inf", "~"},
	}
	r := &manifest.Resource{APIVersion: "a.openctl.io/v1", Kind: "K", Metadata: manifest.Metadata{Name: "n"}, Spec: spec}
	var buf bytes.Buffer
	require.NoError(t, manifest.EncodeYAML(&buf, r))
	got, err := manifest.DecodeBytes(buf.Bytes(), "out.yaml")
	require.NoError(t, err, buf.String())
	sameResources(t, []*manifest.Resource{r}, got)
	assert.Equal(t, spec["floats"], got[0].Spec["floats"]) // still floats
	out := buf.String()
	assert.Contains(t, out, "? "+long+"\n")
	assert.Contains(t, out, "  plain:\n    - web-01\n    - 10.0.0.5\n    - http://x/y?z=1\n    - a b\n    - é\n")
	assert.Contains(t, out, "    - |-\n      a\n      b\n")
	// Indentation stays bounded however deep the value.
	for _, line := range strings.Split(out, "\n") {
		assert.Less(t, len(line)-len(strings.TrimLeft(line, " ")), 80)
	}
}
