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
	stack := manifest.ID{APIVersion: apiVersion, Kind: "Stack", Name: "dev"}
	r := svc("web-01",
		map[string]any{
			"resources": map[string]any{"cpu": int64(2)},
			"volumes":   []any{map[string]any{"size": "32G", "class": "ssd"}, map[string]any{"size": "8G"}},
			"tags":      []any{"web", "prod"},
			"config":    map[string]any{"startup": "#!/bin/sh\nset -e\nexec nginx\n"},
			"empty":     map[string]any{},
			"none":      nil,
		},
		map[string]any{"address": "10.0.0.5", "password": "hunter2", "ready": true})
	r.Metadata.Labels = map[string]string{"tier": "web", "env": "prod"}
	r.Source = manifest.Source{File: "services.yaml", Line: 3}
	rec := &state.Record{
		APIVersion: apiVersion, Kind: "Service", Name: "web-01",
		Owner:     &stack,
		Children:  []manifest.ID{svcID("web-01-canary")},
		Secrets:   map[string]secret.Secret{"status.adminToken": secret.New("tok-123")},
		CreatedAt: now.Add(-3*time.Hour - 4*time.Minute), UpdatedAt: now.Add(-12 * time.Minute), Generation: 3,
	}
	var b bytes.Buffer
	require.NoError(t, output.Describe(&b, r, rec, output.Options{Kind: svcKind, Now: clock}))
	assert.Equal(t, ""+
		"Name:         web-01\n"+
		"Kind:         Service\n"+
		"APIVersion:   demo.openctl.io/v1\n"+
		"Labels:       env=prod\n"+
		"              tier=web\n"+
		"Annotations:  <none>\n"+
		"Owner:        stack/dev\n"+
		"Children:     service/web-01-canary\n"+
		"Created:      2026-11-30T08:56:00Z (3h4m ago)\n"+
		"Updated:      2026-11-30T11:48:00Z (12m ago)\n"+
		"Generation:   3\n"+
		"Source:       services.yaml:3\n"+
		"Spec:\n"+
		"  config:\n"+
		"    startup: |\n"+
		"      #!/bin/sh\n"+
		"      set -e\n"+
		"      exec nginx\n"+
		"  empty: {}\n"+
		"  none: <none>\n"+
		"  resources:\n"+
		"    cpu: 2\n"+
		"  tags:\n"+
		"    - web\n"+
		"    - prod\n"+
		"  volumes:\n"+
		"    - class: ssd\n"+
		"      size: 32G\n"+
		"    - size: 8G\n"+
		"Status:\n"+
		"  address: 10.0.0.5\n"+
		"  password: [redacted]\n"+
		"  ready: true\n"+
		"Secrets:\n"+
		"  status.adminToken: [redacted]\n", b.String())
	assert.NotContains(t, b.String(), "hunter2")
}

func TestDescribeWithoutRecord(t *testing.T) {
	r := svc("web-02", nil, nil)
	r.SetOwner(manifest.ID{APIVersion: apiVersion, Kind: "Pool", Name: "web"})
	var b bytes.Buffer
	require.NoError(t, output.Describe(&b, r, nil, output.Options{Now: clock, Ages: map[manifest.ID]time.Time{r.ID(): now.Add(-45 * time.Second)}}))
	assert.Equal(t, ""+
		"Name:         web-02\n"+
		"Kind:         Service\n"+
		"APIVersion:   demo.openctl.io/v1\n"+
		"Labels:       openctl.io/owner-kind=Pool\n"+
		"              openctl.io/owner-name=web\n"+
		"Annotations:  <none>\n"+
		"Owner:        pool/web\n"+
		"Children:     <none>\n"+
		"Created:      2026-11-30T11:59:15Z (45s ago)\n"+
		"Spec:         <none>\n"+
		"Status:       <none>\n", b.String())

	b.Reset()
	require.NoError(t, output.Describe(&b, svc("x", nil, nil), nil, output.Options{}))
	assert.Contains(t, b.String(), "Created:      <unknown>\n")
	require.ErrorIs(t, output.Describe(&b, nil, nil, output.Options{}), errcode.Invalid)
}

// TestDescribeRecordedLabels: a live resource without labels (not every
// provider can store labels on what it manages) is described with the labels its record holds, r's own
// labels on top.
func TestDescribeRecordedLabels(t *testing.T) {
	r := svc("web-01", map[string]any{"resources": map[string]any{"cpu": int64(2)}}, nil)
	rec := &state.Record{APIVersion: apiVersion, Kind: "Service", Name: "web-01", Labels: map[string]string{"app": "web", "tier": "frontend"}}
	var b bytes.Buffer
	require.NoError(t, output.Describe(&b, r, rec, output.Options{Kind: svcKind, Now: clock}))
	assert.Contains(t, b.String(), "Labels:       app=web\n              tier=frontend\n")

	r.Metadata.Labels = map[string]string{"tier": "live", "demo.openctl.io/context": "lab"}
	b.Reset()
	require.NoError(t, output.Describe(&b, r, rec, output.Options{Kind: svcKind, Now: clock}))
	assert.Contains(t, b.String(), "Labels:       app=web\n              demo.openctl.io/context=lab\n              tier=live\n")
}
