package clienttest

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/openctl/openctl/sandbox/kubelite/kubelitetest"
)

type cluster struct{ client *kubernetes.Clientset }

func newCluster(t *testing.T) *cluster { return &cluster{kubelitetest.Start(t, nil).Client} }

func ptr[T any](v T) *T { return &v }

// runningPod is a pod as the kubelet of node reports it running.
func runningPod(name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "nginx:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

func TestInformers(t *testing.T) {
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.client.CoreV1().Pods("default").Create(ctx, runningPod("before", "n1", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f := informers.NewSharedInformerFactory(c.client, 0)
	inf := f.Core().V1().Pods().Informer()
	events := make(chan string, 100)
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { events <- "add " + o.(*corev1.Pod).Name },
		UpdateFunc: func(_, o any) { events <- "update " + o.(*corev1.Pod).Name },
		DeleteFunc: func(o any) { events <- "delete " + o.(*corev1.Pod).Name },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	defer func() { cancel(); f.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	pods := c.client.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, runningPod("p", "n1", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Patch(ctx, "p", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"add before", "add p", "update p", "delete p"} {
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("informer event %q, want %q", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("no informer event %q", want)
		}
	}
	if p, err := f.Core().V1().Pods().Lister().Pods("default").Get("before"); err != nil || p.Name != "before" {
		t.Fatalf("lister: %v", err)
	}
}

func TestLeaderElection(t *testing.T) {
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type candidate struct {
		cancel  context.CancelFunc
		leading chan struct{}
		done    chan struct{}
	}
	start := func(id string) *candidate {
		cctx, ccancel := context.WithCancel(ctx)
		cd := &candidate{ccancel, make(chan struct{}), make(chan struct{})}
		lock := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Name: "lock", Namespace: "kube-system"}, Client: c.client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id}}
		go func() {
			defer close(cd.done)
			leaderelection.RunOrDie(cctx, leaderelection.LeaderElectionConfig{Lock: lock, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second,
				RetryPeriod: 100 * time.Millisecond, ReleaseOnCancel: true, Name: "test",
				Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) { close(cd.leading) }, OnStoppedLeading: func() {}}})
		}()
		return cd
	}
	a := start("a")
	select {
	case <-a.leading:
	case <-ctx.Done():
		t.Fatal("a did not lead")
	}
	b := start("b")
	lease, err := c.client.CoordinationV1().Leases("kube-system").Get(ctx, "lock", metav1.GetOptions{})
	if err != nil || *lease.Spec.HolderIdentity != "a" {
		t.Fatalf("lease: %v %+v", err, lease)
	}
	a.cancel() // a releases the lease; b takes it
	<-a.done
	select {
	case <-b.leading:
	case <-ctx.Done():
		t.Fatal("b did not lead after a released the lease")
	}
	lease, err = c.client.CoordinationV1().Leases("kube-system").Get(ctx, "lock", metav1.GetOptions{})
	if err != nil || *lease.Spec.HolderIdentity != "b" || *lease.Spec.LeaseTransitions != 1 {
		t.Fatalf("lease after the transition: %v %+v", err, lease.Spec)
	}
	b.cancel()
	<-b.done
}
