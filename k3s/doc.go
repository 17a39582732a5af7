// Package k3s is the K3s provider: K3s Kubernetes clusters on Proxmox VE
// VMs or on existing machines, installed and checked over SSH with
// verified host keys.
//
//	p, err := k3s.New(k3s.Config{BinaryDir: "/var/cache/k3s", KubeconfigDir: "~/.openctl/kubeconfigs"})
//	defer p.Close()
//	e, err := openctl.New(openctl.WithProviders(p, proxmoxProvider), openctl.WithStore(store))
//	rep, err := e.Apply(ctx, cluster) // a k3s.openctl.io/v1 Cluster
//
// A program with drivers (the CLI) lists Driver{} instead, which reads
// the providers.k3s section of the configuration file.
//
// The k3s behaviour the provider relies on (the installer, tokens, flags
// and config files, readiness, etcd membership, upgrades, kube-vip) is
// written down with its sources in internal/k3semu/CONTRACT.md, beside
// the k3s emulator both test twins share; code comments cite its
// sections.
//
// # Kinds (k3s.openctl.io/v1)
//
// A Cluster (ClusterSpec) is a composite. On existing machines,
// spec.hosts lists each one with its address, role (server or agent) and,
// best, its SSH host key; on Proxmox VE, spec.compute and spec.nodes
// (the seed's layout: controlPlane{count, size}, workers[{name, count,
// size}]) make the VMs, control planes spread over the allowed Proxmox
// nodes, with cloud-init users, keys and static addresses from
// spec.network. Plan turns it into Nodes — and their VMs — ordered by
// $refs: every Node takes its VM's status.ip and status.sshHostKey; the
// first server starts the cluster (--cluster-init); every other server
// joins it with the first server's full token, after the server before
// it (etcd admits one learner at a time); agents join after the last
// server, in parallel. Server counts must be odd (1, 3, 5, 7): an even
// count tolerates no more failures than the odd count below it.
//
// A Node (NodeSpec; "K3sNode", the original openctl's name, is read as a
// Node: its manifests and $refs apply unchanged and are recorded as Node)
// is k3s on one machine. Applied on its own, a Node
// without spec.server joins spec.cluster — or, when it names none, the
// only Cluster openctl has a record of; with several it is refused with
// errcode.Conflict, listing them, before anything touches the host.
//
// # What applying a node does
//
//  1. Connects over SSH (package remote): the host key pinned by the spec
//     (a VM's key read through its guest agent), else known_hosts, else
//     refused with its fingerprint — or recorded with a warning when
//     ssh.trustOnFirstUse is set. A changed key is always refused. One
//     connection per host for the whole run; sudo -n when the user is
//     not root.
//  2. Reads the host in one command: init system (systemd or OpenRC),
//     architecture, checksums of the k3s binary, the service and its
//     environment file, whether it runs.
//  3. Uploads the k3s binary of spec.k3s.version — from Config.BinaryDir,
//     checked against the release's sha256sum-<arch>.txt, downloaded
//     there first unless Config.Offline — only when the host's differs;
//     writes the service as the k3s installer does (the flags on its
//     command line) and its environment file, mode 0600, holding the
//     tokens, which are never on a command line or in a log; again only
//     what differs. The first server's tokens are generated once (32 hex
//     digits, not bootstrap-shaped) and kept. With spec.k3s.install
//     method "script" the node fetches the install script (https) and
//     runs it instead, with INSTALL_K3S_VERSION, the flags as arguments,
//     INSTALL_K3S_SKIP_START=true and the tokens from a 0600 file it
//     removes at once; again only when the version, flags or tokens
//     changed (a hash of them is kept on the node) or the installed
//     binary reports another version.
//  4. (Re)starts the service without waiting — k3s's unit has
//     TimeoutStartSec=0, so a blocking restart can hang forever — only
//     when something changed or it is stopped, and polls readiness with a
//     deadline (Config.ReadyTimeout): the service active (READY=1), and
//     for a server its Node Ready in the API. The polls read only that
//     (a joining node's readiness is read from the cluster's API, not by
//     kubectl on the node); one whole read follows the poll that finds it
//     Ready, and a node already Ready costs that one read alone.
//  5. With Config.Agent, installs openctl's node agent (cmd/openctl-agent)
//     beside k3s: its binary for the host's architecture, the cluster's
//     accepted CAs, a server certificate naming the node and its address,
//     its service — again only what differs — and waits until it answers
//     GET /v1/info over mutual TLS. The cluster's agent CA and the
//     controller's client certificate are made by the first server's
//     first apply and kept in every node's status.agentPKI (secret: sealed
//     in state); the other nodes get them through a $ref.
//
// # Day 2, through the agent
//
// With agents, a node or cluster is Ready only when every agent answers;
// a stopped agent is drift that plan shows and apply repairs. Reads ask
// the agents over one kept mTLS connection per node, not SSH. Actions:
// `status cluster NAME` (a node table: role, Ready, k3s and agent
// versions, address), `logs node NAME [--lines N] [--follow]` (the k3s
// log, from the journal or OpenRC's log file), `restart node NAME` and
// `rotate-agent-ca cluster NAME`, which moves every agent to a new CA —
// both CAs accepted, node certificates reissued and reloaded over SSH
// (SIGHUP, no restart), the controller's certificate reissued, the old CA
// dropped — recording each step (registry.ActionSpec.Records), so that the
// recorded credentials reach every node at every moment and an
// interrupted run is finished by the next.
//
// Changing spec.k3s.version upgrades the nodes through their agents in the
// order they joined — servers one at a time, then agents
// spec.upgrade.concurrency at a time (default 1) — each cordoned, drained
// (spec.drain), for the server holding the VIP relieved of it first
// (kube-vip's Lease handed to another server), upgraded by its agent
// (which rolls back when its health gate fails), waited for Ready at the
// new kubelet version and uncordoned; a rolled-back node stops the
// rollout there.
// Downgrades and skipped minor versions are refused before anything
// changes. A node removed from a Cluster is drained under spec.drain,
// deleted from the API (a quorum guard first for a server) and
// uninstalled.
//
// A re-apply of an unchanged node therefore runs reads only. A node's
// status — role, address, version, phase, and for servers the API URL,
// the full K10 tokens and the kubeconfig k3s wrote (those three secret,
// sealed in state and redacted in output) — is read from the host on
// every Get; the state's record only says where the host is
// (registry.Call.Prior). Deleting a node stops and uninstalls k3s as the
// installer's uninstall script does, keeping /etc/rancher/node.
//
// A Cluster's status gathers its nodes': phase Ready when every node is,
// version, readyNodes, endpoint (the VIP, else the first server — then
// status.message says it is a single point of failure), per-node
// phases, and the first server's tokens and kubeconfig (secret).
package k3s
