package output_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/output"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/secret"
)

func svcID(name string) manifest.ID {
	return manifest.ID{APIVersion: apiVersion, Kind: "Service", Name: name}
}

func samplePlan() *openctl.Plan {
	stack := manifest.ID{APIVersion: apiVersion, Kind: "Stack", Name: "dev"}
	return &openctl.Plan{
		Changes: []openctl.Change{
			{ID: svcID("proxy"), Action: openctl.ActionNoOp},
			{ID: svcID("web-01"), Action: openctl.ActionCreate, Reasons: []string{"does not exist"}},
			{ID: svcID("web-02"), Action: openctl.ActionUpdate, Fields: []manifest.FieldChange{
				{Path: "spec.admin", Old: map[string]any{"user": "ops", "password": "old-pw"}, New: map[string]any{"user": "ops", "password": "new-pw"}},
				{Path: "spec.admin.password", Old: "old-pw", New: "new-pw"},
				{Path: "spec.replicas", Old: int64(2), New: int64(4)},
				{Path: "spec.description", Old: "old", Removed: true},
				{Path: "spec.key", Old: secret.Redacted, New: secret.New("k")},
				{Path: "spec.tags", New: []any{"web", "prod"}, Added: true},
			}},
			{ID: svcID("db"), Action: openctl.ActionReplace, Reasons: []string{"region changed: needs a new service"},
				Fields: []manifest.FieldChange{{Path: "spec.region", Old: "eu-1", New: "eu-2"}}},
			{ID: svcID("dev-worker-3"), Action: openctl.ActionDelete, Owner: &stack, Reasons: []string{"no longer planned by Stack/dev"}},
			{ID: svcID("cache"), Action: openctl.ActionNoOp},
		},
		Waves: [][]manifest.ID{{svcID("proxy"), svcID("dev-worker-3")}, {svcID("web-01"), svcID("web-02"), svcID("db")}, {svcID("cache")}},
	}
}

func TestPrintPlan(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, output.PrintPlan(&b, samplePlan(), false))
	assert.Equal(t, ""+
		"  + service/web-01 will be created\n"+
		"      # does not exist\n"+
		"  ~ service/web-02 will be updated in place\n"+
		"      ~ spec.admin: {\"password\":\"[redacted]\",\"user\":\"ops\"} → {\"password\":\"[redacted]\",\"user\":\"ops\"}\n"+
		"      ~ spec.admin.password: [redacted] → [redacted]\n"+
		"      ~ spec.replicas: 2 → 4\n"+
		"      - spec.description: \"old\"\n"+
		"      ~ spec.key: [redacted] → [redacted]\n"+
		"      + spec.tags: [\"web\",\"prod\"]\n"+
		"-/+ service/db must be replaced\n"+
		"      # region changed: needs a new service\n"+
		"      ~ spec.region: \"eu-1\" → \"eu-2\"\n"+
		"  - service/dev-worker-3 (part of stack/dev) will be deleted\n"+
		"      # no longer planned by Stack/dev\n"+
		"\n"+
		"Wave 1: service/proxy, service/dev-worker-3\n"+
		"Wave 2: service/web-01, service/web-02, service/db\n"+
		"Wave 3: service/cache\n"+
		"\n"+
		"Plan: 1 to create, 1 to update, 1 to replace, 1 to delete, 2 unchanged.\n", b.String())
	assert.NotContains(t, b.String(), "pw\"")
	assert.NotContains(t, b.String(), "\x1b[")
}

func TestPrintPlanColorAndNames(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, output.WritePlan(&b, samplePlan(), output.PlanOptions{Color: true, Names: output.KindNames([]registry.Kind{svcKind})}))
	out := b.String()
	assert.Contains(t, out, "\x1b[32m  +\x1b[0m svc/web-01 will be created\n")
	assert.Contains(t, out, "\x1b[33m  ~\x1b[0m svc/web-02 will be updated in place\n")
	assert.Contains(t, out, "\x1b[31m-/+\x1b[0m svc/db must be replaced\n")
	assert.Contains(t, out, "\x1b[31m  -\x1b[0m svc/dev-worker-3 (part of stack/dev) will be deleted\n")
	assert.Contains(t, out, "      \x1b[33m~\x1b[0m spec.replicas: 2 → 4\n")
	assert.Contains(t, out, "      \x1b[32m+\x1b[0m spec.tags: [\"web\",\"prod\"]\n")
	assert.Contains(t, out, "      \x1b[31m-\x1b[0m spec.description: \"old\"\n")
	assert.Contains(t, out, "Wave 2: svc/web-01, svc/web-02, svc/db\n")
}

func TestPrintPlanNoChanges(t *testing.T) {
	var b bytes.Buffer
	p := &openctl.Plan{Changes: []openctl.Change{{ID: svcID("a"), Action: openctl.ActionNoOp}}, Waves: [][]manifest.ID{{svcID("a")}}}
	require.NoError(t, output.PrintPlan(&b, p, true))
	assert.Equal(t, "No changes: every resource matches its manifest.\n\nWave 1: service/a\n\nPlan: 0 to create, 0 to update, 0 to replace, 0 to delete, 1 unchanged.\n", b.String())

	b.Reset()
	require.NoError(t, output.PrintPlan(&b, &openctl.Plan{}, false))
	assert.Equal(t, "No changes: every resource matches its manifest.\n\nPlan: 0 to create, 0 to update, 0 to replace, 0 to delete, 0 unchanged.\n", b.String())

	require.ErrorIs(t, output.PrintPlan(&b, nil, false), errcode.Invalid)
}
