package openctl_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

// checkerProvider refuses Things whose spec.ok is false, as
// registry.Checker.
type checkerProvider struct {
	*testProvider
	checked []string
}

func (p *checkerProvider) Check(ctx context.Context, r *manifest.Resource) error {
	p.checked = append(p.checked, r.Metadata.Name)
	if ok, _ := r.Spec["ok"].(bool); !ok {
		return errcode.New(errcode.NotFound, "thing "+r.Metadata.Name+": what it needs does not exist")
	}
	return nil
}

// A provider's Check refuses in Plan what Apply refuses, with the same
// code and message; Apply fails that resource without running it and
// skips what depends on it, and applies the rest.
func TestProviderCheck(t *testing.T) {
	p := &checkerProvider{testProvider: newTestProvider()}
	e := newEngine(t, p)
	bad := thing("bad", map[string]any{"ok": false})
	good := thing("good", map[string]any{"ok": true})
	after := thing("after", map[string]any{"ok": true, "peer": ref("bad", "status.ip")})

	_, err := e.Plan(t.Context(), good, bad, after)
	require.ErrorIs(t, err, errcode.NotFound)
	assert.ErrorContains(t, err, "Thing/bad: thing bad: what it needs does not exist")
	assert.ElementsMatch(t, []string{"after", "bad", "good"}, p.checked, "every resource to apply is checked, $refs unresolved")

	rep, err := e.Apply(t.Context(), good, bad, after)
	require.ErrorIs(t, err, errcode.NotFound)
	assert.ErrorContains(t, err, "thing bad: what it needs does not exist")
	outcomes := map[string]openctl.Outcome{}
	for _, r := range rep.Results {
		outcomes[r.ID.Name] = r.Outcome
	}
	assert.Equal(t, map[string]openctl.Outcome{"good": openctl.OutcomeCreated, "bad": openctl.OutcomeFailed, "after": openctl.OutcomeSkipped}, outcomes)
	assert.Equal(t, 1, p.Calls().Apply, "only the good one reached the provider")
}
