package main

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
)

// sandboxInfo is the one JSON line sandbox prints once it is serving.
type sandboxInfo struct {
	URL         string `json:"url"`
	TokenID     string `json:"tokenId"`
	TokenSecret string `json:"tokenSecret"`
	Fingerprint string `json:"fingerprint"`
}

// sandboxCmd is "openctl sandbox": the Proxmox VE simulator as a server,
// for CI jobs that run openctl plan against it.
func sandboxCmd() *cobra.Command {
	var (
		listen string
		nodes  int
		seed   int64
		speed  float64
		shared string
		faults proxmoxtest.Faults
		lat    = proxmoxtest.DefaultLatencies()
	)
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Run a simulated Proxmox VE cluster",
		Long: `Run a simulated Proxmox VE cluster over HTTPS: nodes pve1..pveN, storages
local and local-lvm on each node, an RBD storage "ceph" shared by all nodes
(--shared-storage), bridge vmbr0, and the cloud-init template 9000
"ubuntu-24.04-cloud" on pve1, its disks on the shared storage so that it can be
cloned onto every node (with --shared-storage "" it lives on pve1's local-lvm).
Once it is serving, one JSON line is printed on stdout:

  {"url":"https://127.0.0.1:8006/api2/json","tokenId":"...","tokenSecret":"...","fingerprint":"AB:CD:..."}

It serves until SIGINT or SIGTERM. --listen 127.0.0.1:0 picks a free port.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context() // cancelled by SIGINT and SIGTERM (see notifyContext)
			log := slog.New(slog.DiscardHandler)
			if v, err := cmd.Flags().GetBool("verbose"); err == nil && v {
				log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelDebug}))
			}
			srv, err := proxmoxtest.New(append(proxmoxtest.SandboxLayout(nodes, shared),
				proxmoxtest.WithSeed(seed),
				proxmoxtest.WithSpeed(speed),
				proxmoxtest.WithLatencies(lat),
				proxmoxtest.WithFaults(faults),
				proxmoxtest.WithLogger(log),
			)...)
			if err != nil {
				return fmt.Errorf("sandbox: %w", errcode.Wrap(errcode.Invalid, "", err))
			}
			if err := srv.Start(listen); err != nil {
				return fmt.Errorf("sandbox: %w", errcode.Wrap(errcode.Invalid, "", err))
			}
			defer srv.Close()

			id, secret := srv.Token()
			line, err := json.Marshal(sandboxInfo{URL: srv.URL(), TokenID: id, TokenSecret: secret, Fingerprint: srv.Fingerprint()})
			if err != nil {
				return fmt.Errorf("sandbox: %w", err)
			}
			if _, err := fmt.Fprintf(cmd.OutOrStdout(), "%s\n", line); err != nil {
				return fmt.Errorf("sandbox: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "openctl sandbox: Proxmox VE simulator with %d node(s) at %s; stop with Ctrl-C\n", nodes, srv.URL())
			<-ctx.Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8006", "address to listen on (port 0 picks a free port)")
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
