// Package kubelite is an in-memory Kubernetes API server for openctl's
// sandbox: each simulated k3s server serves the API of its cluster's Store
// through NewHandler, and client-go, kubectl and k8s.io/kubectl/pkg/drain
// use it as they would a real kube-apiserver.
//
// # Wire format
//
// The real one: k8s.io/api objects as JSON, YAML or protobuf (client-go's
// typed clients ask for protobuf first), metav1 lists, Status errors with
// the real reasons, messages, details and codes (router errors such as 405
// and 415 included), chunked JSON and length-delimited protobuf watch
// streams, meta.k8s.io/v1 Tables for kubectl's server-side printing (the
// real printers' columns and cells for nodes, pods, namespaces, leases,
// configmaps, secrets and poddisruptionbudgets; NAME and AGE otherwise),
// PartialObjectMetadata, and legacy discovery: clients asking for
// aggregated discovery with a fallback get the plain documents, which
// client-go and kubectl accept. Answers were compared with those of the
// real kube-apiserver v1.37.2 for the same requests: TestDifferential
// sends a sequence of requests to both (the real one run by the k3s
// stand-in, $K3S_STANDIN_BINARY) and compares the answers.
//
// # Store and verbs
//
// A Store holds what etcd would: objects of the served kinds (resources.go)
// by namespace and name, one cluster-wide resourceVersion counter, and the
// last changes for watches. The verbs follow the generic registry:
//
//   - create: generateName, name validation, uid, creationTimestamp,
//     generation for kinds with a spec, the status reset of kinds with a
//     status subresource, the defaults and admission changes clients see
//     (pods: spec defaults, requests from limits, tolerations, the service
//     account and its token volume, Pending phase and QoS class; nodes: the
//     not-ready taint; namespaces: label, finalizer, Active phase; apps/v1
//     defaults), refusal in a missing or terminating namespace;
//   - update: resourceVersion preconditions (required for leases and
//     budgets), the spec/status split of the status subresource, no write
//     when nothing changes, create on update where the real server allows
//     it;
//   - patch: JSON merge, strategic merge (with the k8s.io/api types) and
//     JSON patches;
//   - delete: preconditions, finalizers, the graceful deletion of pods (a
//     pod deleted with a grace period stays, terminating, until deleted
//     again with grace 0, as without a kubelet), deletecollection;
//   - list: label and field selectors (the real field sets per kind),
//     resourceVersion semantics, limit and continue (etcd-style tokens);
//   - watch: from a resourceVersion (410 once it is older than the kept
//     changes), the current state first for resourceVersion unset or 0,
//     sendInitialEvents with the initial-events-end bookmark (client-go's
//     watch-list), bookmarks every minute when allowed, ADDED/DELETED as
//     objects enter or leave the selection, timeoutSeconds;
//   - pods/eviction: the matching PodDisruptionBudget's status is computed
//     as the disruption controller would (healthy pods, minAvailable or
//     maxUnavailable, int or percent of the controllers' scale), then the
//     eviction is allowed (the pod gets the DisruptionTarget condition and
//     is deleted) or refused with the real 429.
//
// What controllers do that clients notice is done at once, in the same
// write: every namespace gets its "default" ServiceAccount, and a deleted
// namespace (answered Terminating) takes its objects with it.
//
// # Not simulated
//
// Other controllers (no Deployment creates ReplicaSets, no scheduler, no
// garbage collection: propagationPolicy is ignored), the "kubernetes"
// Service and its endpoints and the kube-root-ca.crt ConfigMaps (a caller
// that wants them puts them with Store.Put), validation beyond names and
// metadata (immutable pod fields are not enforced), server-side apply and
// managedFields, CBOR, aggregated discovery and OpenAPI documents (404;
// kubectl get, cordon and drain do not need them), events.k8s.io and core
// events sharing storage, and authorization: every authenticated user may
// do everything (RBAC objects are stored, not enforced). Anonymous requests
// get 401 on every path, as with --anonymous-auth=false.
package kubelite
