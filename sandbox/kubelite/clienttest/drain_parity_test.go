package clienttest

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubectldrain "k8s.io/kubectl/pkg/drain"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/internal/drain"
	"github.com/openctl/openctl/internal/drain/draintest"
	"github.com/openctl/openctl/sandbox/kubelite/kubelitetest"
)

// kubectlRefusal is how kubectl's drain words each of our reasons, with
// the pods it names after it.
var kubectlRefusal = map[drain.Reason]string{
	drain.DaemonSetPods:         "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): ",
	drain.OrphanedDaemonSetPods: `cannot delete daemonsets.apps "gone" not found: `,
	drain.LocalStoragePods:      "cannot delete Pods with local storage (use --delete-emptydir-data to override): ",
	drain.UnmanagedPods:         "cannot delete Pods that declare no controller (use --force to override): ",
}

// outcome is what a drain did, as the API shows it afterwards.
type outcome struct {
	gone    []string // pods deleted
	refused map[drain.Reason][]string
	failed  bool
	msg     string
}

// TestDrainParity runs each scenario of package draintest through
// k8s.io/kubectl/pkg/drain and through openctl's drain, each on a fresh
// API, and expects the same pods evicted, the same refusals naming the
// same pods, and the same failures — and both to match the scenario.
func TestDrainParity(t *testing.T) {
	for _, s := range draintest.Scenarios() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			ours, theirs := ourDrain(t, s), kubectlDrain(t, s)
			t.Logf("openctl: %s", ours.msg)
			t.Logf("kubectl: %s", theirs.msg)
			assert.Equal(t, theirs.gone, ours.gone, "pods evicted")
			assert.Equal(t, theirs.refused, ours.refused, "refusals")
			assert.Equal(t, theirs.failed, ours.failed, "the drain failed")
			assert.Equal(t, s.Evicted, ours.gone, "the scenario's evicted pods")
			assert.Equal(t, s.Refused, ours.refused, "the scenario's refusals")
			assert.Equal(t, s.Fails, ours.failed, "the scenario's failure")
			if s.Fails {
				// Both name the pod the budget held and the timeout.
				for _, msg := range []string{ours.msg, theirs.msg} {
					assert.Contains(t, msg, "guarded")
					assert.Contains(t, msg, "timeout")
				}
			}
		})
	}
}

func ourDrain(t *testing.T, s draintest.Scenario) outcome {
	cs := kubelitetest.Start(t, nil).Client
	draintest.Seed(t, cs, s)
	before := draintest.Pods(t, cs)
	o := s.Options
	o.Retry = backoff.Policy{Initial: 100 * time.Millisecond, Max: 100 * time.Millisecond}
	o.Poll = 100 * time.Millisecond
	require.NoError(t, drain.Cordon(t.Context(), cs, draintest.Node))
	_, err := drain.Drain(t.Context(), cs, draintest.Node, o)
	out := outcome{gone: gone(before, draintest.Pods(t, cs))}
	if err != nil {
		out.msg = err.Error()
		var r *drain.RefusedError
		if errors.As(err, &r) {
			out.refused = r.Pods
		} else {
			out.failed = true
		}
	}
	return out
}

func kubectlDrain(t *testing.T, s draintest.Scenario) outcome {
	cs := kubelitetest.Start(t, nil).Client
	draintest.Seed(t, cs, s)
	before := draintest.Pods(t, cs)
	h := &kubectldrain.Helper{Ctx: t.Context(), Client: cs, Out: io.Discard, ErrOut: io.Discard,
		GracePeriodSeconds: -1, Timeout: s.Options.Timeout, Force: s.Options.Force,
		DeleteEmptyDirData: s.Options.DeleteEmptyDirData, IgnoreAllDaemonSets: s.Options.IgnoreDaemonSets,
		EvictErrorRetryDelay: 100 * time.Millisecond}
	if g := s.Options.GracePeriod; g != nil {
		h.GracePeriodSeconds = int(*g)
	}
	node, err := cs.CoreV1().Nodes().Get(t.Context(), draintest.Node, metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, kubectldrain.RunCordonOrUncordon(h, node, true))
	err = kubectldrain.RunNodeDrain(h, draintest.Node)
	out := outcome{gone: gone(before, draintest.Pods(t, cs))}
	if err == nil {
		return out
	}
	out.msg = err.Error()
	// An aggregate of refusals: "[a, b]" when several, "a" when one.
	rest := strings.TrimSuffix(strings.TrimPrefix(out.msg, "["), "]")
	for reason, prefix := range kubectlRefusal {
		i := strings.Index(rest, prefix)
		if i < 0 {
			continue
		}
		pods := rest[i+len(prefix):]
		if j := strings.Index(pods, ", cannot delete "); j >= 0 {
			pods = pods[:j]
		}
		if out.refused == nil {
			out.refused = map[drain.Reason][]string{}
		}
		names := strings.Split(pods, ", ")
		slices.Sort(names)
		out.refused[reason] = names
	}
	out.failed = out.refused == nil
	return out
}

// gone is the pods of before no longer in after.
func gone(before, after []string) []string {
	var g []string
	for _, p := range before {
		if !slices.Contains(after, p) {
			g = append(g, p)
		}
	}
	return g
}
