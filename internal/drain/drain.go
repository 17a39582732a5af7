package drain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/openctl/openctl/backoff"
)

// Options says which pods a drain may evict and how long it may take;
// the zero value is kubectl drain's defaults without a timeout.
type Options struct {
	// Timeout bounds the whole drain, the evictions and the wait for the
	// pods' deletion; zero leaves only the context to bound it.
	Timeout time.Duration
	// GracePeriod overrides each evicted pod's termination grace period,
	// in seconds; nil leaves each pod its own.
	GracePeriod *int64
	// Force evicts pods no controller manages, and pods whose DaemonSet
	// is gone: nothing recreates them.
	Force bool
	// DeleteEmptyDirData evicts pods with an emptyDir volume: the
	// volume's data is lost.
	DeleteEmptyDirData bool
	// IgnoreDaemonSets leaves DaemonSet pods on the node instead of
	// refusing the drain (their controller would only recreate them).
	IgnoreDaemonSets bool
	// Retry spaces the requests for an eviction a PodDisruptionBudget
	// refuses, until the drain's timeout; the zero Policy asks every
	// 5 s, as kubectl does.
	Retry backoff.Policy
	// Poll is how often an evicted pod is checked for deletion; zero
	// means every second, as kubectl does.
	Poll time.Duration
	// Warn, if not nil, is told what the drain leaves or loses and each
	// eviction refused and asked again. It may be called from several
	// goroutines at once.
	Warn func(msg string)
}

// Reason is why a pod on the node keeps the drain from starting.
type Reason string

// The reasons a drain refuses to start, each with the option that lifts
// it.
const (
	// DaemonSetPods: pods a DaemonSet controls, without IgnoreDaemonSets.
	DaemonSetPods Reason = "DaemonSet-managed pods (ignoreDaemonSets leaves them)"
	// OrphanedDaemonSetPods: pods whose DaemonSet is gone, without Force.
	OrphanedDaemonSetPods Reason = "pods whose DaemonSet is gone (force evicts them)"
	// LocalStoragePods: pods with an emptyDir volume, without
	// DeleteEmptyDirData.
	LocalStoragePods Reason = "pods with local storage (deleteEmptyDirData evicts them, losing the data)"
	// UnmanagedPods: pods no controller manages, without Force.
	UnmanagedPods Reason = "pods that declare no controller (force evicts them, and nothing recreates them)"
)

// RefusedError is a drain that did not start: the node holds pods its
// Options do not allow evicting. Nothing was evicted.
type RefusedError struct {
	// Pods lists, for each reason, the pods it holds back as
	// namespace/name, sorted.
	Pods map[Reason][]string
}

func (e *RefusedError) Error() string {
	reasons := make([]string, 0, len(e.Pods))
	for r := range e.Pods {
		reasons = append(reasons, string(r))
	}
	sort.Strings(reasons)
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("cannot evict %s: %s", r, strings.Join(e.Pods[Reason(r)], ", "))
	}
	return strings.Join(parts, "; ")
}

// Cordon marks node name unschedulable.
func Cordon(ctx context.Context, cs kubernetes.Interface, name string) error {
	return setUnschedulable(ctx, cs, name, true)
}

// Uncordon marks node name schedulable again.
func Uncordon(ctx context.Context, cs kubernetes.Interface, name string) error {
	return setUnschedulable(ctx, cs, name, false)
}

// setUnschedulable writes the node's spec.unschedulable when it differs
// from v, with the patch kubectl sends (null removes the field).
func setUnschedulable(ctx context.Context, cs kubernetes.Interface, name string, v bool) error {
	nodes := cs.CoreV1().Nodes()
	n, err := nodes.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if n.Spec.Unschedulable == v {
		return nil
	}
	patch := `{"spec":{"unschedulable":null}}`
	if v {
		patch = `{"spec":{"unschedulable":true}}`
	}
	_, err = nodes.Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// errTimeout is the cause of a drain's context ending at its Timeout.
var errTimeout = errors.New("the drain's timeout")

// maxInFlight bounds the evictions a drain has under way at once.
const maxInFlight = 16

// Drain evicts the pods of node name that its Options allow and waits
// until they are deleted. It refuses with a *RefusedError, evicting
// nothing, when the node holds a pod they do not allow. It returns the
// pods evicted (namespace/name, sorted); on an error, those whose
// eviction was accepted. Drain does not cordon the node: call Cordon
// first, or the scheduler may place new pods on it.
func Drain(ctx context.Context, cs kubernetes.Interface, name string, o Options) ([]string, error) {
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Timeout, errTimeout)
		defer cancel()
	}
	pods, err := nodePods(ctx, cs, name)
	if err != nil {
		return nil, err
	}
	var (
		evict   []corev1.Pod
		refused = map[Reason][]string{}
	)
	for _, p := range pods {
		keep, reason, err := o.sort(ctx, cs, &p)
		switch {
		case err != nil:
			return nil, err
		case reason != "":
			refused[reason] = append(refused[reason], podName(&p))
		case !keep:
			evict = append(evict, p)
		}
	}
	if len(refused) > 0 {
		for _, ps := range refused {
			sort.Strings(ps)
		}
		return nil, &RefusedError{Pods: refused}
	}

	var (
		mu      sync.Mutex
		evicted []string
		errs    []error
		wg      sync.WaitGroup
		slots   = make(chan struct{}, maxInFlight)
	)
	for _, p := range evict {
		wg.Go(func() {
			slots <- struct{}{}
			accepted, err := o.evict(ctx, cs, p)
			<-slots
			if accepted && err == nil {
				err = o.waitDeleted(ctx, cs, p)
			}
			mu.Lock()
			defer mu.Unlock()
			if accepted {
				evicted = append(evicted, podName(&p))
			}
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	sort.Strings(evicted)
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return evicted, errors.Join(errs...)
}

// nodePods lists the pods bound to node, in every namespace, a page at a
// time.
func nodePods(ctx context.Context, cs kubernetes.Interface, node string) ([]corev1.Pod, error) {
	opts := metav1.ListOptions{FieldSelector: "spec.nodeName=" + node, Limit: 500}
	var pods []corev1.Pod
	for {
		l, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the pods of node %s: %w", node, err)
		}
		pods = append(pods, l.Items...)
		if l.Continue == "" {
			return pods, nil
		}
		opts.Continue = l.Continue
	}
}

// sort decides for one pod, in kubectl's order: keep says it stays on
// the node, a Reason refuses the drain; err is a failed API read.
func (o *Options) sort(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod) (keep bool, reason Reason, err error) {
	finished := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	ctrl := metav1.GetControllerOf(p)
	if ctrl != nil && ctrl.APIVersion == "apps/v1" && ctrl.Kind == "DaemonSet" && !finished {
		_, err := cs.AppsV1().DaemonSets(p.Namespace).Get(ctx, ctrl.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && o.Force:
			o.warn("evicting %s: its DaemonSet %s is gone", podName(p), ctrl.Name)
			return false, "", nil
		case apierrors.IsNotFound(err):
			return false, OrphanedDaemonSetPods, nil
		case err != nil:
			return false, "", fmt.Errorf("pod %s: reading its DaemonSet: %w", podName(p), err)
		case !o.IgnoreDaemonSets:
			return false, DaemonSetPods, nil
		}
		o.warn("leaving %s: a DaemonSet manages it", podName(p))
		return true, "", nil
	}
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return true, "", nil
	}
	if finished {
		return false, "", nil
	}
	if slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.EmptyDir != nil }) {
		if !o.DeleteEmptyDirData {
			return false, LocalStoragePods, nil
		}
		o.warn("evicting %s: its emptyDir data is lost", podName(p))
	}
	if ctrl == nil {
		if !o.Force {
			return false, UnmanagedPods, nil
		}
		o.warn("evicting %s: no controller manages it, nothing recreates it", podName(p))
	}
	return false, "", nil
}

// evict asks for p's eviction until it is accepted, p is gone, or the
// drain's context ends; accepted says the API took it.
func (o *Options) evict(ctx context.Context, cs kubernetes.Interface, p corev1.Pod) (accepted bool, err error) {
	opts := &metav1.DeleteOptions{GracePeriodSeconds: o.GracePeriod}
	retry := o.Retry
	if retry.Initial <= 0 {
		retry = backoff.Policy{Initial: 5 * time.Second, Max: 5 * time.Second}
	}
	b := retry.Start()
	var last error
	for {
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}, DeleteOptions: opts}
		err := cs.PolicyV1().Evictions(p.Namespace).Evict(ctx, ev)
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) && p.DeletionTimestamp != nil:
			// Its namespace is going and the pod with it: nothing to
			// evict, only its deletion to wait for.
			return true, nil
		case apierrors.IsTooManyRequests(err),
			apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			last = err
			d := b.Next()
			o.warn("evicting %s: %s; asking again in %v", podName(&p), refusal(err), d)
			if backoff.Sleep(ctx, d) != nil {
				return false, o.ended(ctx, fmt.Sprintf("pod %s: eviction still refused", podName(&p)), last)
			}
			if fresh, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); err == nil {
				p = *fresh
			}
		default:
			if ctx.Err() != nil {
				return false, o.ended(ctx, fmt.Sprintf("pod %s: evicting it", podName(&p)), last)
			}
			return false, fmt.Errorf("pod %s: evicting it: %w", podName(&p), err)
		}
	}
}

// waitDeleted polls until p is gone or replaced by a pod of another UID.
func (o *Options) waitDeleted(ctx context.Context, cs kubernetes.Interface, p corev1.Pod) error {
	poll := o.Poll
	if poll <= 0 {
		poll = time.Second
	}
	for {
		cur, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err), err == nil && cur.UID != p.UID:
			return nil
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("pod %s: waiting for its deletion: %w", podName(&p), err)
		}
		if backoff.Sleep(ctx, poll) != nil {
			return o.ended(ctx, fmt.Sprintf("pod %s: evicted, still terminating", podName(&p)), nil)
		}
	}
}

// ended is the error of a step the drain's context ended: its timeout,
// or the caller's cancel; last is the refusal that kept it waiting.
func (o *Options) ended(ctx context.Context, what string, last error) error {
	msg := what
	if errors.Is(context.Cause(ctx), errTimeout) {
		msg += fmt.Sprintf(" when the drain's %v timeout ran out", o.Timeout)
	} else {
		msg += ": " + ctx.Err().Error()
	}
	if last != nil {
		msg += ": " + refusal(last)
	}
	return errors.New(msg)
}

// refusal is an eviction's refusal with the causes the API gave, which
// name the disruption budget.
func refusal(err error) string {
	msg := err.Error()
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Details != nil {
		for _, c := range st.Status().Details.Causes {
			if c.Message != "" && !strings.Contains(msg, c.Message) {
				msg += " (" + c.Message + ")"
			}
		}
	}
	return msg
}

func (o *Options) warn(format string, args ...any) {
	if o.Warn != nil {
		o.Warn(fmt.Sprintf(format, args...))
	}
}

func podName(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
