package kubelite

import (
	"fmt"
	"net/http"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// deletionTimeout is how long a pod evicted but not yet deleted stays out
// of a budget's healthy count (the disruption controller's DeletionTimeout).
const deletionTimeout = 2 * time.Minute

// evict serves POST pods/name/eviction as the real eviction subresource
// does, computing each matching budget's status first as the disruption
// controller would.
func (h *handler) evict(w http.ResponseWriter, r *http.Request, req *request, dryRun bool) {
	var ev policyv1.Eviction
	if err := decodeInto(r, &ev); err != nil {
		writeError(w, err)
		return
	}
	if ev.Name != req.name {
		writeError(w, apierrors.NewBadRequest("name in URL does not match name in Eviction object"))
		return
	}
	opts := ev.DeleteOptions
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	s := h.store
	s.mu.Lock()
	st, err := s.evict(req.namespace, req.name, opts, dryRun)
	s.mu.Unlock()
	if err != nil {
		writeError(w, err)
		return
	}
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	if st.Code == 0 {
		st.Code = http.StatusCreated
	}
	writeJSON(w, int(st.Code), st)
}

func (s *Store) evict(namespace, name string, opts *metav1.DeleteOptions, dryRun bool) (*metav1.Status, error) {
	podRes, pdbRes := byGVR[core("pods")], byGVR[gv("policy", "v1", "poddisruptionbudgets")]
	obj, err := s.get(podRes, namespace, name)
	if err != nil {
		return nil, err
	}
	pod := obj.(*corev1.Pod)
	ok := &metav1.Status{Status: metav1.StatusSuccess}
	if p := pod.Status.Phase; p == corev1.PodSucceeded || p == corev1.PodFailed || p == corev1.PodPending || pod.DeletionTimestamp != nil {
		return ok, s.evictPod(pod, opts, dryRun)
	}
	var pdbs []*policyv1.PodDisruptionBudget
	for _, o := range s.list(pdbRes, namespace) {
		pdb := o.(*policyv1.PodDisruptionBudget)
		if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil && pdb.Spec.Selector != nil && sel.Matches(labels.Set(pod.Labels)) {
			pdbs = append(pdbs, pdb)
		}
	}
	switch len(pdbs) {
	case 0:
		return ok, s.evictPod(pod, opts, dryRun)
	case 1:
	default:
		return &metav1.Status{Status: metav1.StatusFailure, Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.", Code: 500}, nil
	}
	pdb := pdbs[0].DeepCopy()
	pdb.Status = s.budgetStatus(pdb, time.Now())
	if !podReady(pod) {
		if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow ||
			pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0 {
			return ok, s.evictPod(pod, opts, dryRun)
		}
	}
	if pdb.Status.DisruptionsAllowed <= 0 {
		if !dryRun {
			s.putBudgetStatus(pdb)
		}
		e := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		msg := fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)
		if c := meta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition); c != nil && c.Reason == policyv1.SyncFailedReason {
			msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently because it failed sync: %s", pdb.Name, c.Message)
		}
		e.ErrStatus.Details.Causes = append(e.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: msg})
		return nil, e
	}
	if dryRun {
		return ok, nil
	}
	pdb.Status.DisruptionsAllowed--
	if pdb.Status.DisruptionsAllowed == 0 {
		setAllowedCondition(pdb, policyv1.InsufficientPodsReason, "")
	}
	if pdb.Status.DisruptedPods == nil {
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
	}
	pdb.Status.DisruptedPods[pod.Name] = metav1.Now()
	s.putBudgetStatus(pdb)
	return ok, s.evictPod(pod, opts, false)
}

func (s *Store) putBudgetStatus(pdb *policyv1.PodDisruptionBudget) {
	_, _ = s.update(byGVR[gv("policy", "v1", "poddisruptionbudgets")], pdb.Namespace, pdb.Name, "status", false, replaceWith(pdb, false))
}

// evictPod marks the pod as a disruption target, then deletes it.
func (s *Store) evictPod(pod *corev1.Pod, opts *metav1.DeleteOptions, dryRun bool) error {
	podRes := byGVR[core("pods")]
	if !dryRun {
		p := pod.DeepCopy()
		cond := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: metav1.Now()}
		found := false
		for i, c := range p.Status.Conditions {
			if c.Type == cond.Type {
				found = true
				if c.Status != cond.Status {
					p.Status.Conditions[i] = cond
				}
			}
		}
		if !found {
			p.Status.Conditions = append(p.Status.Conditions, cond)
		}
		if _, err := s.update(podRes, pod.Namespace, pod.Name, "status", false, replaceWith(p, false)); err != nil {
			return err
		}
	}
	_, err := s.delete(podRes, pod.Namespace, pod.Name, opts, dryRun)
	return err
}

func podReady(pod *corev1.Pod) bool { return hasCondition(pod, corev1.PodReady) }

// budgetStatus is the status the disruption controller computes for pdb.
func (s *Store) budgetStatus(pdb *policyv1.PodDisruptionBudget, now time.Time) policyv1.PodDisruptionBudgetStatus {
	st := policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, Conditions: pdb.Status.Conditions}
	var pods []*corev1.Pod
	if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil && pdb.Spec.Selector != nil {
		for _, o := range s.list(byGVR[core("pods")], pdb.Namespace) {
			if p := o.(*corev1.Pod); sel.Matches(labels.Set(p.Labels)) {
				pods = append(pods, p)
			}
		}
	}
	expected, desired, err := s.expectedPods(pdb, pods)
	if err != nil {
		st.DisruptionsAllowed = 0
		tmp := &policyv1.PodDisruptionBudget{Status: st}
		setAllowedCondition(tmp, policyv1.SyncFailedReason, err.Error())
		return tmp.Status
	}
	disrupted := map[string]metav1.Time{}
	for _, p := range pods {
		if t, ok := pdb.Status.DisruptedPods[p.Name]; ok && p.DeletionTimestamp == nil && t.Add(deletionTimeout).After(now) {
			disrupted[p.Name] = t
		}
	}
	for _, p := range pods {
		if _, gone := disrupted[p.Name]; p.DeletionTimestamp == nil && !gone && podReady(p) {
			st.CurrentHealthy++
		}
	}
	if len(disrupted) > 0 {
		st.DisruptedPods = disrupted
	}
	st.ExpectedPods, st.DesiredHealthy = expected, desired
	if st.DisruptionsAllowed = st.CurrentHealthy - desired; st.DisruptionsAllowed < 0 {
		st.DisruptionsAllowed = 0
	}
	tmp := &policyv1.PodDisruptionBudget{Status: st}
	if st.DisruptionsAllowed > 0 {
		setAllowedCondition(tmp, policyv1.SufficientPodsReason, "")
	} else {
		setAllowedCondition(tmp, policyv1.InsufficientPodsReason, "")
	}
	return tmp.Status
}

func setAllowedCondition(pdb *policyv1.PodDisruptionBudget, reason, msg string) {
	status := metav1.ConditionFalse
	if reason == policyv1.SufficientPodsReason {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&pdb.Status.Conditions, metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: status, Reason: reason, Message: msg, ObservedGeneration: pdb.Status.ObservedGeneration})
}

// expectedPods is getExpectedPodCount of the disruption controller.
func (s *Store) expectedPods(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (expected, desired int32, err error) {
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		if expected, err = s.expectedScale(pods); err != nil {
			return 0, 0, err
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, err
		}
		return expected, max(expected-int32(n), 0), nil
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int:
		return int32(len(pods)), pdb.Spec.MinAvailable.IntVal, nil
	case pdb.Spec.MinAvailable != nil:
		if expected, err = s.expectedScale(pods); err != nil {
			return 0, 0, err
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
		return expected, int32(n), err
	}
	return 0, 0, nil
}

// expectedScale adds up the scale of the pods' controllers (unmanaged
// pods do not count), looking through ReplicaSets to their Deployment.
func (s *Store) expectedScale(pods []*corev1.Pod) (int32, error) {
	scales := map[string]int32{}
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil {
			continue
		}
		uid, scale, ok := s.controllerScale(ref, p.Namespace)
		if !ok {
			return 0, fmt.Errorf("found no controllers for pod %q", p.Name)
		}
		scales[uid] = scale
	}
	var n int32
	for _, v := range scales {
		n += v
	}
	return n, nil
}

func (s *Store) controllerScale(ref *metav1.OwnerReference, namespace string) (string, int32, bool) {
	find := func(res string, name string) runtime.Object {
		o, err := s.get(byGVR[gv("apps", "v1", res)], namespace, name)
		if err != nil || metaOf(o).GetUID() != ref.UID {
			return nil
		}
		return o
	}
	replicas := func(r *int32) int32 {
		if r == nil {
			return 1
		}
		return *r
	}
	switch ref.Kind {
	case "ReplicaSet":
		rs, _ := find("replicasets", ref.Name).(*appsv1.ReplicaSet)
		if rs == nil {
			return "", 0, false
		}
		if d := metav1.GetControllerOf(rs); d != nil && d.Kind == "Deployment" {
			if o, err := s.get(byGVR[apps("deployments")], namespace, d.Name); err == nil && metaOf(o).GetUID() == d.UID {
				return string(d.UID), replicas(o.(*appsv1.Deployment).Spec.Replicas), true
			}
			return "", 0, false
		}
		return string(rs.UID), replicas(rs.Spec.Replicas), true
	case "StatefulSet":
		if ss, _ := find("statefulsets", ref.Name).(*appsv1.StatefulSet); ss != nil {
			return string(ss.UID), replicas(ss.Spec.Replicas), true
		}
	}
	return "", 0, false
}
