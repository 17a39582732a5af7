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

func vmID(name string) manifest.ID {
	return manifest.ID{APIVersion: apiVersion, Kind: "VirtualMachine", Name: name}
}

func samplePlan() *openctl.Plan {
	cluster := manifest.ID{APIVersion: "k3s.openctl.io/v1", Kind: "Cluster", Name: "dev"}
	return &openctl.Plan{
		Changes: []openctl.Change{
			{ID: vmID("net"), Action: openctl.ActionNoOp},
			{ID: vmID("web-01"), Action: openctl.ActionCreate, Reasons: []string{"does not exist"}},
			{ID: vmID("web-02"), Action: openctl.ActionUpdate, Fields: []manifest.FieldChange{
				{Path: "spec.cloudInit", Old: map[string]any{"user": "ops", "password": "old-pw"}, New: map[string]any{"user": "ops", "password": "new-pw"}},
				{Path: "spec.cloudInit.password", Old: "old-pw", New: "new-pw"},
				{Path: "spec.cpu.cores", Old: int64(2), New: int64(4)},
				{Path: "spec.description", Old: "old", Removed: true},
				{Path: "spec.key", Old: secret.Redacted, New: secret.New("k")},
				{Path: "spec.tags", New: []any{"web", "prod"}, Added: true},
			}},
			{ID: vmID("db"), Action: openctl.ActionReplace, Reasons: []string{"template changed: needs a new VM"},
				Fields: []manifest.FieldChange{{Path: "spec.template.name", Old: "ubuntu-22.04", New: "ubuntu-24.04"}}},
			{ID: vmID("dev-agent-3"), Action: openctl.ActionDelete, Owner: &cluster, Reasons: []string{"no longer planned by Cluster/dev"}},
			{ID: vmID("cache"), Action: openctl.ActionNoOp},
		},
		Waves: [][]manifest.ID{{vmID("net"), vmID("dev-agent-3")}, {vmID("web-01"), vmID("web-02"), vmID("db")}, {vmID("cache")}},
	}
}

func TestPrintPlan(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, output.PrintPlan(&b, samplePlan(), false))
	assert.Equal(t, ""+
		"  + virtualmachine/web-01 will be created\n"+
		"      # does not exist\n"+
		"  ~ virtualmachine/web-02 will be updated in place\n"+
		"      ~ spec.cloudInit: {\"password\":\"[redacted]\",\"user\":\"ops\"} → {\"password\":\"[redacted]\",\"user\":\"ops\"}\n"+
		"      ~ spec.cloudInit.password: [redacted] → [redacted]\n"+
		"      ~ spec.cpu.cores: 2 → 4\n"+
		"      - spec.description: \"old\"\n"+
		"      ~ spec.key: [redacted] → [redacted]\n"+
		"      + spec.tags: [\"web\",\"prod\"]\n"+
		"-/+ virtualmachine/db must be replaced\n"+
		"      # template changed: needs a new VM\n"+
		"      ~ spec.template.name: \"ubuntu-22.04\" → \"ubuntu-24.04\"\n"+
		"  - virtualmachine/dev-agent-3 (part of cluster/dev) will be deleted\n"+
		"      # no longer planned by Cluster/dev\n"+
		"\n"+
		"Wave 1: virtualmachine/net, virtualmachine/dev-agent-3\n"+
		"Wave 2: virtualmachine/web-01, virtualmachine/web-02, virtualmachine/db\n"+
		"Wave 3: virtualmachine/cache\n"+
		"\n"+
		"Plan: 1 to create, 1 to update, 1 to replace, 1 to delete, 2 unchanged.\n", b.String())
	assert.NotContains(t, b.String(), "pw\"")
	assert.NotContains(t, b.String(), "\x1b[")
}

func TestPrintPlanColorAndNames(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, output.WritePlan(&b, samplePlan(), output.PlanOptions{Color: true, Names: output.KindNames([]registry.Kind{vmKind})}))
	out := b.String()
	assert.Contains(t, out, "\x1b[32m  +\x1b[0m vm/web-01 will be created\n")
	assert.Contains(t, out, "\x1b[33m  ~\x1b[0m vm/web-02 will be updated in place\n")
	assert.Contains(t, out, "\x1b[31m-/+\x1b[0m vm/db must be replaced\n")
	assert.Contains(t, out, "\x1b[31m  -\x1b[0m vm/dev-agent-3 (part of cluster/dev) will be deleted\n")
	assert.Contains(t, out, "      \x1b[33m~\x1b[0m spec.cpu.cores: 2 → 4\n")
	assert.Contains(t, out, "      \x1b[32m+\x1b[0m spec.tags: [\"web\",\"prod\"]\n")
	assert.Contains(t, out, "      \x1b[31m-\x1b[0m spec.description: \"old\"\n")
	assert.Contains(t, out, "Wave 2: vm/web-01, vm/web-02, vm/db\n")
}

func TestPrintPlanNoChanges(t *testing.T) {
	var b bytes.Buffer
	p := &openctl.Plan{Changes: []openctl.Change{{ID: vmID("a"), Action: openctl.ActionNoOp}}, Waves: [][]manifest.ID{{vmID("a")}}}
	require.NoError(t, output.PrintPlan(&b, p, true))
	assert.Equal(t, "No changes: every resource matches its manifest.\n\nWave 1: virtualmachine/a\n\nPlan: 0 to create, 0 to update, 0 to replace, 0 to delete, 1 unchanged.\n", b.String())

	b.Reset()
	require.NoError(t, output.PrintPlan(&b, &openctl.Plan{}, false))
	assert.Equal(t, "No changes: every resource matches its manifest.\n\nPlan: 0 to create, 0 to update, 0 to replace, 0 to delete, 0 unchanged.\n", b.String())

	require.ErrorIs(t, output.PrintPlan(&b, nil, false), errcode.Invalid)
}
