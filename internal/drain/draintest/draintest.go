// Package draintest holds the drain scenarios that package drain's tests
// and the parity test against k8s.io/kubectl/pkg/drain (in the module
// sandbox/kubelite/clienttest) both run, so that the two agree on one
// list: each scenario seeds a node's pods, drains it with some options
// and says which pods go and which refusals stop the drain.
package draintest

import (
	"context"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/openctl/openctl/internal/drain"
)

// Node is the node every scenario drains; Other is a node it leaves
// alone.
const (
	Node  = "n1"
	Other = "n2"
)

// A Pod is one pod a scenario places, described by what the drain looks
// at.
type Pod struct {
	Name string
	// Node is where it runs: Node when empty.
	Node string
	// Controller is the kind of its controller: "ReplicaSet",
	// "DaemonSet", "GoneDaemonSet" (a DaemonSet that does not exist), or
	// "" for none.
	Controller string
	EmptyDir   bool
	Mirror     bool
	Finished   bool
	// Guarded puts it under a PodDisruptionBudget that allows no
	// disruption.
	Guarded bool
}

// A Scenario is a node's pods, drain options, and the outcome.
type Scenario struct {
	Name    string
	Pods    []Pod
	Options drain.Options
	// Evicted are the pods the drain deletes (namespace/name, sorted).
	Evicted []string
	// Refused are the refusals that stop the drain before it evicts
	// anything; nil when it starts.
	Refused map[drain.Reason][]string
	// Fails says the drain starts but cannot finish (a budget holds a
	// pod past the timeout).
	Fails bool
}

// mixed is a node with one pod of every sort.
var mixed = []Pod{
	{Name: "web-1", Controller: "ReplicaSet"},
	{Name: "web-2", Node: Other, Controller: "ReplicaSet"},
	{Name: "ds-1", Controller: "DaemonSet"},
	{Name: "static", Mirror: true},
	{Name: "done", Finished: true},
	{Name: "done-scratch", Finished: true, EmptyDir: true},
	{Name: "cache", Controller: "ReplicaSet", EmptyDir: true},
	{Name: "bare"},
	{Name: "bare-scratch", EmptyDir: true},
}

// zero is a grace period of 0: the API deletes an evicted pod at once,
// as a kubelet would once its containers stopped.
var zero = int64(0)

// Scenarios are the drains both implementations run.
func Scenarios() []Scenario {
	return []Scenario{
		{
			Name: "defaults refuse what would be lost", Pods: mixed,
			Options: drain.Options{GracePeriod: &zero},
			Refused: map[drain.Reason][]string{
				drain.DaemonSetPods:    {"default/ds-1"},
				drain.LocalStoragePods: {"default/bare-scratch", "default/cache"},
				drain.UnmanagedPods:    {"default/bare"},
			},
		},
		{
			Name: "ignoring DaemonSets still refuses data and unmanaged pods", Pods: mixed,
			Options: drain.Options{GracePeriod: &zero, IgnoreDaemonSets: true},
			Refused: map[drain.Reason][]string{
				drain.LocalStoragePods: {"default/bare-scratch", "default/cache"},
				drain.UnmanagedPods:    {"default/bare"},
			},
		},
		{
			Name: "everything allowed leaves DaemonSet and mirror pods", Pods: mixed,
			Options: drain.Options{GracePeriod: &zero, IgnoreDaemonSets: true, DeleteEmptyDirData: true, Force: true},
			Evicted: []string{"default/bare", "default/bare-scratch", "default/cache", "default/done", "default/done-scratch", "default/web-1"},
		},
		{
			Name:    "managed and finished pods go by default",
			Pods:    []Pod{{Name: "web-1", Controller: "ReplicaSet"}, {Name: "done", Finished: true}, {Name: "static", Mirror: true}},
			Options: drain.Options{GracePeriod: &zero},
			Evicted: []string{"default/done", "default/web-1"},
		},
		{
			Name:    "a pod whose DaemonSet is gone needs force",
			Pods:    []Pod{{Name: "orphan", Controller: "GoneDaemonSet"}, {Name: "web-1", Controller: "ReplicaSet"}},
			Options: drain.Options{GracePeriod: &zero, IgnoreDaemonSets: true},
			Refused: map[drain.Reason][]string{drain.OrphanedDaemonSetPods: {"default/orphan"}},
		},
		{
			Name:    "force evicts a pod whose DaemonSet is gone",
			Pods:    []Pod{{Name: "orphan", Controller: "GoneDaemonSet"}, {Name: "web-1", Controller: "ReplicaSet"}},
			Options: drain.Options{GracePeriod: &zero, IgnoreDaemonSets: true, Force: true},
			Evicted: []string{"default/orphan", "default/web-1"},
		},
		{
			Name:    "a disruption budget holds its pod past the timeout",
			Pods:    []Pod{{Name: "guarded", Controller: "ReplicaSet", Guarded: true}, {Name: "web-1", Controller: "ReplicaSet"}},
			Options: drain.Options{GracePeriod: &zero, Timeout: 2 * time.Second},
			Evicted: []string{"default/web-1"},
			Fails:   true,
		},
	}
}

// Seed creates the scenario's nodes, controllers, budget and pods, each
// pod reported running and ready as a kubelet would.
func Seed(t testing.TB, cs kubernetes.Interface, s Scenario) {
	t.Helper()
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("seeding %q: %v", s.Name, err)
		}
	}
	for _, n := range []string{Node, Other} {
		must(cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}))
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	rs, err := cs.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs"},
		Spec: appsv1.ReplicaSetSpec{Selector: sel}}, metav1.CreateOptions{})
	must(rs, err)
	ds, err := cs.AppsV1().DaemonSets("default").Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds"},
		Spec: appsv1.DaemonSetSpec{Selector: sel}}, metav1.CreateOptions{})
	must(ds, err)
	must(cs.PolicyV1().PodDisruptionBudgets("default").Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "guard"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: new(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"guarded": "yes"}}}}, metav1.CreateOptions{}))
	owner := func(kind, name string, uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: new(true)}}
	}
	for _, p := range s.Pods {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: "default", Labels: map[string]string{"app": "x"}},
			Spec: corev1.PodSpec{NodeName: p.Node, Containers: []corev1.Container{{Name: "c", Image: "nginx:1"}}}}
		if pod.Spec.NodeName == "" {
			pod.Spec.NodeName = Node
		}
		switch p.Controller {
		case "ReplicaSet":
			pod.OwnerReferences = owner("ReplicaSet", rs.Name, rs.UID)
		case "DaemonSet":
			pod.OwnerReferences = owner("DaemonSet", ds.Name, ds.UID)
		case "GoneDaemonSet":
			pod.OwnerReferences = owner("DaemonSet", "gone", "0f0f0f0f-0000-4000-8000-000000000000")
		}
		if p.EmptyDir {
			pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}
		if p.Mirror {
			pod.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "static"}
		}
		if p.Guarded {
			pod.Labels["guarded"] = "yes"
		}
		created, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		must(created, err)
		created.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		if p.Finished {
			created.Status = corev1.PodStatus{Phase: corev1.PodSucceeded}
		}
		must(cs.CoreV1().Pods("default").UpdateStatus(ctx, created, metav1.UpdateOptions{}))
	}
}

// Pods lists the pods of the scenario's cluster (namespace/name, sorted)
// that are not terminating.
func Pods(t testing.TB, cs kubernetes.Interface) []string {
	t.Helper()
	l, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Namespace+"/"+p.Name)
		}
	}
	sort.Strings(names)
	return names
}
