package output_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/output"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

func TestDescribe(t *testing.T) {
	cluster := manifest.ID{APIVersion: "k3s.openctl.io/v1", Kind: "Cluster", Name: "dev"}
	r := vm("web-01",
		map[string]any{
			"cpu":       map[string]any{"cores": int64(2)},
			"disks":     []any{map[string]any{"size": "32G", "storage": "local-lvm"}, map[string]any{"size": "8G"}},
			"tags":      []any{"web", "prod"},
			"cloudInit": map[string]any{"userData": "#cloud-config\npackages:\n  - nginx\n"},
			"empty":     map[string]any{},
			"none":      nil,
		},
		map[string]any{"ip": "10.0.0.5", "password": "hunter2", "agent": true})
	r.Metadata.Labels = map[string]string{"tier": "web", "env": "prod"}
	r.Source = manifest.Source{File: "vms.yaml", Line: 3}
	rec := &state.Record{
		APIVersion: apiVersion, Kind: "VirtualMachine", Name: "web-01",
		Owner:     &cluster,
		Children:  []manifest.ID{vmID("web-01-disk")},
		Secrets:   map[string]secret.Secret{"status.kubeconfig": secret.New("apiVersion: v1 ...")},
		CreatedAt: now.Add(-3*time.Hour - 4*time.Minute), UpdatedAt: now.Add(-12 * time.Minute), Generation: 3,
	}
	var b bytes.Buffer
	require.NoError(t, output.Describe(&b, r, rec, output.Options{Kind: vmKind, Now: clock}))
	assert.Equal(t, ""+
		"Name:         web-01\n"+
		"Kind:         VirtualMachine\n"+
		"APIVersion:   proxmox.openctl.io/v1\n"+
		"Labels:       env=prod\n"+
		"              tier=web\n"+
		"Annotations:  <none>\n"+
		"Owner:        cluster/dev\n"+
		"Children:     virtualmachine/web-01-disk\n"+
		"Created:      2026-11-30T08:56:00Z (3h4m ago)\n"+
		"Updated:      2026-11-30T11:48:00Z (12m ago)\n"+
		"Generation:   3\n"+
		"Source:       vms.yaml:3\n"+
		"Spec:\n"+
		"  cloudInit:\n"+
		"    userData: |\n"+
		"      #cloud-config\n"+
		"      packages:\n"+
		"        - nginx\n"+
		"  cpu:\n"+
		"    cores: 2\n"+
		"  disks:\n"+
		"    - size: 32G\n"+
		"      storage: local-lvm\n"+
		"    - size: 8G\n"+
		"  empty: {}\n"+
		"  none: <none>\n"+
		"  tags:\n"+
		"    - web\n"+
		"    - prod\n"+
		"Status:\n"+
		"  agent: true\n"+
		"  ip: 10.0.0.5\n"+
		"  password: [redacted]\n"+
		"Secrets:\n"+
		"  status.kubeconfig: [redacted]\n", b.String())
	assert.NotContains(t, b.String(), "hunter2")
}

func TestDescribeWithoutRecord(t *testing.T) {
	r := vm("web-02", nil, nil)
	r.SetOwner(manifest.ID{APIVersion: apiVersion, Kind: "Pool", Name: "web"})
	var b bytes.Buffer
	require.NoError(t, output.Describe(&b, r, nil, output.Options{Now: clock, Ages: map[manifest.ID]time.Time{r.ID(): now.Add(-45 * time.Second)}}))
	assert.Equal(t, ""+
		"Name:         web-02\n"+
		"Kind:         VirtualMachine\n"+
		"APIVersion:   proxmox.openctl.io/v1\n"+
		"Labels:       openctl.io/owner-kind=Pool\n"+
		"              openctl.io/owner-name=web\n"+
		"Annotations:  <none>\n"+
		"Owner:        pool/web\n"+
		"Children:     <none>\n"+
		"Created:      2026-11-30T11:59:15Z (45s ago)\n"+
		"Spec:         <none>\n"+
		"Status:       <none>\n", b.String())

	b.Reset()
	require.NoError(t, output.Describe(&b, vm("x", nil, nil), nil, output.Options{}))
	assert.Contains(t, b.String(), "Created:      <unknown>\n")
	require.ErrorIs(t, output.Describe(&b, nil, nil, output.Options{}), errcode.Invalid)
}

// TestDescribeRecordedLabels: a live resource without labels (a Proxmox VM
// carries none) is described with the labels its record holds, r's own
// labels on top.
func TestDescribeRecordedLabels(t *testing.T) {
	r := vm("web-01", map[string]any{"cpu": map[string]any{"cores": int64(2)}}, nil)
	rec := &state.Record{APIVersion: apiVersion, Kind: "VirtualMachine", Name: "web-01", Labels: map[string]string{"app": "web", "tier": "frontend"}}
	var b bytes.Buffer
	require.NoError(t, output.Describe(&b, r, rec, output.Options{Kind: vmKind, Now: clock}))
	assert.Contains(t, b.String(), "Labels:       app=web\n              tier=frontend\n")

	r.Metadata.Labels = map[string]string{"tier": "live", "proxmox.openctl.io/context": "lab"}
	b.Reset()
	require.NoError(t, output.Describe(&b, r, rec, output.Options{Kind: vmKind, Now: clock}))
	assert.Contains(t, b.String(), "Labels:       app=web\n              proxmox.openctl.io/context=lab\n              tier=live\n")
}
