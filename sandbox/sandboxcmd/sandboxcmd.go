// Package sandboxcmd is the "openctl sandbox" command: a Proxmox VE
// simulator served over HTTPS whose VMs' guests are simulated hosts the
// K3s provider of another openctl process reaches, for CI jobs. It is
// kept apart from package sandbox so that a program embedding the
// sandbox does not link the command-line library.
//
//	cli.Main(cli.Options{Drivers: …, Commands: []*cobra.Command{sandboxcmd.Command()}})
package sandboxcmd

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/sandbox"
)

// Command is "openctl sandbox": the Proxmox VE simulator as a server,
// its VMs' guests simulated hosts the K3s provider can reach, for CI jobs
// that run openctl plan and apply against it. Add it to cli.Options'
// Commands; it is a thin layer over sandbox.StartServer.
func Command() *cobra.Command {
	var (
		listen    string
		configOut string
		nodes     int
		seed      int64
		speed     float64
		shared    string
		faults    proxmoxtest.Faults
		lat       = proxmoxtest.DefaultLatencies()
	)
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Run a simulated Proxmox VE cluster whose VMs run K3s",
		Long: `Run a simulated Proxmox VE cluster over HTTPS: nodes pve1..pveN, storages
local and local-lvm on each node, an RBD storage "ceph" shared by all nodes
(--shared-storage), bridge vmbr0, and the cloud-init template 9000
"ubuntu-24.04-cloud" on pve1, its disks on the shared storage so that it can be
cloned onto every node (with --shared-storage "" it lives on pve1's local-lvm).

Each started VM's guest is a simulated Linux host, as under --sandbox: it
answers SSH on a loopback address (127.80.c.d for a cloud-init address a.b.c.d,
or the next free 127.N.0.0/16) with the host key its guest agent reports, runs
an in-process k3s and openctl's node agent, so the K3s provider of another
openctl process can build clusters on it.

Once it is serving, one JSON line is printed on stdout:

  {"url":"https://127.0.0.1:8006/api2/json","tokenId":"...","tokenSecret":"...","fingerprint":"AB:CD:...",
   "k3s":{"releaseURL":"http://...","agentBinaryDir":"...","sshPort":2222,"identityFile":"...","addressMap":"127.80.0.0/16"}}

and --config-out FILE writes a configuration file (0600) with both providers
set up for it, for openctl --config FILE (or $OPENCTL_CONFIG). It serves until
SIGINT or SIGTERM. --listen 127.0.0.1:0 picks a free port.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context() // cancelled by SIGINT and SIGTERM (see notifyContext)
			log := slog.New(slog.DiscardHandler)
			if v, err := cmd.Flags().GetBool("verbose"); err == nil && v {
				log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelDebug}))
			}
			srv, err := sandbox.StartServer(sandbox.ServerOptions{Listen: listen, Logger: log, Simulator: append(proxmoxtest.SandboxLayout(nodes, shared),
				proxmoxtest.WithSeed(seed),
				proxmoxtest.WithSpeed(speed),
				proxmoxtest.WithLatencies(lat),
				proxmoxtest.WithFaults(faults),
			)})
			if err != nil {
				return err
			}
			defer srv.Close()
			info := srv.Info()
			if configOut != "" {
				if err := srv.WriteConfig(configOut); err != nil {
					return fmt.Errorf("sandbox: --config-out: %w", err)
				}
			}
			line, err := json.Marshal(info)
			if err != nil {
				return fmt.Errorf("sandbox: %w", err)
			}
			if _, err := fmt.Fprintf(cmd.OutOrStdout(), "%s\n", line); err != nil {
				return fmt.Errorf("sandbox: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "openctl sandbox: Proxmox VE simulator with %d node(s) at %s, its VMs' hosts on %s; stop with Ctrl-C\n", nodes, info.URL, srv.World().Network())
			<-ctx.Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8006", "address to listen on (port 0 picks a free port)")
	f.StringVar(&configOut, "config-out", "", "write a configuration file for this sandbox (both providers) to this path, mode 0600")
	f.IntVar(&nodes, "nodes", 3, "number of cluster nodes (pve1..pveN)")
	f.Int64Var(&seed, "seed", 1, "seed for fault injection, PIDs, MAC addresses and host keys")
	f.Float64Var(&speed, "speed", 1, "divide every simulated latency by this factor")
	f.StringVar(&shared, "shared-storage", proxmoxtest.DefaultSharedStorage, `name of a storage shared by all nodes that holds the template ("" for none)`)

	f.DurationVar(&lat.Clone, "clone-latency", lat.Clone, "duration of a clone task")
	f.DurationVar(&lat.Start, "start-latency", lat.Start, "duration of a start task")
	f.DurationVar(&lat.Stop, "stop-latency", lat.Stop, "duration of a stop task")
	f.DurationVar(&lat.AgentUp, "agent-up-delay", lat.AgentUp, "time from VM start until the guest agent answers")
	f.DurationVar(&lat.AgentIP, "agent-ip-delay", lat.AgentIP, "time from agent up until the guest has an IPv4 address")

	f.Float64Var(&faults.ErrorRate, "fault-error-rate", 0, "probability that a request fails with HTTP 500")
	f.DurationVar(&faults.Latency, "fault-latency", 0, "extra latency added to every request (not scaled by --speed)")
	f.Float64Var(&faults.LockTimeoutRate, "fault-lock-timeout-rate", 0, "probability that a VM config lock times out")
	f.Float64Var(&faults.TaskFailureRate, "fault-task-failure-rate", 0, "probability that a task fails")
	f.StringSliceVar(&faults.Routes, "fault-routes", nil, `restrict request faults to these routes ("METHOD /path", e.g. "POST /nodes/{node}/qemu/{vmid}/clone")`)
	return cmd
}
