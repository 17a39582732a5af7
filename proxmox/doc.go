// Package proxmox is the Proxmox VE provider: it serves
// proxmox.openctl.io/v1 VirtualMachine (clone, configure, start, delete),
// and the read-only Template and Node kinds, on top of
// github.com/luthermonson/go-proxmox.
//
// A VirtualMachine manifest:
//
//	apiVersion: proxmox.openctl.io/v1
//	kind: VirtualMachine
//	metadata:
//	  name: web-01
//	spec:
//	  node: pve1                      # or nodes: [pve1, pve2] — chosen when planning (Place)
//	  template: {name: ubuntu-24.04-cloud}   # or {vmid: 9000}; full clone unless linked: true
//	  cpu: {cores: 4}
//	  memory: {size: 8192}            # MiB
//	  disks: [{name: scsi0, size: 40G}]
//	  networks: [{name: net0, bridge: vmbr0, vlan: 20}]
//	  cloudInit:
//	    user: ubuntu
//	    sshKeys: ["ssh-ed25519 AAAA... me@laptop"]
//	    ipConfig: {net0: {ip: dhcp}}  # or ip: 10.0.0.5/24, gateway: 10.0.0.1; ip6, gateway6
//	  tags: [web]
//
// # Configuration
//
// In code, New(Config) builds a Provider. A program that reads the user's
// configuration file compiles in [Driver] instead (cli.Main does): it
// decodes the providers.proxmox section strictly (contexts, credentials,
// defaults; see Driver), and reads these environment variables, which
// define a context "env" that becomes the default — for CI runners
// without a file:
//
//   - OPENCTL_PROXMOX_URL: the API URL (https://pve.example.com:8006);
//   - OPENCTL_PROXMOX_TOKEN_ID: the API token's id, user@realm!name;
//   - OPENCTL_PROXMOX_TOKEN_SECRET, or OPENCTL_PROXMOX_TOKEN_SECRET_FILE:
//     its secret, or a file holding it;
//   - OPENCTL_PROXMOX_FINGERPRINT: the certificate's SHA-256 to pin;
//   - OPENCTL_PROXMOX_NODE: the default node.
//
// A URL without a token, or a token without a URL, is an error naming the
// missing variables. The driver's sandbox is the simulator of package
// proxmoxtest (three nodes, a template on shared storage).
//
// # Behaviour
//
// Apply is idempotent by name. A VM openctl created carries the tag
// "openctl" and a marker line at the end of its description; a VM with the
// same name but without the marker is an ALREADY_EXISTS error and is never
// adopted, changed or deleted. The marker names the owner: the identity
// of the state store the engine records into (registry.Call.Owner). A VM whose
// marker names another owner is ALREADY_EXISTS for Apply, Delete and
// actions, so two openctl installations with different state stores never
// adopt, change or delete each other's VMs; a marker without an owner
// (written before owners were, or by a Provider used without an engine)
// is adopted and gets the caller's owner. A caller without an owner (no
// engine) is refused nothing on that account and keeps the VM's. Two such installations creating
// one name at once both clone; once its clone is named, each lists the
// VMs of that name (waiting for clones still running elsewhere into a
// lower VMID): the lowest VMID wins, and the loser removes its clone and
// fails ALREADY_EXISTS. Several VMs of one name are told apart by owner.
//
// Before acting on an existing VM, Apply, Delete and actions wait for the
// tasks still running on it (a clone, config, start, shutdown, stop,
// reboot, resize or destroy another client or an interrupted run
// started), then look again: a destroy in flight is never adopted, a start
// in flight is not started twice.
//
// A new VM's marker says "provisioning" until the VM is converged:
// configured, in its desired power state and, when running, its address
// known. An Apply that finds the marker (the one that created the VM was
// killed or cancelled) finishes the VM as new — starts it unless
// startOnCreate says otherwise — and Diff reports it as a change. Diff
// compares the live VM, its power state included, with the spec; a VM
// destroyed while it is read is gone (Get: NOT_FOUND), not an error. Creating a VM reads the cluster once,
// chooses the node, checks the template (disks only grow; a template
// without a guest agent and a DHCP address would leave the VM's address
// unknowable, which fails at once with advice), allocates a VMID and clones
// — VMID allocation is serialised within a Provider and retried when
// another client took the id, and clones are bounded per node and per
// template (Limits) — then sets everything in one config task, grows disks,
// starts the VM and polls the guest agent until it reports an address on
// the VM's first network (static addresses are known without waiting). If
// any step after the clone fails, the half-made VM is destroyed again; if
// the context is cancelled it is left for the next Apply, which adopts it
// by name.
//
// Updates are made in place: cpu, memory, tags, description, cloud-init,
// networks and disk growth, in one config task. On a running VM, changes
// Proxmox applies only at the next boot stay pending (status.pendingRestart
// lists them and Diff says so) unless spec.restartPolicy is ifRequired,
// which reboots the VM. A new template or a node the spec no longer allows
// needs a new VM: Diff reports a replace, and Apply refuses unless
// spec.replacePolicy is allow. Delete shuts the VM down gracefully (then
// stops it if it does not power off in time) and destroys it with purge.
// The Actioner offers start, stop, shutdown and reboot.
//
// Every Proxmox task is awaited and its exit status checked; a failed
// task's error (TaskError) carries the tail of its log. Lock timeouts and
// 5xx answers are TRANSIENT; 401/403 are UNAUTHORIZED and name the missing
// privilege.
//
// # Who retries
//
// The engine retries whole provider calls that fail with
// errcode.Transient, per its retry policy; the provider does not retry
// them again inside. Get, List and Diff make each request once and return
// a transient failure as it is, so one Get under a persistent 5xx costs
// the engine's attempts times the requests of one Get, not their product.
// Inside Apply, Delete and Do the provider retries a step itself, bounded
// (WithRetryBackoff, with jitter, through package backoff), only where
// re-running the whole call would be wrong or wasteful after a side
// effect of that call:
//
//   - a config, power, resize or destroy request refused with a lock
//     timeout ("can't lock file ... got timeout": nothing happened),
//     up to 5 attempts;
//   - a clone refused because another client took the VMID or held a
//     lock, with the next free VMID, up to 8 attempts;
//   - reading back the config of the VM just cloned, up to 5 attempts
//     (failing would destroy the clone and clone again);
//   - reading /cluster/resources after a clone, to settle a race for the
//     name, up to 5 attempts;
//   - polling a task it started, until the task's timeout, and the guest
//     agent of a VM it started, until Timeouts.GuestAgent;
//   - removing a VM it created and could not finish, up to 8 attempts.
//
// Everything else — reading /cluster/resources, a config, a template, a
// node's task list — fails the call with its classified error for the
// engine to retry. So does Get's one question to the guest agent for a
// running VM's address (when no static address makes it known): a 5xx or
// a network error fails the Get TRANSIENT, so the engine's retry of the
// whole Get reports the address. When the agent answers but cannot tell
// (it is not running yet, the guest has only loopback or link-local
// addresses, none is configured), the address is unknown and
// status.ipError says why; it is never silently blank.
//
// # Connections
//
// A Config holds one or more contexts (Proxmox endpoints) with an API token
// each (tokenSecret or tokenSecretFile); a VM picks one with spec.context.
// TLS is verified: pin the certificate's SHA-256 fingerprint (the easy path
// for Proxmox's self-signed certificates — `openssl x509 -noout
// -fingerprint -sha256 -in /etc/pve/local/pve-ssl.pem` on the node), or
// name a CA file; insecureSkipVerify exists but logs a warning. Token
// secrets never appear in errors or logs.
package proxmox
