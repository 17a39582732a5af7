// Command openctl-agent is the openctl node agent: a small HTTPS server,
// installed on every k3s node, through which openctl reads host facts and
// k3s logs, starts, stops and restarts k3s, and upgrades it, over mutual
// TLS with the cluster's CA. It is a few lines around package
// github.com/openctl/openctl/agent/node (the server and the host); the
// protocol is described in package github.com/openctl/openctl/agent.
//
//	openctl-agent --listen :9443 \
//		--ca /etc/openctl-agent/ca.pem \
//		--cert /etc/openctl-agent/server.pem \
//		--key /etc/openctl-agent/server.key
//
// --release-url (default: the k3s GitHub releases) is where upgrades are
// downloaded from, <release-url>/<version>/sha256sum-<arch>.txt and the
// binary; --health-timeout (default 2m) is how long an upgraded k3s has
// to be up and running and report the new version before it is rolled
// back.
// agent.InstallOptions renders both into the service definition.
//
// It logs JSON lines to standard error and serves until SIGINT or SIGTERM,
// then lets requests in flight finish (at most 30 seconds) and exits 0.
// SIGHUP re-reads the three certificate files, so that a CA rotation step
// takes effect without a restart; if they are invalid the old credentials
// stay. Exit status 2 means a usage or configuration error (a bad flag, a
// missing or invalid certificate file, an invalid release URL, a health
// timeout that is not positive), 1 any
// other failure.
//
// The version it reports (--version, /v1/info, the Openctl-Agent-Version
// header) is the module version the go command recorded in the binary:
// the tag for "go install ...@v1.2.3", a VCS pseudo-version for a build
// in a checkout, "dev" otherwise.
//
// Release builds are static: CGO_ENABLED=0 GOOS=linux GOARCH=amd64, arm64
// or arm.
package main

import (
	"context"
	"os"
	"runtime/debug"

	"github.com/openctl/openctl/agent/node"
)

func main() {
	os.Exit(run(context.Background(), buildVersion(), os.Args[1:], os.Stdout, os.Stderr, hostSystem))
}

// buildVersion is the version of the module the binary was built from, as
// the go command recorded it: the tag for "go install ...@v1.2.3", a
// pseudo-version from the VCS for a build in a checkout, or "dev" when
// nothing was recorded (go run, go test).
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// hostSystem is the System of the machine the agent runs on.
func hostSystem() (node.System, error) {
	h, err := node.NewHostSystem(node.HostOptions{})
	if err != nil {
		return nil, err
	}
	return h, nil
}
