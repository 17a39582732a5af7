package k3s_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/k3s"
)

// A server interrupted while it joins — k3s started, its etcd learner
// added, its Node not yet in the API — converges on the very next apply,
// with no pause in between: its member is still the cluster's, so its
// datastore is kept and k3s started again. (It used to be taken for a
// deleted node: its datastore wiped, it joined again under a new member
// name, and k3s refused that for ever as a duplicate node name.)
func TestInterruptedServerJoin(t *testing.T) {
	t.Parallel()
	s := newSandboxSide(t)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()

	actx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	s.setHook(func(node, step string) {
		if node == "dev-cp-1" && step == "start k3s" {
			time.AfterFunc(300*time.Millisecond, interrupt)
		}
	})
	_, err := s.engine.Apply(actx, s.cluster)
	require.Error(t, err, "interrupted")
	s.setHook(nil)
	s.takeSteps()

	var rep *openctl.Report
	for attempt := 1; ; attempt++ {
		rep, err = s.engine.Apply(ctx, s.cluster)
		if err == nil {
			break
		}
		require.Less(t, attempt, 3, "apply after the interruption, attempt %d: %v", attempt, err)
	}
	for _, r := range rep.Results {
		assert.NoError(t, r.Err, r.ID.Short())
	}
	steps, _ := s.norm.commands(s.takeSteps())
	assert.NotContains(t, steps["dev-cp-1"], "clear the datastore", "the joiner's member was the cluster's: %q", steps["dev-cp-1"])
	f, err := s.engine.Get(ctx, s.cluster.ID())
	require.NoError(t, err)
	assert.Equal(t, k3s.PhaseReady, f.Resource.Status["phase"], "%v", f.Resource.Status)
	assert.Equal(t, "5/5", f.Resource.Status["readyNodes"], "%v", f.Resource.Status)

	plan, err := s.engine.Plan(ctx, s.cluster)
	require.NoError(t, err)
	assert.False(t, plan.HasChanges(), "plan after the re-apply: %v", plan)
}
