// Package standin is the k3s stand-in used by openctl's K3s tests: one
// binary whose Kubernetes half is the real kube-apiserver (from
// k8s.io/kubernetes) over a real embedded etcd member, wrapped in k3s's
// command line, files and readiness contract
// (see k3s/CONTRACT.md at the repository's root and README.md).
//
// The module is nested so that the library's go.mod never requires
// k8s.io/kubernetes; cmd/k3s is the binary, a few lines over [Main].
//
// The version a binary reports is read at run time from a trailer appended
// to the executable file (see [Version] and [WriteVersioned]), so tests make
// binaries of other versions, each with its own sha256, without a rebuild.
package standin
