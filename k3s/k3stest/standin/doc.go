// Package standin is the k3s stand-in used by openctl's K3s tests: one
// binary whose Kubernetes half is the real kube-apiserver (from
// k8s.io/kubernetes) over a real embedded etcd member, wrapped in k3s's
// command line, files and readiness contract
// (see internal/k3semu/CONTRACT.md and README.md). The k3s behaviour
// itself is shared with the sandbox's light k3s (package
// internal/k3semu); this package holds only its substrate: the machine's
// file system and network (rtnetlink for the VIP), the kube-apiserver and
// the embedded etcd.
//
// The module is nested so that the library's go.mod never requires
// k8s.io/kubernetes; cmd/k3s is the binary, a few lines over [Main].
//
// The version a binary reports is read at run time from a trailer appended
// to the executable file (see [Version] and [WriteVersioned]), so tests make
// binaries of other versions, each with its own sha256, without a rebuild.
package standin
