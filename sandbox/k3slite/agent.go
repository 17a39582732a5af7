package k3slite

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/openctl/openctl/internal/k3semu"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// runAgent runs `k3s agent` until ctx ends, as the stand-in's RunAgent:
// it validates the server against the token's CA hash and credentials,
// logging the error and retrying every 2 s; fetches its kubelet client
// certificate (the server checks the node password), retrying every 5 s
// with "Waiting to retrieve agent configuration"; registers its Node (no
// roles), signals ready and keeps the node's heartbeat, Lease and pods.
func (n *Network) runAgent(ctx context.Context, c *vmhost.Call, cfg k3semu.AgentConfig, log *slog.Logger) error {
	f := callFS(c)
	log.Info(fmt.Sprintf("Starting k3s agent %s (%s)", cfg.Version.K3s, cfg.Version.Short()))
	for _, fl := range cfg.Ignored {
		log.Warn("flag not implemented by the k3s stand-in; ignored", "flag", "--"+fl)
	}
	nodeIP, err := pickNodeIP(c.Host, cfg.NodeIP, "")
	if err != nil {
		return err
	}
	nodePW, err := nodePassword(f, cfg.NodePasswordFile)
	if err != nil {
		return err
	}
	ag := &k3semu.Agent{FS: f, Server: cfg.Server, Token: cfg.Token, DataDir: cfg.DataDir, NodeName: cfg.NodeName,
		NodeIP: nodeIP, NodePassword: nodePW, Labels: cfg.NodeLabels, Taints: cfg.NodeTaints, Version: cfg.Version.K3s,
		Log: log, Ready: c.NotifyReady, PodSyncInterval: n.opts.PodSyncInterval, HeartbeatInterval: n.opts.HeartbeatInterval}
	return ag.Run(ctx)
}
