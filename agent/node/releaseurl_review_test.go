package node_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/agenttest"
	"github.com/openctl/openctl/agent/node"
	"github.com/openctl/openctl/errcode"
)

// A release URL with an empty query ("?") or an empty fragment ("#")
// parses with no query and no fragment, but <ReleaseURL>/<version>/<asset>
// built from it is not a path under it: "?" turns the version and asset
// into a query, "#" drops them, so every download would fetch the base
// URL itself. The agent refuses such a URL, as the install helpers do.
func TestReviewReleaseURLEmptyQueryOrFragmentRejected(t *testing.T) {
	sys := agenttest.NewSystem(t)
	for _, u := range []string{
		"https://example.com/k3s?",
		"https://example.com/k3s#",
		"https://example.com/k3s/?#",
		"https://example.com/?/k3s",
		"http://example.com#",
	} {
		_, err := node.NewServer(node.ServerConfig{System: sys, ReleaseURL: u})
		require.Error(t, err, u)
		assert.True(t, errcode.Is(err, errcode.Invalid), "%s: %v", u, err)
		_, err = agent.InstallFiles(agent.InstallOptions{Init: agent.Systemd, ReleaseURL: u})
		assert.True(t, errcode.Is(err, errcode.Invalid), "install helpers refuse %s too: %v", u, err)
	}
}

// Every release URL the install helpers put on the agent's command line
// is one the agent starts with.
func TestReviewInstallReleaseURLAcceptedByAgent(t *testing.T) {
	sys := agenttest.NewSystem(t)
	for _, u := range []string{
		"https://mirror.example.com:8443/k3s/%2Breleases/download;v=1/~user/(x)&y=z!*,@:",
		"http://[fd00::1]:8080/k3s",
		"https://mirror.example.com/k3s/releases/download/",
		"http://10.0.0.1",
	} {
		_, err := agent.InstallFiles(agent.InstallOptions{Init: agent.OpenRC, ReleaseURL: u})
		require.NoError(t, err, u)
		_, err = node.NewServer(node.ServerConfig{System: sys, ReleaseURL: u})
		assert.NoError(t, err, u)
	}
}
