package k3s_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/k3s/k3stest"
	"github.com/openctl/openctl/manifest"
)

// testRotateAgentCA: rotate-agent-ca moves the cluster c's systemd server
// s1 and OpenRC agent a1 to a new agent CA. Throughout, the credentials
// state records — the cluster's and each node's — reach every agent
// (polled every 100 ms); a run cancelled half-way leaves two CAs recorded
// and the next run finishes; the agents reload rather than restart; the
// old controller certificate is refused afterwards; and the next plan
// sees nothing to do. TestAgent runs it.
func testRotateAgentCA(t *testing.T, e *env, c *manifest.Resource, s1, a1 *k3stest.Host) {
	ctx := t.Context()
	hosts := []*k3stest.Host{s1, a1}
	nodeID := func(h *k3stest.Host) manifest.ID {
		return manifest.ID{APIVersion: k3s.APIVersion, Kind: k3s.KindNode, Name: h.Name()}
	}
	before, err := readPKI(ctx, e, c.ID())
	require.NoError(t, err)
	pids := map[string]string{}
	for _, h := range hosts {
		out, err := h.Run(ctx, "pgrep", "-x", "openctl-agent")
		require.NoError(t, err)
		pids[h.Name()] = strings.TrimSpace(string(out))
	}

	// The poller: what state records must reach every agent at every moment.
	var (
		mu       sync.Mutex
		polls    int
		failures []string
	)
	pollCtx, stopPolling := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for pollCtx.Err() == nil {
			for _, h := range hosts {
				for _, id := range []manifest.ID{c.ID(), nodeID(h)} {
					doc, err := readPKI(pollCtx, e, id)
					if err == nil {
						_, err = agentInfo(pollCtx, h, doc)
					}
					if pollCtx.Err() != nil {
						return
					}
					mu.Lock()
					polls++
					if err != nil {
						failures = append(failures, fmt.Sprintf("%s with %s's PKI: %v", h.Name(), id.Name, err))
					}
					mu.Unlock()
				}
			}
			select {
			case <-pollCtx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()

	// A run cancelled once the first node has both CAs.
	runCtx, cancel := context.WithCancel(ctx)
	var steps []string
	observed, err := openctl.New(openctl.WithProviders(e.prov), openctl.WithStore(e.store), openctl.WithObserver(func(ev openctl.Event) {
		if ev.Type != openctl.EventStep || ev.Op != "rotate-agent-ca" {
			return
		}
		steps = append(steps, ev.Step)
		if strings.HasPrefix(ev.Step, s1.Name()+": now accepts both CAs") {
			cancel()
		}
	}))
	require.NoError(t, err)
	_, err = observed.Do(runCtx, c.ID(), "rotate-agent-ca", nil, nil)
	require.Error(t, err, "cancelled half-way")
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
	assert.Equal(t, []string{"new CA made and recorded, accepted alongside the old one", s1.Name() + ": now accepts both CAs and serves a certificate from the new one"}, steps)
	mid, err := readPKI(ctx, e, c.ID())
	require.NoError(t, err)
	bundle, err := pki.ParseBundle([]byte(mid.Accepted))
	require.NoError(t, err)
	assert.Equal(t, 2, bundle.Len(), "half-way, both CAs are recorded")
	assert.Equal(t, before.ClientCert, mid.ClientCert, "the controller keeps its certificate until every agent accepts the new CA")
	var logs strings.Builder
	_, err = e.engine.Do(ctx, nodeID(a1), "logs", map[string]any{"lines": int64(5)}, &logs)
	require.NoError(t, err, "node actions work half-way through a rotation")

	// The next run finishes it.
	start := time.Now()
	res, err := e.engine.Do(ctx, c.ID(), "rotate-agent-ca", nil, nil)
	require.NoError(t, err)
	t.Logf("the resumed rotation took %s", time.Since(start).Round(time.Millisecond))
	assert.Contains(t, res.Message, c.ID().Name+": agent CA rotated on 2 nodes")
	assert.Contains(t, res.Message, "finishing an interrupted rotation")
	// A few more polls with the final PKI.
	mu.Lock()
	rotated := polls
	mu.Unlock()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return polls >= rotated+3
	}, 30*time.Second, 20*time.Millisecond, "the agents are polled after the rotation")
	stopPolling()
	<-polled
	mu.Lock()
	t.Logf("%d polls during the rotation", polls)
	assert.Greater(t, polls, 8)
	assert.Empty(t, failures, "state's PKI must reach every agent at every moment")
	mu.Unlock()

	after, err := readPKI(ctx, e, c.ID())
	require.NoError(t, err)
	final, err := pki.ParseBundle([]byte(after.Accepted))
	require.NoError(t, err)
	require.Equal(t, 1, final.Len())
	old, err := pki.ParseBundle([]byte(before.Accepted))
	require.NoError(t, err)
	assert.NotEqual(t, old.Fingerprints(), final.Fingerprints(), "a new CA")
	for _, h := range hosts {
		doc, err := readPKI(ctx, e, nodeID(h))
		require.NoError(t, err)
		assert.Equal(t, after, doc, "%s records the cluster's PKI", h.Name())
		info, err := agentInfo(ctx, h, after)
		require.NoError(t, err, h.Name())
		assert.Equal(t, final.Fingerprints(), info.AcceptedCAs, h.Name())
		out, err := h.Run(ctx, "cat", agent.DefaultConfigDir+"/"+pki.ServerCertFile)
		require.NoError(t, err)
		cert, err := pki.ParseCert(out)
		require.NoError(t, err)
		assert.Equal(t, pki.Fingerprint(cert), info.ServerCert, "%s serves the certificate on its disk", h.Name())
		_, err = agentInfo(ctx, h, recordedPKI{Accepted: after.Accepted, ClientCert: before.ClientCert, ClientKey: before.ClientKey})
		assert.True(t, errcode.Is(err, errcode.Unauthorized), "%s refuses the old controller certificate: %v", h.Name(), err)
		out, err = h.Run(ctx, "pgrep", "-x", "openctl-agent")
		require.NoError(t, err)
		assert.Equal(t, pids[h.Name()], strings.TrimSpace(string(out)), "%s's agent reloaded, not restarted", h.Name())
	}

	// Nothing left to do: the plan is empty and a re-apply only reads.
	plan, err := e.engine.Plan(ctx, c)
	require.NoError(t, err)
	for _, ch := range plan.Changes {
		assert.Equal(t, openctl.ActionNoOp, ch.Action, "%s: %v %v", ch.ID.Short(), ch.Reasons, ch.Fields)
	}
	e.takeSteps()
	rep, err := e.engine.Apply(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Count(openctl.OutcomeUnchanged))
	for _, s := range e.takeSteps() {
		assert.Contains(t, s, "read the node's state", "a re-apply after a rotation only reads")
	}
	var table strings.Builder
	_, err = e.engine.Do(ctx, c.ID(), "status", nil, &table)
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(table.String(), " true "), table.String())
}
