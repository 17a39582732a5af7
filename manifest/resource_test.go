package manifest_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

func TestDeepCopy(t *testing.T) {
	orig := validVM()
	orig.Metadata.Annotations = map[string]string{"n": "1"}
	orig.Source = manifest.Source{File: "a.yaml", Line: 3, Index: 1}
	c := orig.DeepCopy()
	assert.Equal(t, orig, c)

	c.Metadata.Labels["a"] = "changed"
	c.Metadata.Annotations["n"] = "changed"
	c.Spec["disks"].([]any)[0].(map[string]any)["size"] = "1G"
	c.Status["ok"] = false
	c.Metadata.Name = "other"
	assert.Equal(t, validVM().Spec, orig.Spec)
	assert.Equal(t, "b", orig.Metadata.Labels["a"])
	assert.Equal(t, "1", orig.Metadata.Annotations["n"])
	assert.Equal(t, true, orig.Status["ok"])
	assert.Equal(t, "web-01", orig.Metadata.Name)

	var nilR *manifest.Resource
	assert.Nil(t, nilR.DeepCopy())
	empty := (&manifest.Resource{}).DeepCopy()
	assert.Nil(t, empty.Spec)
	assert.Nil(t, empty.Metadata.Labels)
}

func TestParseID(t *testing.T) {
	valid := []manifest.ID{
		{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: "web-01"},
		{APIVersion: "k3s.openctl.io/v1beta1", Kind: "Cluster", Name: "prod"},
		{APIVersion: "my-cloud.openctl.io/v2alpha3", Kind: "Disk2", Name: "0"},
	}
	for _, id := range valid {
		t.Run(id.String(), func(t *testing.T) {
			got, err := manifest.ParseID(id.String())
			require.NoError(t, err)
			assert.Equal(t, id, got)
			assert.NoError(t, id.Validate())
		})
	}
	invalid := []struct{ in, want string }{
		{"", "want apiVersion/kind/name"},
		{"web-01", "want apiVersion/kind/name"},
		{"VirtualMachine/web-01", "want apiVersion/kind/name"},
		{"v1/VirtualMachine/web-01", "apiVersion"},
		{"proxmox.openctl.io/v1/VirtualMachine/", "name is empty"},
		{"proxmox.openctl.io/v1//web-01", "kind is empty"},
		{"proxmox.openctl.io/v1/vm/web-01", "not a valid kind"},
		{"proxmox.openctl.io/v1/VirtualMachine/Web", "not a DNS-1123 subdomain"},
		{"proxmox/v1/VirtualMachine/web", "apiVersion"},
		{"proxmox.openctl.io/1/VirtualMachine/web", "apiVersion"},
	}
	for _, tt := range invalid {
		t.Run(tt.in, func(t *testing.T) {
			_, err := manifest.ParseID(tt.in)
			require.Error(t, err)
			assert.ErrorIs(t, err, errcode.Invalid)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestIDMethods(t *testing.T) {
	id := manifest.ID{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: "web-01"}
	assert.Equal(t, "proxmox.openctl.io", id.Group())
	assert.Equal(t, "", manifest.ID{APIVersion: "v1"}.Group())
	assert.Equal(t, "VirtualMachine/web-01", id.Short())

	other := id
	other.Name = "web-02"
	assert.True(t, id.Less(other))
	assert.False(t, other.Less(id))
	assert.Equal(t, 0, id.Compare(id))
	k3s := manifest.ID{APIVersion: "k3s.openctl.io/v1", Kind: "Z", Name: "z"}
	assert.Equal(t, 1, id.Compare(k3s)) // apiVersion first

	r := validVM()
	assert.Equal(t, id, r.ID())
}

func TestSplitAPIVersion(t *testing.T) {
	tests := []struct{ in, group, version string }{
		{"proxmox.openctl.io/v1", "proxmox.openctl.io", "v1"},
		{"k3s.openctl.io/v1beta1", "k3s.openctl.io", "v1beta1"},
		{"a-b.openctl.io/v20alpha2", "a-b.openctl.io", "v20alpha2"},
		{"files.example.com/v1", "files.example.com", "v1"},
		{"x.y/v2", "x.y", "v2"},
	}
	for _, tt := range tests {
		g, v, err := manifest.SplitAPIVersion(tt.in)
		require.NoError(t, err)
		assert.Equal(t, tt.group, g)
		assert.Equal(t, tt.version, v)
		require.NoError(t, manifest.ValidateGroup(tt.group))
	}
	for _, bad := range []string{"", "v1", "proxmox/v1", "files.example..com/v1", "files.example.com./v1", "files_x.example.com/v1", strings.Repeat("a.", 127) + "ab/v1", "Proxmox.openctl.io/v1", "proxmox.openctl.io/v1beta", "proxmox.openctl.io/V1", "-a.openctl.io/v1", "proxmox.openctl.io/v1/x"} {
		_, _, err := manifest.SplitAPIVersion(bad)
		assert.ErrorIs(t, err, errcode.Invalid, bad)
	}
}

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"a", "web-01", "0", "a-b-c", "x123456789012345678901234567890123456789012345678901234567890ab", "a.b", "web-01.lab", "ubuntu-24.04-cloud"} {
		assert.NoError(t, manifest.ValidateName(ok), ok)
	}
	for _, bad := range []string{"", "-a", "a-", "A", "a_b", "é", "x1234567890123456789012345678901234567890123456789012345678901ab", ".a", "a.", "a..b", "a.-b", strings.Repeat("a.", 127) + "a"} {
		assert.ErrorIs(t, manifest.ValidateName(bad), errcode.Invalid, bad)
	}
}

func TestOwner(t *testing.T) {
	child := &manifest.Resource{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Metadata: manifest.Metadata{Name: "prod-cp-0"}}
	_, ok := child.Owner()
	assert.False(t, ok)

	sameGroup := manifest.ID{APIVersion: "proxmox.openctl.io/v1", Kind: "Pool", Name: "prod"}
	child.SetOwner(sameGroup)
	got, ok := child.Owner()
	require.True(t, ok)
	assert.Equal(t, sameGroup, got)
	assert.NotContains(t, child.Metadata.Labels, manifest.LabelOwnerAPIVersion)

	cluster := manifest.ID{APIVersion: "k3s.openctl.io/v1", Kind: "Cluster", Name: "prod"}
	child.SetOwner(cluster)
	got, ok = child.Owner()
	require.True(t, ok)
	assert.Equal(t, cluster, got)
	assert.Equal(t, map[string]string{
		manifest.LabelOwnerKind:       "Cluster",
		manifest.LabelOwnerName:       "prod",
		manifest.LabelOwnerAPIVersion: "k3s.openctl.io/v1",
	}, child.Metadata.Labels)

	// Back to an owner in the same group: the apiVersion label goes.
	child.SetOwner(sameGroup)
	assert.NotContains(t, child.Metadata.Labels, manifest.LabelOwnerAPIVersion)

	half := &manifest.Resource{Metadata: manifest.Metadata{Labels: map[string]string{manifest.LabelOwnerKind: "Cluster"}}}
	_, ok = half.Owner()
	assert.False(t, ok)
}

func TestObjectAndResourceField(t *testing.T) {
	r := validVM()
	r.Metadata.Annotations = map[string]string{"note": "x"}
	o := r.Object()
	assert.Equal(t, map[string]any{
		"apiVersion": "proxmox.openctl.io/v1",
		"kind":       "VirtualMachine",
		"metadata": map[string]any{
			"name": "web-01", "namespace": "prod",
			"labels": map[string]any{"a": "b"}, "annotations": map[string]any{"note": "x"},
		},
		"spec":   r.Spec,
		"status": r.Status,
	}, o)
	// The object shares nothing with the resource.
	o["spec"].(map[string]any)["cores"] = int64(99)
	assert.Equal(t, int64(2), r.Spec["cores"])

	v, found, err := r.Field("spec.disks[0].size")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, "32G", v)
	v, found, err = r.Field("metadata.labels.a")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, "b", v)
	_, found, err = r.Field("status.ip")
	require.NoError(t, err)
	assert.False(t, found)
	_, _, err = r.Field("kind.x")
	assert.ErrorIs(t, err, errcode.Invalid)

	bare := &manifest.Resource{APIVersion: "a.openctl.io/v1", Kind: "K", Metadata: manifest.Metadata{Name: "n"}}
	assert.Equal(t, map[string]any{"apiVersion": "a.openctl.io/v1", "kind": "K", "metadata": map[string]any{"name": "n"}}, bare.Object())
}

func TestSourceString(t *testing.T) {
	assert.Equal(t, "", manifest.Source{}.String())
	assert.Equal(t, "a.yaml", manifest.Source{File: "a.yaml"}.String())
	assert.Equal(t, "a.yaml:4", manifest.Source{File: "a.yaml", Line: 4, Index: 2}.String())
}
