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

func TestPrintRecords(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	owner := manifest.ID{APIVersion: "demo.openctl.io/v1", Kind: "Stack", Name: "dev"}
	recs := []*state.Record{
		{APIVersion: "demo.openctl.io/v1", Kind: "Service", Name: "web-01", Generation: 2, CreatedAt: now.Add(-3 * time.Hour), UpdatedAt: now.Add(-5 * time.Minute),
			Secrets: map[string]secret.Secret{"spec.admin.password": secret.New("hunter2")}},
		{APIVersion: "demo.openctl.io/v1", Kind: "Service", Name: "worker-0", Generation: 1, Owner: &owner, CreatedAt: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Hour)},
	}
	var b bytes.Buffer
	require.NoError(t, output.PrintRecords(&b, output.Table, recs, output.Options{Now: func() time.Time { return now }}))
	assert.Equal(t, "RESOURCE           APIVERSION           GENERATION   OWNER       CREATED   UPDATED\n"+
		"Service/web-01     demo.openctl.io/v1   2            <none>      3h        5m\n"+
		"Service/worker-0   demo.openctl.io/v1   1            Stack/dev   60m       60m\n", b.String())

	b.Reset()
	require.NoError(t, output.PrintRecords(&b, output.Name, recs, output.Options{}))
	assert.Equal(t, "service/web-01\nservice/worker-0\n", b.String())

	b.Reset()
	require.NoError(t, output.PrintRecords(&b, output.YAML, recs[:1], output.Options{}))
	assert.Contains(t, b.String(), "spec.admin.password: '[redacted]'")
	assert.NotContains(t, b.String(), "hunter2")

	var empty bytes.Buffer
	b.Reset()
	require.NoError(t, output.PrintRecords(&b, output.Table, nil, output.Options{Empty: &empty}))
	assert.Empty(t, b.String())
	assert.Equal(t, "No resources recorded in the state.\n", empty.String())

	assert.True(t, errcode.Is(output.PrintRecords(&b, output.Wide, recs, output.Options{}), errcode.Invalid))
}
