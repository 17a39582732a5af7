package drain_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/internal/drain"
	"github.com/openctl/openctl/internal/drain/draintest"
	"github.com/openctl/openctl/sandbox/kubelite/kubelitetest"
)

// fast asks again for a refused eviction every 100 ms and polls for
// deletion as often, so that the scenarios take little time.
func fast(o drain.Options) drain.Options {
	o.Retry = backoff.Policy{Initial: 100 * time.Millisecond, Max: 100 * time.Millisecond}
	o.Poll = 100 * time.Millisecond
	return o
}

func TestScenarios(t *testing.T) {
	for _, s := range draintest.Scenarios() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			cs := kubelitetest.Start(t, nil).Client
			draintest.Seed(t, cs, s)
			before := draintest.Pods(t, cs)
			evicted, err := drain.Drain(t.Context(), cs, draintest.Node, fast(s.Options))
			after := draintest.Pods(t, cs)
			if s.Refused != nil {
				var refused *drain.RefusedError
				require.ErrorAs(t, err, &refused)
				assert.Equal(t, s.Refused, refused.Pods)
				assert.Empty(t, evicted)
				assert.Equal(t, before, after, "a refused drain evicts nothing")
				return
			}
			if s.Fails {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, s.Evicted, evicted)
			gone := slices.DeleteFunc(slices.Clone(before), func(p string) bool { return slices.Contains(after, p) })
			assert.Equal(t, s.Evicted, gone, "the pods the API no longer holds")
		})
	}
}

func TestRefusedErrorNamesEveryReasonAndPod(t *testing.T) {
	err := &drain.RefusedError{Pods: map[drain.Reason][]string{
		drain.UnmanagedPods:    {"default/bare"},
		drain.LocalStoragePods: {"db/a", "db/b"},
	}}
	assert.Equal(t, "cannot evict pods that declare no controller (force evicts them, and nothing recreates them): default/bare; "+
		"cannot evict pods with local storage (deleteEmptyDirData evicts them, losing the data): db/a, db/b", err.Error())
}

// A budget that refuses is asked again until the timeout; the error
// names the pod and the budget, and the pod is still there.
func TestBudgetRefusalTimesOutNamingTheBudget(t *testing.T) {
	s := scenario(t, "a disruption budget holds its pod past the timeout")
	cs := kubelitetest.Start(t, nil).Client
	draintest.Seed(t, cs, s)
	var mu sync.Mutex
	var warnings []string
	o := fast(s.Options)
	o.Timeout = time.Second
	o.Warn = func(m string) { mu.Lock(); warnings = append(warnings, m); mu.Unlock() }
	_, err := drain.Drain(t.Context(), cs, draintest.Node, o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pod default/guarded: eviction still refused when the drain's 1s timeout ran out")
	assert.Contains(t, err.Error(), "disruption budget guard needs 1 healthy pods")
	mu.Lock()
	assert.Greater(t, len(warnings), 2, "asked again while the budget refused: %q", warnings)
	assert.Contains(t, warnings[0], "evicting default/guarded: Cannot evict pod as it would violate the pod's disruption budget.")
	mu.Unlock()
	p, err := cs.CoreV1().Pods("default").Get(t.Context(), "guarded", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Nil(t, p.DeletionTimestamp)
}

// Once the budget is lifted, the next request goes through.
func TestBudgetLiftedMidDrain(t *testing.T) {
	s := scenario(t, "a disruption budget holds its pod past the timeout")
	cs := kubelitetest.Start(t, nil).Client
	draintest.Seed(t, cs, s)
	o := fast(s.Options)
	o.Timeout = 30 * time.Second
	var once sync.Once
	o.Warn = func(string) {
		once.Do(func() {
			assert.NoError(t, cs.PolicyV1().PodDisruptionBudgets("default").Delete(context.Background(), "guard", metav1.DeleteOptions{}))
		})
	}
	evicted, err := drain.Drain(t.Context(), cs, draintest.Node, o)
	require.NoError(t, err)
	assert.Equal(t, []string{"default/guarded", "default/web-1"}, evicted)
}

// An evicted pod with its own grace period stays until something
// deletes it (a kubelet); the drain waits for that, and its timeout ends
// the wait with an error naming the pod.
func TestWaitsForTermination(t *testing.T) {
	s := draintest.Scenario{Name: "graceful", Pods: []draintest.Pod{{Name: "web-1", Controller: "ReplicaSet"}}}
	cs := kubelitetest.Start(t, nil).Client
	draintest.Seed(t, cs, s)

	o := fast(drain.Options{Timeout: 700 * time.Millisecond})
	evicted, err := drain.Drain(t.Context(), cs, draintest.Node, o)
	require.Error(t, err)
	assert.Equal(t, "pod default/web-1: evicted, still terminating when the drain's 700ms timeout ran out", err.Error())
	assert.Equal(t, []string{"default/web-1"}, evicted, "its eviction was accepted")

	// A kubelet deleting it lets a second drain finish.
	o.Timeout = 30 * time.Second
	go func() {
		time.Sleep(300 * time.Millisecond)
		assert.NoError(t, cs.CoreV1().Pods("default").Delete(context.Background(), "web-1", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}))
	}()
	_, err = drain.Drain(t.Context(), cs, draintest.Node, o)
	require.NoError(t, err)
	_, err = cs.CoreV1().Pods("default").Get(t.Context(), "web-1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

// A pod of the same name but another UID (a StatefulSet's replacement)
// counts as the evicted one gone: without that the drain would wait on
// the replacement, which nothing deletes, until its timeout.
func TestReplacementCountsAsDeleted(t *testing.T) {
	s := draintest.Scenario{Name: "replaced", Pods: []draintest.Pod{{Name: "web-1", Controller: "ReplicaSet"}}}
	cs := kubelitetest.Start(t, nil).Client
	draintest.Seed(t, cs, s)
	old, err := cs.CoreV1().Pods("default").Get(t.Context(), "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	replaced := make(chan error, 1)
	go func() {
		ctx := context.Background()
		for {
			p, err := cs.CoreV1().Pods("default").Get(ctx, "web-1", metav1.GetOptions{})
			if err != nil {
				replaced <- err
				return
			}
			if p.DeletionTimestamp != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := cs.CoreV1().Pods("default").Delete(ctx, "web-1", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
			replaced <- err
			return
		}
		_, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default"}, Spec: old.Spec}, metav1.CreateOptions{})
		replaced <- err
	}()
	// The first check comes at once, while the pod terminates; the next
	// one a second later finds the replacement.
	o := drain.Options{Timeout: 10 * time.Second, Poll: time.Second}
	evicted, err := drain.Drain(t.Context(), cs, draintest.Node, o)
	require.NoError(t, <-replaced)
	require.NoError(t, err)
	assert.Equal(t, []string{"default/web-1"}, evicted)
	cur, err := cs.CoreV1().Pods("default").Get(t.Context(), "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, old.UID, cur.UID)
	assert.Nil(t, cur.DeletionTimestamp)
}

// The caller's cancel ends a drain with the context's error, not a
// timeout it did not set.
func TestCancelled(t *testing.T) {
	s := scenario(t, "a disruption budget holds its pod past the timeout")
	cs := kubelitetest.Start(t, nil).Client
	draintest.Seed(t, cs, s)
	ctx, cancel := context.WithCancel(t.Context())
	o := fast(s.Options)
	o.Timeout = 0
	var once sync.Once
	o.Warn = func(string) { once.Do(cancel) }
	_, err := drain.Drain(ctx, cs, draintest.Node, o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pod default/guarded: eviction still refused: context canceled")
	assert.NotContains(t, err.Error(), "timeout")
}

func TestCordon(t *testing.T) {
	cs := kubelitetest.Start(t, nil).Client
	ctx := t.Context()
	_, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	rv := func() (string, bool) {
		n, err := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		require.NoError(t, err)
		return n.ResourceVersion, n.Spec.Unschedulable
	}
	require.NoError(t, drain.Cordon(ctx, cs, "n1"))
	v1, unsched := rv()
	assert.True(t, unsched)
	require.NoError(t, drain.Cordon(ctx, cs, "n1"))
	v2, _ := rv()
	assert.Equal(t, v1, v2, "cordoning a cordoned node writes nothing")
	require.NoError(t, drain.Uncordon(ctx, cs, "n1"))
	v3, unsched := rv()
	assert.False(t, unsched)
	assert.NotEqual(t, v2, v3)
	err = drain.Cordon(ctx, cs, "absent")
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

// An API that refuses the drain's reads fails it with that error; it
// evicts nothing.
func TestAPIRefusesReads(t *testing.T) {
	srv := kubelitetest.Start(t, nil)
	s := draintest.Scenario{Name: "ds", Pods: []draintest.Pod{{Name: "ds-1", Controller: "DaemonSet"}, {Name: "web-1", Controller: "ReplicaSet"}}}
	draintest.Seed(t, srv.Client, s)
	cfg := *srv.Config
	cfg.BearerToken, cfg.CertData, cfg.KeyData = "wrong", nil, nil
	bad, err := kubernetes.NewForConfig(&cfg)
	require.NoError(t, err)
	_, err = drain.Drain(t.Context(), bad, draintest.Node, drain.Options{IgnoreDaemonSets: true})
	require.Error(t, err)
	var refused *drain.RefusedError
	assert.False(t, errors.As(err, &refused))
	assert.True(t, apierrors.IsUnauthorized(err), "%v", err)
	assert.True(t, strings.HasPrefix(err.Error(), "listing the pods of node n1: "), "%v", err)
	assert.Equal(t, []string{"default/ds-1", "default/web-1"}, draintest.Pods(t, srv.Client))
}

func scenario(t *testing.T, name string) draintest.Scenario {
	for _, s := range draintest.Scenarios() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no scenario %q", name)
	return draintest.Scenario{}
}
