// Package drain cordons a Kubernetes node and evicts its pods through
// client-go alone, the way `kubectl drain` does, without the weight of
// k8s.io/kubectl (its command tree, cli-runtime and kustomize).
//
// [Drain] lists the node's pods and sorts each one as kubectl's drain
// does, in the same order:
//
//   - a pod a DaemonSet controls is left, with a warning, when
//     [Options.IgnoreDaemonSets] is set and refused otherwise; one whose
//     DaemonSet is gone is evicted with [Options.Force] and refused
//     without it;
//   - a mirror pod (a static pod's image in the API) is left silently;
//   - a pod with an emptyDir volume is refused unless
//     [Options.DeleteEmptyDirData] (its data is lost);
//   - a pod no controller manages is refused unless [Options.Force] (it
//     is not recreated anywhere);
//   - a pod that has finished (Succeeded or Failed) always goes.
//
// Refusals are all reported at once, grouped by reason and naming each
// pod as namespace/name, and nothing is evicted then. Otherwise every pod
// to go is evicted through policy/v1 at once; an eviction a
// PodDisruptionBudget refuses (429) is asked again on a backoff until the
// drain's timeout, and the drain then waits for each evicted pod to be
// deleted (or replaced by a pod of another UID). [Cordon] and [Uncordon]
// set the node's spec.unschedulable, writing only when it changes.
//
// A parity test in the module sandbox/kubelite/clienttest runs the same
// scenarios through k8s.io/kubectl/pkg/drain and this package and
// expects the same pods evicted and the same refusals.
package drain
