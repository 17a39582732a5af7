package node

import (
	"context"
	"io"

	"github.com/openctl/openctl/agent"
)

// System is everything the agent does to its host. The real implementation
// ([HostSystem], in host.go) shells out to systemctl/journalctl or
// rc-service/tail; tests use agenttest.System.
//
// Implementations must be safe for concurrent use: the server calls them
// from concurrent requests.
type System interface {
	// Facts returns the host facts.
	Facts(ctx context.Context) (agent.Facts, error)
	// Role reports which k3s service is installed.
	Role(ctx context.Context) (agent.Role, error)
	// ServiceState returns "active", "inactive", "failed" or "unknown" for the k3s service of the role.
	ServiceState(ctx context.Context) (string, error)
	// Service runs start/stop/restart on the k3s service.
	Service(ctx context.Context, action agent.ServiceAction) error
	// Logs writes the last n lines of the k3s service log to w, streaming.
	Logs(ctx context.Context, n int, w io.Writer) error
	// FollowLogs writes the last n lines like Logs, then every line
	// logged after them as it comes, until ctx ends (then it returns
	// nil).
	FollowLogs(ctx context.Context, n int, w io.Writer) error
	// K3sBinary is the path of the installed k3s binary (usually /usr/local/bin/k3s).
	K3sBinary() string
	// K3sVersion runs the binary at path with --version and returns "vX.Y.Z+k3sN".
	K3sVersion(ctx context.Context, path string) (string, error)
}
