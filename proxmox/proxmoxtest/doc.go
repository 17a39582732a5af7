// Package proxmoxtest is a faithful, in-process simulator of the Proxmox VE
// 8/9 HTTP API, in the spirit of net/http/httptest. It serves, over HTTPS
// under /api2/json, the routes github.com/luthermonson/go-proxmox uses to
// manage QEMU guests, and it behaves like Proxmox where clients usually get
// it wrong: asynchronous tasks that fail after returning 200, clone locks,
// VMID races, a guest agent that is not up yet, and error messages carried
// in the HTTP reason phrase.
//
// A test starts a server, points go-proxmox at it and asserts on state:
//
//	srv := proxmoxtest.NewTestServer(t, proxmoxtest.WithNodes(3), proxmoxtest.WithSpeed(10))
//	id, secret := srv.Token()
//	client := proxmox.NewClient(srv.URL(),
//		proxmox.WithHTTPClient(srv.Client()),
//		proxmox.WithAPIToken(id, secret))
//	vm, _ := client.NodeRef("pve1").VirtualMachine(ctx, 9000) // the seeded template
//	newid, task, err := vm.Clone(ctx, &proxmox.VirtualMachineCloneOptions{Name: "web1"})
//	...
//	v, ok := srv.VM(newid)
//
// A long-running server (openctl sandbox) uses New, Start and Close.
//
// # What is simulated
//
// Nodes pve1..pveN with storages local and local-lvm and bridge vmbr0; a
// cloud-init-ready template, VMID 9000 "ubuntu-24.04-cloud" on pve1 (agent
// enabled, ide2 cloud-init drive, 10G scsi0); WithTemplates and
// WithSharedStorage change them. API token authentication
// (Authorization: PVEAPIToken=user@realm!name=secret; Server.Token holds
// every privilege, Server.AddToken makes restricted ones). Worker tasks with
// real UPIDs, status and logs, finishing after Latencies scaled by
// WithSpeed. QEMU list, status, config (GET, POST as a task, PUT; on a
// running VM most changes stay pending until the next start), pending,
// clone, resize, start/stop/shutdown/reboot, delete and template, and
// /cluster/resources; the guest agent's
// network-get-interfaces, get-osinfo and file-read (which serves the VM's own
// SSH host key at HostKeyPath). Routes lists what is served; anything else
// answers 501 "Method '<M> <path>' not implemented".
//
// # Parameters and locks
//
// Every request is checked like PVE::JSONSchema does before the handler
// runs: unknown parameters, types (booleans only as 0 and 1), formats,
// patterns, ranges, enums and property-string keys answer 400 "Parameter
// verification failed." with Proxmox's per-parameter messages. A clone
// holds its source's config lock for the whole task (shared when the source
// is stopped, so parallel clones of a template work; exclusive when it
// runs), and a destroy holds its VM's config lock until the VM is gone
// (the VM is listed meanwhile): other writers get "can't lock file ... -
// got timeout" at once instead of after Proxmox's 10 s wait. A node's task
// list (GET /nodes/{node}/tasks, source=active, vmid) shows the tasks still
// running, so a client can wait for another client's; Server.RemoveVM
// makes a VM vanish between two reads, as a destroy ending then would.
//
// # Errors
//
// Errors are written as Proxmox writes them: the status line's reason
// phrase is the first line of the message (go-proxmox reads it from there),
// and the JSON body is {"data": null, "message": "...\n"}, plus
// {"errors": {param: msg}} for 400 "Parameter verification failed.".
// Failures that Proxmox reports inside a task (starting a template, a
// locked VM at start, shrinking a disk) are reported inside the task.
//
// # Faults
//
// WithRequestHook observes every served request (route, parameters,
// status), e.g. to check them against the official API schema.
//
// WithFaults injects HTTP 500s, extra latency, config lock timeouts, task
// failures and lost task status files. Every decision depends only on the seed (WithSeed), the route or
// task type and how many requests that route has seen, so a run is
// reproducible.
//
// A Server is safe for concurrent use.
package proxmoxtest
