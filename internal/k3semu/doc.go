// Package k3semu holds the k3s behaviour that openctl's two k3s twins
// share — the light in-process k3s of the sandbox (sandbox/k3slite) and
// the k3s stand-in binary the tests run on real Linux hosts
// (k3s/k3stest/standin) — so that each k3s behaviour is written once and
// the twins keep only their substrate (file system, API server, etcd
// members, VIP network). What k3s does, with sources, is documented in
// k3s/CONTRACT.md.
//
// It holds so far:
//
//   - node registration and the fake kubelet: [NodeAgent] registers a
//     node's Node (labels, taints and roles at first registration),
//     keeps its Ready condition and Lease ([NodeAgent.Heartbeat]) and
//     runs its pods ([NodeAgent.RunPods]); [NodeLifecycle] is the node
//     lifecycle controller's NotReady/unreachable taints;
//   - the agent-side client load balancer ([Balancer]);
//   - the reading of a kube-vip manifest ([ParseKubeVIP]): what kube-vip's
//     control-plane mode is asked to do, as both twins emulate it.
//
// Package k3semutest has the test fixtures both twins' tests use.
package k3semu
