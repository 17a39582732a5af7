// Package k3semu is the k3s behaviour that openctl's two k3s twins
// share — the light in-process k3s of the sandbox (sandbox/k3slite) and
// the k3s stand-in binary the tests run on real Linux hosts
// (k3s/k3stest/standin) — written once. What k3s does, with sources, is
// documented in CONTRACT.md beside this file.
//
// Each twin keeps only its substrate, reached through small seams:
//
//   - the file system: [FS] ([OSFS] for the stand-in, a simulated host's
//     for the sandbox);
//   - the API server: a kubernetes.Interface (the real kube-apiserver or
//     sandbox/kubelite) given to [Supervisor], [NodeAgent] and
//     [KubeVIPWatch];
//   - the datastore's members and the cluster-wide passwd file:
//     [Supervisor.Members] and [Supervisor.PublishPasswd] (embedded etcd
//     or the sandbox's in-memory datastore), then [AdoptClusterPasswd] and
//     [Supervisor.SyncPasswd];
//   - the VIP network: [VIPNet] (rtnetlink and gratuitous ARP, or the
//     simulated host's addresses).
//
// What it holds:
//
//   - the command line: [ParseServerArgs] and [ParseAgentArgs] (flags,
//     K3S_* variables, config.yaml and config.yaml.d merged as k3s does),
//     [TokenCmd] (`k3s token create|list|delete|generate|rotate`),
//     [CertificateCmd] (`k3s certificate rotate`), [Usage], and k3s's log
//     shape ([NewLogger], [Fatal]);
//   - a server's start up to its datastore: [PrepareServer] (directories,
//     join and bootstrap data, critical configuration, PKI in [KeyPair],
//     tokens and passwd, kubeconfigs) and [RegisterServer];
//   - the supervisor routes on the https port ([Supervisor]) and their
//     client ([ValidateServer], [SupervisorClient]): /cacerts, readyz,
//     kubelet client certificates behind node passwords, bootstrap data,
//     /v1-k3s/apiservers, critical configuration, token rotation, /db/info,
//     bootstrap tokens;
//   - the agent ([Agent]): token and server validation, the kubelet
//     certificate, the client load balancer ([Balancer]), node
//     registration;
//   - node registration and the fake kubelet ([NodeAgent]) and the node
//     lifecycle controller's taints ([NodeLifecycle]);
//   - kube-vip's control-plane mode ([ParseKubeVIP], [KubeVIPWatch]):
//     manifests, leader election through a Lease, the VIP and its
//     announcements.
//
// Package k3semutest has the test fixtures both twins' tests use.
package k3semu
