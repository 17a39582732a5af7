// Package k3slite is the light k3s of openctl's sandbox: k3s as the K3s
// provider can observe it, run in process on sandbox/vmhost hosts, with
// sandbox/kubelite in place of the kube-apiserver and a [Network] in
// place of etcd. It follows the same contract as the heavy stand-in
// (k3s/k3stest/standin, built on the real kube-apiserver and etcd),
// written down in internal/k3semu/CONTRACT.md, and shares the k3s
// behaviour itself with it (package internal/k3semu), so that the
// provider gets the same results, statuses and errors from both; this
// package holds only its substrate: the simulated host's file system and
// network, kubelite and the in-memory datastore.
//
//	n := k3slite.NewNetwork(k3slite.NetworkOptions{Logger: log})
//	defer n.Close()
//	h, _ := vmhost.New(dir, vmhost.Options{Hostname: "cp-0", Init: vmhost.InitSystemd,
//		Addresses: []vmhost.Address{{Interface: "eth0", Prefix: netip.MustParsePrefix("127.80.0.10/16")}},
//		Programs:  map[string]vmhost.Program{k3slite.ProgramPath: n.Program(), …}})
//	// the provider uploads k3slite.Binary("v1.37.2+k3s1") to /usr/local/bin/k3s
//
// # Binaries
//
// A sandbox k3s binary ([Binary]) is a two-line file: an interpreter line
// naming [ProgramPath] and a version line. The program reads the file it
// was run from (through the #! line, or as /usr/local/bin/k3s, whose base
// name is the registered program's) to learn its version; [BinaryReporting]
// makes a release that reports another version, which fails the node
// agent's upgrade health gate as the stand-in's test releases do.
//
// # Commands
//
//   - k3s --version (-v, version): "k3s version <v> (<8 hex>)" and
//     "go version goX".
//   - k3s server and k3s agent: the stand-in's flags, K3S_* variables and
//     config.yaml(.d) merge (configfile.go is the stand-in's), its files
//     (server/token K10<sha256 of server-ca.crt's PEM>::server:<pw> with the
//     node-token and agent-token links or an agent-token file, cred/passwd,
//     tls/…, cred/admin.kubeconfig, /etc/rancher/k3s/k3s.yaml honouring
//     --write-kubeconfig(-mode), /etc/rancher/node/password,
//     agent/kubelet.kubeconfig and the kubelet's certificate), its log
//     lines in logrus's text shape ("Kube API server is now running",
//     "ETCD server is now running", "k3s is up and running", "k3s agent is
//     up and running") and its fatal messages (level=fatal, status 1). A
//     server or agent calls Call.NotifyReady once up (k3s's READY=1) and
//     runs until its context ends (a service stop), then exits 0.
//   - k3s kubectl …, and the program run as kubectl (the installer's
//     link): "get node[s] [NAME]" with -o jsonpath=…, name, json, yaml or
//     wide (kubectl's table otherwise) and "get --raw PATH", with
//     --kubeconfig and --request-timeout, through client-go and
//     k8s.io/client-go/util/jsonpath, with kubectl's error lines (`Error
//     from server (NotFound): nodes "x" not found`, `The connection to the
//     server … was refused …`, status 1). Anything else fails with a line
//     naming the subset, status 1.
//   - k3s token create|list|delete|generate|rotate and k3s certificate
//     rotate, as the stand-in's.
//
// Files are read and written as the calling user (Call.User) may, through
// the host: `k3s kubectl` run by a user cannot read a 0600 kubeconfig.
// [Network.Close] ends every program running on the network and waits for
// them; afterwards the program fails.
//
// # Servers
//
// A server listens on <node-ip>:6443 (or --bind-address, --https-listen-port)
// over TLS with a serving certificate from its cluster's server CA (ECDSA,
// SANs: localhost, the kubernetes names, the node name and IP, the first
// service IP, every --tls-san). That port serves the supervisor routes
// (/ping, /cacerts, /v1-k3s/readyz, client-kubelet.crt, server-bootstrap,
// apiservers, config, token, /db/info, with the stand-in's Basic and
// bootstrap-token authentication) and, behind them, kubelite's API of the
// cluster's Store, client certificates checked against the client CA.
// The server registers and heartbeats its Node (roles control-plane, etcd,
// master; kubeletVersion its binary's version; labels and taints at first
// registration), its Lease in kube-node-lease and its node-password
// secret, runs the fake kubelet (pods bound to it turn Running; deleted
// ones are removed with grace 0, so drain completes) and the stand-in's
// node lifecycle (NotReady after NodeMonitorGracePeriod without a Lease
// renewal).
//
// The Network holds each cluster's datastore and etcd membership. The
// first server (no --server, no datastore) makes a cluster; server/db
// then records it, so a restart finds the same cluster and member
// (--cluster-init and --server ignored, as in k3s). A joiner validates the
// server as k3s does (CA hash, then credentials), takes the bootstrap data
// over HTTPS, checks the critical values and becomes a learner; one learner
// at a time (etcd's "too many learner members in cluster"), promoted
// NetworkOptions.PromoteDelay after it runs (or by [Network.PromoteLearners]). Deleting a Node removes its
// member (by the other servers) and its node-password secret; the removed
// server exits with the stand-in's fatal line, and again on every start
// until its server/db is deleted. With fewer than a majority of voters
// running, the API answers "etcdserver: request timed out".
// [Network.Members] reports a cluster's membership, for tests.
//
// # kube-vip
//
// Every server polls server/manifests; a kube-vip DaemonSet or Pod there
// (the stand-in's ParseKubeVIP rules) runs its control-plane mode: leader
// election on the Lease (plndr-cp-lock) through the server's own API with
// client-go's leaderelection (a Lease handed over by the provider is
// honoured), and the leader holds the VIP: the address on its host's
// interface (vmhost's AddAddress, so `ip -o addr show` lists it) and a
// listener on VIP:port forwarding to its own API port, TLS end to end.
// Losing the lease, stopping, or the manifest going removes both.
// [Network.VIPHolder] says who holds a VIP.
//
// # Limits
//
//   - The datastore lives in memory: a process restart (or Network.Close)
//     loses every cluster; a server whose server/db names a cluster the
//     Network does not know exits with a fatal error until server/db is
//     deleted.
//   - No etcd wire protocol, no etcd ports: /db/info lists made-up client
//     and peer URLs (node IP, 2379/2380) plus the sandbox's cluster id.
//   - A server listens on its node address only, not on 0.0.0.0 or
//     127.0.0.1: sandbox hosts share the machine's loopback. The
//     kubeconfig still says https://127.0.0.1:6443, as k3s writes it;
//     the in-process kubectl (and k3s token) dials where the host's own
//     server listens for 127.0.0.1, ::1 and localhost; other clients
//     must rewrite the server (as the provider does).
//   - kubelite stands in for the apiserver: no RBAC or admission, no
//     controllers (no scheduler, garbage collection or ReplicaSet pods);
//     what kubelite serves is what there is.
//   - kubectl is a subset (above). k3s token (create, list, delete,
//     generate, rotate) and k3s certificate rotate are the stand-in's;
//     etcd-snapshot, secrets-encrypt and check-config print that they are
//     not implemented and exit 1.
//   - Manifests other than kube-vip are only recorded in the log, not
//     applied; kube-vip's RBAC and DaemonSet objects are not created.
//     Gratuitous ARP is only logged.
//   - Configuration errors say "standin:" as the stand-in's do, so that the
//     two print the same text.
//   - Agent retries (2 s on a bad token, 5 s on a refused node password)
//     and the heartbeat follow k3s's timing unless NetworkOptions shorten
//     the latter.
package k3slite
