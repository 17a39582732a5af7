package kubelite_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openctl/openctl/sandbox/kubelite"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/internal/drain"
)

// runningPod is a pod the kubelet of node would report Running and Ready.
func runningPod(name, node string, labels map[string]string, owners ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels, OwnerReferences: owners},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "nginx:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.42.0.5", PodIPs: []corev1.PodIP{{IP: "10.42.0.5"}},
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
}

// startPod creates a pod and reports it running, as a kubelet would.
func startPod(t *testing.T, client kubernetes.Interface, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	created, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = p.Status
	out, err := client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// kubelet deletes with grace 0 the terminating pods of node, as the
// kubelet does once their containers stopped, until ctx ends.
func kubelet(ctx context.Context, t *testing.T, client kubernetes.Interface, node string) *sync.WaitGroup {
	var wg sync.WaitGroup
	w, err := client.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer w.Stop()
		for e := range w.ResultChan() {
			if p, ok := e.Object.(*corev1.Pod); ok && e.Type == watch.Modified && p.DeletionTimestamp != nil {
				err := client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0)), Preconditions: &metav1.Preconditions{UID: &p.UID}})
				if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
					t.Errorf("kubelet: %v", err)
				}
			}
		}
	}()
	return &wg
}

// drainOptions are the K3s provider's drain options with everything
// allowed, asking again every 50 ms for an eviction a budget refuses and
// writing what it reports to out.
func drainOptions(out *syncBuffer) drain.Options {
	return drain.Options{Force: true, IgnoreDaemonSets: true, DeleteEmptyDirData: true, Timeout: 20 * time.Second,
		Retry: backoff.Policy{Initial: 50 * time.Millisecond, Max: 50 * time.Millisecond}, Poll: 100 * time.Millisecond,
		Warn: func(m string) { out.WriteString(m + "\n") }}
}

// syncBuffer is a bytes.Buffer several goroutines may write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) WriteString(s string) { b.mu.Lock(); b.b.WriteString(s); b.mu.Unlock() }
func (b *syncBuffer) String() string       { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

func TestDrain(t *testing.T) {
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, n := range []string{"n1", "n2"} {
		if _, err := c.client.CoreV1().Nodes().Create(ctx, node(n, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := c.client.AppsV1().DaemonSets("default").Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ds"}}}}, metav1.CreateOptions{})
	if err != nil || ds.Generation != 1 {
		t.Fatalf("daemonset: %v %+v", err, ds)
	}
	rs, err := c.client.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctrl := func(kind, name string, uid types.UID) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: ptr(true)}
	}
	startPod(t, c.client, runningPod("web-1", "n1", map[string]string{"app": "web"}, ctrl("ReplicaSet", "rs", rs.UID)))
	startPod(t, c.client, runningPod("web-2", "n2", map[string]string{"app": "web"}, ctrl("ReplicaSet", "rs", rs.UID)))
	startPod(t, c.client, runningPod("ds-1", "n1", map[string]string{"app": "ds"}, ctrl("DaemonSet", "ds", ds.UID)))
	startPod(t, c.client, runningPod("bare", "n1", nil))
	// maxUnavailable 50% of the ReplicaSet's 2: one web pod may go.
	if _, err := c.client.PolicyV1().PodDisruptionBudgets("default").Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr(intstr.FromString("50%")), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	kctx, kcancel := context.WithCancel(ctx)
	wg := kubelet(kctx, t, c.client, "n1")
	defer func() { kcancel(); wg.Wait() }()

	var out syncBuffer
	if err := drain.Cordon(ctx, c.client, "n1"); err != nil {
		t.Fatal(err)
	}
	if _, err := drain.Drain(ctx, c.client, "n1", drainOptions(&out)); err != nil {
		t.Fatalf("drain: %v\n%s", err, &out)
	}
	pods, err := c.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || pods.Items[0].Name != "ds-1" {
		t.Fatalf("pods left on n1: %v\n%s", pods.Items, &out)
	}
	if n1, _ := c.client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); !n1.Spec.Unschedulable {
		t.Fatal("n1 not cordoned")
	}
	pdb, err := c.client.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || pdb.Status.ExpectedPods != 2 || pdb.Status.DesiredHealthy != 1 || pdb.Status.DisruptionsAllowed != 0 {
		t.Fatalf("budget after the eviction: %v %+v", err, pdb.Status)
	}

	// The other web pod may not go now: the budget needs 1 healthy and has 1.
	err = c.client.PolicyV1().Evictions("default").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "web-2", Namespace: "default"}})
	st := statusOf(t, err)
	if st.Code != 429 || st.Reason != metav1.StatusReasonTooManyRequests || st.Message != "Cannot evict pod as it would violate the pod's disruption budget." ||
		len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != policyv1.DisruptionBudgetCause ||
		st.Details.Causes[0].Message != "The disruption budget web needs 1 healthy pods and has 1 currently" {
		t.Fatalf("eviction past the budget: %+v", st)
	}
}

func TestDrainBlockedByBudget(t *testing.T) {
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.client.CoreV1().Nodes().Create(ctx, node("n1", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	startPod(t, c.client, runningPod("guarded", "n1", map[string]string{"app": "g"}))
	if _, err := c.client.PolicyV1().PodDisruptionBudgets("default").Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "g"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "g"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	o := drainOptions(&out)
	o.Timeout = time.Second
	_, err := drain.Drain(ctx, c.client, "n1", o)
	if err == nil || !strings.Contains(out.String(), `evicting default/guarded: Cannot evict pod as it would violate the pod's disruption budget. (The disruption budget g needs 1 healthy pods and has 1 currently); asking again in 50ms`) {
		t.Fatalf("drain past a budget: %v\n%s", err, &out)
	}
	if p, err := c.client.CoreV1().Pods("default").Get(ctx, "guarded", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("guarded pod: %v %+v", err, p)
	}
	// A pod that is not running yet is not protected.
	if _, err := c.client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pending", Labels: map[string]string{"app": "g"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i:1"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.client.PolicyV1().Evictions("default").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default"}}); err != nil {
		t.Fatalf("evicting a pending pod: %v", err)
	}
	if _, err := c.client.CoreV1().Pods("default").Get(ctx, "pending", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("evicted unscheduled pod: %v", err)
	}
	err = c.client.PolicyV1().Evictions("default").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "nope", Namespace: "default"}})
	if st := statusOf(t, err); st.Code != 404 || st.Message != `pods "nope" not found` {
		t.Fatalf("evicting a missing pod: %+v", st)
	}
}

// TestConcurrentWritersAndWatchers: every write is seen once, in
// resourceVersion order, by each of several watchers, whatever the
// interleaving of writers.
func TestConcurrentWritersAndWatchers(t *testing.T) {
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cms := c.client.CoreV1().ConfigMaps("default")
	l, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const writers, writes, watchers = 8, 20, 3
	var ws []watch.Interface
	for range watchers {
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ws = append(ws, w)
	}
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "cm-" + strconv.Itoa(i)
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Error(err)
				return
			}
			for j := 1; j < writes; j++ {
				if _, err := cms.Patch(ctx, name, types.MergePatchType, []byte(`{"data":{"n":"`+strconv.Itoa(j)+`"}}`), metav1.PatchOptions{}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, w := range ws {
		last := 0
		for n := 0; n < writers*writes; n++ {
			select {
			case e := <-w.ResultChan():
				rv, _ := strconv.Atoi(e.Object.(*corev1.ConfigMap).ResourceVersion)
				if rv <= last {
					t.Fatalf("event %d: resourceVersion %d after %d", n, rv, last)
				}
				last = rv
			case <-ctx.Done():
				t.Fatalf("%d events of %d", n, writers*writes)
			}
		}
	}
}

// TestWatchCompactionAndBookmarks: a watch from a change no longer kept
// ends with 410 Expired, as after an etcd compaction; a watch allowing
// bookmarks gets them with the current resourceVersion.
func TestWatchCompactionAndBookmarks(t *testing.T) {
	c := newCluster(t)
	kubelite.SetKeptEvents(c.store, 10)
	kubelite.SetBookmarkInterval(c.store, 50*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cms := c.client.CoreV1().ConfigMaps("default")
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var last *corev1.ConfigMap
	for i := range 20 {
		if last, err = cms.Patch(ctx, "c", types.MergePatchType, []byte(`{"data":{"n":"`+strconv.Itoa(i)+`"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	e := <-w.ResultChan()
	st, ok := e.Object.(*metav1.Status)
	if e.Type != watch.Error || !ok || st.Code != 410 || st.Reason != metav1.StatusReasonExpired || !strings.HasPrefix(st.Message, "too old resource version: "+first.ResourceVersion+" (") {
		t.Fatalf("watch from a compacted resourceVersion: %v %+v", e.Type, e.Object)
	}
	if _, open := <-w.ResultChan(); open {
		t.Fatal("watch still open after its error")
	}
	w, err = cms.Watch(ctx, metav1.ListOptions{ResourceVersion: last.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if e := <-w.ResultChan(); e.Type != watch.Bookmark || e.Object.(*corev1.ConfigMap).ResourceVersion != last.ResourceVersion {
		t.Fatalf("bookmark: %v %+v", e.Type, e.Object)
	}
}
