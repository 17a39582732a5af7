package manifest_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

func validVM() *manifest.Resource {
	return &manifest.Resource{
		APIVersion: "proxmox.openctl.io/v1",
		Kind:       "VirtualMachine",
		Metadata:   manifest.Metadata{Name: "web-01", Namespace: "prod", Labels: map[string]string{"a": "b"}},
		Spec:       map[string]any{"cores": int64(2), "disks": []any{map[string]any{"size": "32G"}}, "ratio": 0.5, "x": nil},
		Status:     map[string]any{"ok": true},
	}
}

func TestValidate(t *testing.T) {
	type fe struct{ field, msg string }
	tests := []struct {
		name   string
		mutate func(r *manifest.Resource)
		want   []fe
	}{
		{"valid", func(*manifest.Resource) {}, nil},
		{"valid without spec", func(r *manifest.Resource) { r.Spec, r.Status, r.Metadata.Namespace = nil, nil, "" }, nil},
		{"bad apiVersion", func(r *manifest.Resource) { r.APIVersion = "proxmox/v1" }, []fe{{"apiVersion", `apiVersion "proxmox/v1": API group "proxmox" is not a DNS subdomain of at least two labels (for example proxmox.openctl.io`}}},
		{"empty apiVersion", func(r *manifest.Resource) { r.APIVersion = "" }, []fe{{"apiVersion", "apiVersion is empty"}}},
		{"empty kind", func(r *manifest.Resource) { r.Kind = "" }, []fe{{"kind", "kind is empty"}}},
		{"bad kind", func(r *manifest.Resource) { r.Kind = "vm" }, []fe{{"kind", `kind "vm" is not a valid kind`}}},
		{"bad name", func(r *manifest.Resource) { r.Metadata.Name = "web_01" }, []fe{{"metadata.name", `name "web_01" is not a DNS-1123 subdomain`}}},
		{"bad namespace", func(r *manifest.Resource) { r.Metadata.Namespace = "a.b" }, []fe{{"metadata.namespace", `namespace "a.b" is not a DNS-1123 label`}}},
		{"empty keys", func(r *manifest.Resource) {
			r.Metadata.Labels[""] = "x"
			r.Metadata.Annotations = map[string]string{"": "y"}
		}, []fe{{"metadata.labels", "label key is empty"}, {"metadata.annotations", "annotation key is empty"}}},
		{"not normalised", func(r *manifest.Resource) {
			r.Spec["cores"] = 2
			r.Spec["list"] = []string{"a"}
			r.Status["nan"] = math.NaN()
			r.Status["ch"] = make(chan int)
		}, []fe{
			{"spec.cores", "value of type int is not normalised"},
			{"spec.list", "value of type []string is not normalised"},
			{"status.ch", "want a string, number, bool, list or map, got a value of type chan int"},
			{"status.nan", "want a finite number, got NaN"},
		}},
		{"nested", func(r *manifest.Resource) {
			r.Spec["disks"].([]any)[0].(map[string]any)["size"] = math.Inf(1)
		}, []fe{{"spec.disks[0].size", "want a finite number, got +Inf"}}},
		{"everything", func(r *manifest.Resource) { *r = manifest.Resource{} }, []fe{
			{"apiVersion", "apiVersion is empty"}, {"kind", "kind is empty"}, {"metadata.name", "name is empty"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validVM()
			tt.mutate(r)
			err := manifest.Validate(r)
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, errcode.Invalid)
			es := manifest.Errors(err)
			require.Len(t, es, len(tt.want), "%v", err)
			for i, w := range tt.want {
				assert.Equal(t, w.field, es[i].Field)
				assert.Contains(t, es[i].Msg, w.msg)
				assert.Zero(t, es[i].Line)
			}
		})
	}
}

func TestValidateUsesSource(t *testing.T) {
	r := validVM()
	r.Kind = "vm"
	r.Source = manifest.Source{File: "a.yaml", Line: 7}
	err := manifest.Validate(r)
	assert.EqualError(t, err, `a.yaml:7: kind: kind "vm" is not a valid kind (letters and digits, starting with an upper-case letter)`)

	// Problems at the same source line are all reported.
	r = validVM()
	r.Source = manifest.Source{File: "a.yaml", Line: 7}
	r.Spec["a"], r.Spec["b"] = math.NaN(), math.NaN()
	assert.Len(t, manifest.Errors(manifest.Validate(r)), 2)

	assert.ErrorIs(t, manifest.Validate(nil), errcode.Invalid)
}

func TestValidateSelfContainingValue(t *testing.T) {
	r := validVM()
	loop := map[string]any{}
	loop["self"] = loop
	r.Spec["loop"] = loop
	err := manifest.Validate(r)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nested more than 128 levels")
}

func TestDecodedResourcesValidate(t *testing.T) {
	rs := decode(t, vmHead+"spec:\n  a: [1, 2.5, x, true, null, {b: c}]\n")
	require.NoError(t, manifest.Validate(rs[0]))
}
