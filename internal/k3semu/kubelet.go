package k3semu

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// nodeLeaseSeconds is the kubelet's default node lease duration.
const nodeLeaseSeconds = 40

// renewLease creates or renews kube-node-lease/<node>, owned by the Node,
// as the kubelet's node lease controller does.
func (n *NodeAgent) renewLease(ctx context.Context, node *corev1.Node) error {
	leases := n.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, n.Spec.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name:      n.Spec.Name,
				Namespace: corev1.NamespaceNodeLease,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
				}},
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptrTo(n.Spec.Name),
				LeaseDurationSeconds: ptrTo[int32](nodeLeaseSeconds),
				RenewTime:            &now,
			},
		}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("node lease: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("node lease: %w", err)
	}
	lease.Spec.HolderIdentity = ptrTo(n.Spec.Name)
	lease.Spec.LeaseDurationSeconds = ptrTo[int32](nodeLeaseSeconds)
	lease.Spec.RenewTime = &now
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node lease: %w", err)
	}
	return nil
}

// RunPods is the fake kubelet: every interval it marks this node's pending
// pods Running (all containers started and ready) and deletes its
// terminating pods with grace period 0, as a kubelet does once their
// containers have stopped. Enough for kubectl drain and for pods created
// with spec.nodeName (there is no scheduler).
func (n *NodeAgent) RunPods(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := n.syncPods(ctx); err != nil && ctx.Err() == nil {
			n.Log.Debug("pod sync failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (n *NodeAgent) syncPods(ctx context.Context) error {
	// The field selector is what the Node authorizer lets a kubelet list;
	// the pods are checked here too.
	pods, err := n.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Spec.Name})
	if err != nil {
		return err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != n.Spec.Name {
			continue
		}
		api := n.Client.CoreV1().Pods(p.Namespace)
		switch {
		case p.DeletionTimestamp != nil:
			err := api.Delete(ctx, p.Name, metav1.DeleteOptions{
				GracePeriodSeconds: ptrTo[int64](0),
				Preconditions:      &metav1.Preconditions{UID: &p.UID},
			})
			if err == nil {
				n.Log.Info("Deleted terminating pod", "pod", p.Namespace+"/"+p.Name)
			} else if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return err
			}
		case p.Status.Phase == corev1.PodPending || p.Status.Phase == "":
			n.setRunning(p)
			if _, err := api.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return err
			}
		}
	}
	return nil
}

func (n *NodeAgent) setRunning(p *corev1.Pod) {
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.HostIP = n.Spec.IP.String()
	p.Status.HostIPs = []corev1.HostIP{{IP: n.Spec.IP.String()}}
	if p.Spec.HostNetwork {
		p.Status.PodIP = n.Spec.IP.String()
		p.Status.PodIPs = []corev1.PodIP{{IP: n.Spec.IP.String()}}
	}
	p.Status.StartTime = &now
	p.Status.Conditions = nil
	for _, c := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name:    c.Name,
			Image:   c.Image,
			ImageID: c.Image,
			Ready:   true,
			Started: ptrTo(true),
			State:   corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
}

// Taints the node lifecycle controller manages.
const (
	notReadyTaint    = "node.kubernetes.io/not-ready"
	unreachableTaint = "node.kubernetes.io/unreachable"
)

// DefaultNodeMonitorGracePeriod is kube-controller-manager's
// --node-monitor-grace-period since Kubernetes 1.32.
const DefaultNodeMonitorGracePeriod = 50 * time.Second

// NodeLifecycle does the part of kube-controller-manager's node lifecycle
// controller that tests notice (servers run it with the admin client every
// 10 s): a node whose Lease has not been renewed for grace gets Ready and
// its other conditions Unknown ("Kubelet stopped posting node status.")
// and the unreachable NoSchedule and NoExecute taints; a Ready node loses
// the not-ready and unreachable taints.
func NodeLifecycle(ctx context.Context, client kubernetes.Interface, grace time.Duration) error {
	leases, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	renewed := map[string]time.Time{}
	for _, l := range leases.Items {
		if l.Spec.RenewTime != nil {
			renewed[l.Name] = l.Spec.RenewTime.Time
		}
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	now := time.Now()
	for i := range nodes.Items {
		node := &nodes.Items[i]
		ready := corev1.ConditionStatus("")
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = c.Status
			}
		}
		if ready == "" {
			continue // not yet reported by its kubelet
		}
		last, ok := renewed[node.Name]
		if ok && now.Sub(last) > grace && ready == corev1.ConditionTrue {
			for j := range node.Status.Conditions {
				c := &node.Status.Conditions[j]
				c.Status = corev1.ConditionUnknown
				c.Reason = "NodeStatusUnknown"
				c.Message = "Kubelet stopped posting node status."
				c.LastTransitionTime = metav1.NewTime(now)
			}
			updated, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
			if err != nil {
				if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
					continue
				}
				return err
			}
			node = updated
			ready = corev1.ConditionUnknown
		}
		var taints []corev1.Taint
		for _, t := range node.Spec.Taints {
			if t.Key != notReadyTaint && t.Key != unreachableTaint {
				taints = append(taints, t)
			}
		}
		if ready != corev1.ConditionTrue {
			if ready == corev1.ConditionUnknown {
				for _, e := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
					taints = append(taints, corev1.Taint{Key: unreachableTaint, Effect: e, TimeAdded: timeAdded(node.Spec.Taints, unreachableTaint, e, now)})
				}
			} else {
				taints = node.Spec.Taints
			}
		}
		if sameTaints(taints, node.Spec.Taints) {
			continue
		}
		node.Spec.Taints = taints
		if _, err := client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// timeAdded keeps an existing taint's TimeAdded.
func timeAdded(taints []corev1.Taint, key string, effect corev1.TaintEffect, now time.Time) *metav1.Time {
	for _, t := range taints {
		if t.Key == key && t.Effect == effect && t.TimeAdded != nil {
			return t.TimeAdded
		}
	}
	if effect == corev1.TaintEffectNoExecute {
		return ptrTo(metav1.NewTime(now))
	}
	return nil
}

func sameTaints(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].MatchTaint(&b[i]) || a[i].Value != b[i].Value {
			return false
		}
	}
	return true
}

// ptrTo returns a pointer to v.
func ptrTo[T any](v T) *T { return &v }
