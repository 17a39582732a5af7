// Package kubeconfig turns the kubeconfig a k3s server writes into one a
// user can use, keeps it in the user's kubeconfig file, and checks the
// cluster through it: the K3s provider's kubeconfig step (internal/k3semu/CONTRACT.md
// §3).
//
//	raw, err := host.ReadFile(ctx, "/etc/rancher/k3s/k3s.yaml") // as root
//	kc, err := kubeconfig.Rewrite(raw, "https://10.0.0.10:6443", "lab")
//	err = kubeconfig.Merge(ctx, filepath.Join(home, ".kube", "config"), kc)
//	cl, err := kubeconfig.Client(kc)
//	err = cl.Ready(ctx)           // GET /readyz answered "ok"
//	nodes, err := cl.Nodes(ctx)   // Name, Ready, Roles, KubeletVersion, …
//	// when the cluster is deleted:
//	err = kubeconfig.Remove(ctx, filepath.Join(home, ".kube", "config"), "lab")
//
// # Rewrite
//
// k3s writes /etc/rancher/k3s/k3s.yaml with the server
// https://127.0.0.1:6443 (or its bind address) and a cluster, a user and
// a context all named "default", embedding the CA and the admin client
// certificate and key. [Rewrite] points the server at an address the
// serving certificate names (the kube-vip VIP, or a server's address given
// to --tls-san) and renames the three entries, and the current context, to
// the cluster's name. It works on the decoded kubeconfig
// (k8s.io/client-go/tools/clientcmd), never on its text: k3sup replaces
// every "default" in the file, which also rewrites a namespace or any
// other field that happens to contain the word.
//
// # Files
//
// [Write] replaces a file atomically (temporary file, sync, rename) with
// mode 0600, creating directories 0700. [Merge] adds or replaces the
// entries of one kubeconfig in a file such as ~/.kube/config, keeping
// every other entry and the file's current context; [Remove] takes them
// out again. Both hold kubectl's lock file (path + ".lock") while they
// read and write, and are serialised within the process.
//
// # Cluster state
//
// [Client] builds a client-go clientset from the kubeconfig's bytes;
// [Cluster.Ready] and [Cluster.Nodes] are what the provider checks after
// each step, and [Cluster.Kubernetes] reaches the clientset for anything
// else. Every call is bounded by its context alone.
//
// # Errors
//
// Errors carry an [errcode] code and messages start with "kubeconfig: ".
// A kubeconfig, server URL or name that cannot be used matches
// errcode.Invalid and says why; a server that is unreachable or not ready
// yet matches errcode.Transient (worth polling again, with backoff and a
// deadline); refused credentials match errcode.Unauthorized; a server
// certificate that does not verify matches errcode.Invalid; a lock held
// by someone else for too long matches errcode.Conflict.
//
// Every function of the package is safe for concurrent use.
package kubeconfig
