package openctl_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/state"
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

// placingProvider places every Thing it is given at "spot-<i>", in the
// order given, as registry.Placer.
type placingProvider struct {
	*testProvider
	calls int
}

func (p *placingProvider) Place(ctx context.Context, rs []*manifest.Resource) error {
	p.calls++
	for i, r := range rs {
		if _, ok := r.Spec["spot"]; !ok {
			r.Spec["spot"] = fmt.Sprintf("spot-%d", i)
		}
	}
	return nil
}

// A provider's placement is made once per Plan and Apply, over all its
// resources in a stable order: plan shows it, apply makes the same, and
// the next plan, placing again, has nothing to do.
func TestProviderPlace(t *testing.T) {
	p := &placingProvider{testProvider: newTestProvider()}
	e := newEngine(t, p, openctl.WithStore(state.NewMemory()))
	rs := []*manifest.Resource{thing("b", nil), thing("a", nil)}
	plan, err := e.Plan(t.Context(), rs...)
	require.NoError(t, err)
	assert.Equal(t, 1, p.calls)
	spots := map[string]any{}
	for _, c := range plan.Changes {
		for _, f := range c.Fields {
			if f.Path == "spec.spot" {
				spots[c.ID.Name] = f.New
			}
		}
	}
	assert.Equal(t, map[string]any{"a": "spot-0", "b": "spot-1"}, spots, "plan shows the placement, in ID order")
	rep, err := e.Apply(t.Context(), rs...)
	require.NoError(t, err)
	for _, r := range rep.Results {
		assert.Equal(t, spots[r.ID.Name], r.Resource.Spec["spot"], "apply places the same way")
	}
	plan, err = e.Plan(t.Context(), rs...)
	require.NoError(t, err)
	for _, c := range plan.Changes {
		assert.Equal(t, openctl.ActionNoOp, c.Action, c.ID.Short())
	}
	assert.Nil(t, rs[0].Spec["spot"], "the caller's manifests are not changed")
}
