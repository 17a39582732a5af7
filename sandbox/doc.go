// Package sandbox is the simulated world behind `openctl --sandbox`:
// Proxmox VE VMs (package proxmox/proxmoxtest) whose guests are
// simulated Linux hosts (package sandbox/vmhost) that answer SSH on
// loopback addresses, run a light in-process k3s (package
// sandbox/k3slite) and openctl's real node agent (package agent/node) —
// all in one process, with no root, no hardware and no download.
//
//	w, err := sandbox.New(sandbox.Options{})
//	defer w.Close()
//	srv, err := proxmoxtest.New(proxmoxtest.WithGuests(w), …) // the VMs' guests are w's hosts
//	hosts := w.K3sHosts()                                      // how the K3s provider reaches them
//
// The reference CLI wires it with Drivers (cmd/openctl), so that
// `openctl apply --sandbox -f examples/k3s-proxmox.yaml` creates a K3s
// cluster on simulated VMs end to end.
//
// # The network
//
// The world's hosts live on loopback addresses: a guest whose cloud-init
// address is a.b.c.d is reached at 127.80.c.d (Options.Network's first
// two octets). Its guest agent reports a.b.c.d, the VM's own address, as
// a real guest's does; reaching it is the sandbox's business: the K3s
// provider's address map (K3sHosts().AddressMap, k3s.Config.AddressMap)
// moves every address it uses — a VM's, read through a $ref, and literal
// ones in K3s manifests such as a VIP — the same way (MapAddress). Every host answers SSH on
// Options.SSHPort (default 2222, since 22 needs root) with the host key
// its guest agent reports, for its cloud-init user with cloud-init's
// keys and the world's own key (Identity), which the K3s provider logs
// in with: the manifest's privateKeyPath is not read.
//
// # What runs on a host
//
// A host is a directory under the world's; its VM stopping is a power
// cut for its services, its VM starting boots them again, its VM being
// destroyed removes the directory. k3s binaries are small files whose
// interpreter line names the in-process k3s (k3slite.Binary), served by
// the world's release server (K3sHosts().ReleaseURL) for any version; the
// agent binaries are the same kind of file, naming the agent program.
package sandbox
