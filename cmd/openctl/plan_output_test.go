package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/cli"
	"github.com/openctl/openctl/output"
)

// TestPlanJSONSchema validates what "openctl plan -o json" prints for the
// example VMs, planned by the Proxmox VE provider against its simulator,
// against the JSON Schema of the report.
func TestPlanJSONSchema(t *testing.T) {
	t.Setenv("OPENCTL_HOME", t.TempDir())
	var stdout, stderr bytes.Buffer
	code := cli.Run(t.Context(), options(), []string{"plan", "--sandbox", "--detailed-exitcode", "-o", "json", "-f", "../../examples/vms.yaml"},
		strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, 2, code, "changes pending; stderr: %s", stderr.String())
	assert.True(t, strings.HasSuffix(stderr.String(), "\nPlan: 3 to create, 0 to update, 0 to replace, 0 to delete, 0 unchanged.\n"), stderr.String())

	schema, err := jsonschema.UnmarshalJSON(bytes.NewReader(output.PlanReportSchema()))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(output.PlanReportSchemaID, schema))
	sch, err := c.Compile(output.PlanReportSchemaID)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(stdout.Bytes()))
	require.NoError(t, err, stdout.String())
	require.NoError(t, sch.Validate(doc), stdout.String())
	assert.Contains(t, stdout.String(), `"file": "../../examples/vms.yaml"`)
}
