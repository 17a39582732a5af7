package openctl_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
)

// FuzzLoadPlan feeds LoadPlan arbitrary bytes: it never panics, every
// failure is an errcode.Invalid error, and a plan it accepts has a plan
// whose changes are its resources and whose waves cover them once.
func FuzzLoadPlan(f *testing.F) {
	e, err := openctl.New()
	require.NoError(f, err)
	// Seeds: a real saved plan and a few near misses.
	fx := newSavedPlanFixture(f)
	f.Add(fx.file)
	f.Add([]byte(`{"apiVersion":"openctl.io/v1","kind":"SavedPlan","created":"2026-01-01T00:00:00Z","storeID":"x","providers":[],"resources":[],"digest":""}`))
	f.Add([]byte(`{"apiVersion":"openctl.io/v1","kind":"SavedPlan","created":"2026-01-01T00:00:00Z","resources":[{"manifest":{"apiVersion":"a.b/v1","kind":"K","metadata":{"name":"n"},"spec":{"x":1e400}},"action":"create","record":{"state":"absent"},"live":"absent","after":[{"apiVersion":"a.b/v1","kind":"K","name":"n"}]}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sp, err := e.LoadPlan(t.Context(), bytes.NewReader(data))
		if err != nil {
			if !errcode.Is(err, errcode.Invalid) {
				t.Fatalf("not Invalid: %v", err)
			}
			return
		}
		p := sp.Plan()
		seen := map[string]int{}
		for _, w := range p.Waves {
			for _, id := range w {
				seen[id.String()]++
			}
		}
		if len(seen) != len(p.Changes) {
			t.Fatalf("%d changes, %d resources in waves", len(p.Changes), len(seen))
		}
		for _, c := range p.Changes {
			if seen[c.ID.String()] != 1 {
				t.Fatalf("%s in %d waves", c.ID, seen[c.ID.String()])
			}
			if _, ok := p.Change(c.ID); !ok {
				t.Fatalf("Change(%s) not found", c.ID)
			}
		}
		_ = p.DOT()
		_ = sp.Created()
	})
}
