// Package kubelite is an in-memory Kubernetes API server for openctl's
// sandbox: each simulated k3s server serves the API of its cluster's Store
// through NewHandler, and client-go, kubectl and k8s.io/kubectl/pkg/drain
// use it as they would a real kube-apiserver.
//
// The wire format is the real one: k8s.io/api objects as JSON (or YAML),
// metav1 lists, Status errors with the real reasons, messages and codes,
// chunked watch streams, meta.k8s.io/v1 Tables for kubectl's server-side
// printing, and legacy discovery (clients asking for aggregated discovery
// with a fallback get the plain documents, as from an older server).
//
// A Store holds what etcd would: objects of the served kinds (see
// resources.go) by namespace and name, one cluster-wide resourceVersion
// counter, and the recent changes for watches. Verbs follow the generic
// registry: create (generateName, name validation, uid, creationTimestamp,
// generation), update with resourceVersion preconditions and the
// spec/status split of the status subresource, merge, strategic-merge and
// JSON patches, delete with preconditions, finalizers and the graceful
// deletion of pods (a pod deleted with a grace period stays, terminating,
// until deleted again with grace 0: there is no kubelet), list with label
// and field selectors and limit/continue, watch from a resourceVersion with
// bookmarks and sendInitialEvents (client-go's watch-list). The pods/eviction
// subresource computes the matching PodDisruptionBudget's status as the
// disruption controller would, then allows or refuses (429) the eviction.
//
// Not simulated: controllers (no Deployment creates ReplicaSets, no
// scheduler, no garbage collection: propagationPolicy is ignored and a
// deleted namespace takes its objects with it at once), admission beyond
// the namespace lifecycle and a few pod defaults, server-side apply and
// managedFields, protobuf and CBOR, OpenAPI documents, and authorization:
// every authenticated user may do everything (RBAC objects are stored, not
// enforced). Anonymous requests get 401 on every path, as with
// --anonymous-auth=false.
package kubelite
