package standin

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/openctl/openctl/internal/k3semu"
)

// RunAgent runs `k3s agent` until ctx ends. Like k3s it first validates
// the server against the token's CA hash and the token's credentials,
// logging the error and retrying every 2 s; then it fetches its kubelet
// client certificate (the server checks the node password), retrying
// every 5 s with "Waiting to retrieve agent configuration"; then it
// registers its Node (no roles), signals READY=1 and keeps the node's
// heartbeat, Lease and pods.
func RunAgent(ctx context.Context, cfg k3semu.AgentConfig, log *slog.Logger) error {
	notifySocket := os.Getenv("NOTIFY_SOCKET")
	os.Unsetenv("NOTIFY_SOCKET")
	log.Info(fmt.Sprintf("Starting k3s agent %s (%s)", cfg.Version.K3s, cfg.Version.Short()))
	for _, f := range cfg.Ignored {
		log.Warn("flag not implemented by the k3s stand-in; ignored", "flag", "--"+f)
	}
	nodeIP, err := pickNodeIP(cfg.NodeIP, "")
	if err != nil {
		return err
	}
	nodePW, err := nodePassword(cfg.NodePasswordFile)
	if err != nil {
		return err
	}

	ag := &k3semu.Agent{FS: osFS, Server: cfg.Server, Token: cfg.Token, DataDir: cfg.DataDir, NodeName: cfg.NodeName,
		NodeIP: nodeIP, NodePassword: nodePW, Labels: cfg.NodeLabels, Taints: cfg.NodeTaints, Version: cfg.Version.K3s, Log: log,
		Ready: func() {
			if err := notifyReady(notifySocket); err != nil {
				log.Warn("systemd notify failed", "err", err)
			}
		},
		PodSyncInterval: time.Second, HeartbeatInterval: 10 * time.Second}
	return ag.Run(ctx)
}
