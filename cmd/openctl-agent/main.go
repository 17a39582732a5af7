// Command openctl-agent is the openctl node agent: a small HTTPS server,
// installed on every k3s node, through which openctl reads host facts and
// k3s logs, starts, stops and restarts k3s, and upgrades it, over mutual
// TLS with the cluster's CA. See package github.com/openctl/openctl/agent.
//
//	openctl-agent --listen :9443 \
//		--ca /etc/openctl-agent/ca.pem \
//		--cert /etc/openctl-agent/server.pem \
//		--key /etc/openctl-agent/server.key
//
// It logs JSON lines to standard error and serves until SIGINT or SIGTERM,
// then lets requests in flight finish (at most 30 seconds) and exits 0.
// SIGHUP re-reads the three certificate files, so that a CA rotation step
// takes effect without a restart; if they are invalid the old credentials
// stay. Exit status 2 means a usage or configuration error (a bad flag, a
// missing or invalid certificate file, an invalid release URL), 1 any
// other failure.
//
// Release builds are static: CGO_ENABLED=0 GOOS=linux GOARCH=amd64, arm64
// or arm.
package main

import (
	"context"
	"os"

	"github.com/openctl/openctl/agent"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, hostSystem))
}

// hostSystem is the System of the machine the agent runs on.
func hostSystem() (agent.System, error) {
	h, err := agent.NewHostSystem(agent.HostOptions{})
	if err != nil {
		return nil, err
	}
	return h, nil
}
