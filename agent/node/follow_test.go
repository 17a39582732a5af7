package node_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/agenttest"
	"github.com/openctl/openctl/agent/node"
)

// TestFollowLogs: GET /v1/logs/k3s?follow=true sends the last lines, then
// each line logged later as it comes — unbuffered, past the 2-minute
// write deadline of a plain read — until the client stops following.
func TestFollowLogs(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	env.System.SetLogs([]string{"one", "two", "three"})
	ctx, cancel := context.WithCancel(t.Context())
	var out agenttest.LogBuffer
	done := make(chan error, 1)
	go func() { done <- env.Client.FollowLogs(ctx, 2, &out) }()
	require.Eventually(t, func() bool { return out.String() == "two\nthree\n" }, 5*time.Second, 10*time.Millisecond)
	env.System.AppendLog("four")
	require.Eventually(t, func() bool { return out.String() == "two\nthree\nfour\n" }, 5*time.Second, 10*time.Millisecond,
		"a new line arrives at once, alone")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, "the caller stopped following: not an error")
	case <-time.After(5 * time.Second):
		t.Fatal("FollowLogs did not return after its context ended")
	}
	info, err := env.Client.Info(t.Context())
	require.NoError(t, err)
	assert.True(t, info.Has(agent.CapFollow))
}

// TestHostSystemFollowLogsOpenRC: the last lines of OpenRC's log file,
// then what is appended, a file truncated by rotation read from its start,
// until ctx ends.
func TestHostSystemFollowLogsOpenRC(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"run/openrc", "etc/init.d", "var/log"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc/init.d/k3s"), []byte("#!/sbin/openrc-run\n"), 0o755))
	log := filepath.Join(root, "var/log/k3s.log")
	require.NoError(t, os.WriteFile(log, []byte("a\nb\nc\n"), 0o644))
	h, err := node.NewHostSystem(node.HostOptions{Root: root})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	var out agenttest.LogBuffer
	done := make(chan error, 1)
	go func() { done <- h.FollowLogs(ctx, 2, &out) }()
	require.Eventually(t, func() bool { return out.String() == "b\nc\n" }, 5*time.Second, 10*time.Millisecond)
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("d\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Eventually(t, func() bool { return out.String() == "b\nc\nd\n" }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, os.WriteFile(log, []byte("e\n"), 0o644)) // rotated: shorter
	require.Eventually(t, func() bool { return strings.HasSuffix(out.String(), "d\ne\n") }, 5*time.Second, 10*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("FollowLogs did not return after its context ended")
	}
}
