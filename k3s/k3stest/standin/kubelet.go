package standin

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// nodeLeaseSeconds is the kubelet's default node lease duration.
const nodeLeaseSeconds = 40

// renewLease creates or renews kube-node-lease/<node>, owned by the Node,
// as the kubelet's node lease controller does.
func (n *nodeAgent) renewLease(ctx context.Context, node *corev1.Node) error {
	leases := n.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, n.spec.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name:      n.spec.Name,
				Namespace: corev1.NamespaceNodeLease,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
				}},
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(n.spec.Name),
				LeaseDurationSeconds: ptr.To[int32](nodeLeaseSeconds),
				RenewTime:            &now,
			},
		}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("standin: node lease: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("standin: node lease: %w", err)
	}
	lease.Spec.HolderIdentity = ptr.To(n.spec.Name)
	lease.Spec.LeaseDurationSeconds = ptr.To[int32](nodeLeaseSeconds)
	lease.Spec.RenewTime = &now
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("standin: node lease: %w", err)
	}
	return nil
}

// runPods is the fake kubelet: every second it marks this node's pending
// pods Running (all containers started and ready) and deletes its
// terminating pods with grace period 0, as a kubelet does once their
// containers have stopped. Enough for kubectl drain and for pods created
// with spec.nodeName (there is no scheduler).
func (n *nodeAgent) runPods(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if err := n.syncPods(ctx); err != nil && ctx.Err() == nil {
			n.log.Debug("pod sync failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (n *nodeAgent) syncPods(ctx context.Context) error {
	pods, err := n.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n.spec.Name).String(),
	})
	if err != nil {
		return err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		api := n.client.CoreV1().Pods(p.Namespace)
		switch {
		case p.DeletionTimestamp != nil:
			err := api.Delete(ctx, p.Name, metav1.DeleteOptions{
				GracePeriodSeconds: ptr.To[int64](0),
				Preconditions:      &metav1.Preconditions{UID: &p.UID},
			})
			if err == nil {
				n.log.Info("Deleted terminating pod", "pod", p.Namespace+"/"+p.Name)
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

func (n *nodeAgent) setRunning(p *corev1.Pod) {
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.HostIP = n.spec.IP.String()
	p.Status.HostIPs = []corev1.HostIP{{IP: n.spec.IP.String()}}
	if p.Spec.HostNetwork {
		p.Status.PodIP = n.spec.IP.String()
		p.Status.PodIPs = []corev1.PodIP{{IP: n.spec.IP.String()}}
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
			Started: ptr.To(true),
			State:   corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
}

// notReadyTaint is the taint new Nodes get until the node lifecycle
// controller (absent here) sees them Ready.
const notReadyTaint = "node.kubernetes.io/not-ready"

// untaintReadyNodes removes the not-ready taint from Ready nodes, the part
// of kube-controller-manager's node lifecycle controller tests notice.
// Servers run it with the admin client.
func untaintReadyNodes(ctx context.Context, client kubernetes.Interface) error {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		ready := false
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		var kept []corev1.Taint
		for _, t := range node.Spec.Taints {
			if t.Key != notReadyTaint {
				kept = append(kept, t)
			}
		}
		if !ready || len(kept) == len(node.Spec.Taints) {
			continue
		}
		node.Spec.Taints = kept
		if _, err := client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}
