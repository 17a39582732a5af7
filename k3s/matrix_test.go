package k3s_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/manifest"
)

// matrixCase is one failure of the matrix: how to cause it, what a read
// of the cluster must then say, what plan must show, and what apply does.
type matrixCase struct {
	name string
	// cause breaks the cluster; it returns what the checks call the node.
	cause func(ctx context.Context, t *testing.T, s *diffSide) string
	// phase and message: the cluster's status once the failure shows
	// (message: substrings, %s the node).
	phase   string
	message []string
	// plan: a change of this resource (%s the node) with a reason
	// holding this text.
	planID, planReason string
	// repaired: what apply reports for planID.
	repaired openctl.Outcome
	// also checks more of the broken cluster, before the repair.
	also func(ctx context.Context, t *testing.T, s *diffSide, node string)
}

// TestFailureMatrix breaks the example cluster on the sandbox in each of
// the ways a bad day does, one after the other, and checks each time that
// reading it is a status, not an error (at once, naming the node and
// why), that plan shows the repair, that apply makes it, and that after
// it plan is empty and every node Ready. What each step said and how long
// reading and repairing took are logged: the closing note's table.
//
//	go test -run TestFailureMatrix -v ./k3s
func TestFailureMatrix(t *testing.T) {
	t.Parallel()
	s, ctx := appliedSandbox(t)
	runMatrix(ctx, t, s)
}

// TestFailureMatrixReal runs the matrix on the real test hosts (network
// namespaces, the k3s stand-in: kube-apiserver and etcd), as the
// differential test's real side does. It takes minutes, so it runs on
// request:
//
//	OPENCTL_MATRIX_REAL=1 K3S_STANDIN_BINARY=$PWD/bin/k3s-standin go test -run TestFailureMatrixReal -v -timeout 30m ./k3s
func TestFailureMatrixReal(t *testing.T) {
	if os.Getenv("OPENCTL_MATRIX_REAL") != "1" {
		t.Skip("the failure matrix on the real test hosts runs with OPENCTL_MATRIX_REAL=1 (minutes; root and the k3s stand-in)")
	}
	s := newRealSide(t)
	ctx, cancel := context.WithTimeout(t.Context(), 25*time.Minute)
	t.Cleanup(cancel)
	_, err := s.engine.Apply(ctx, s.cluster)
	require.NoError(t, err)
	runMatrix(ctx, t, s)
}

// runMatrix runs every case of the matrix on side s, whose cluster is
// applied, one after the other.
func runMatrix(ctx context.Context, t *testing.T, s *diffSide) {
	vm := func(name string) manifest.ID {
		return manifest.ID{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: name}
	}
	stop := func(name string) func(context.Context, *testing.T, *diffSide) string {
		return func(ctx context.Context, t *testing.T, s *diffSide) string {
			_, err := s.engine.Do(ctx, vm(name), "stop", nil, nil)
			require.NoError(t, err)
			return name
		}
	}
	destroy := func(name string) func(context.Context, *testing.T, *diffSide) string {
		return func(ctx context.Context, t *testing.T, s *diffSide) string {
			for _, v := range guestVMs(s.srv) {
				if v.Name == name {
					require.NoError(t, s.srv.DestroyVM(v.VMID))
				}
			}
			return name
		}
	}
	cases := []matrixCase{
		{
			name: "one server powered off", cause: stop("dev-cp-1"),
			phase:   k3s.PhaseDegraded,
			message: []string{"%s is Stopped (its VirtualMachine %s is stopped)", "etcd keeps its quorum: 2 of 3 servers up"},
			planID:  "VirtualMachine/%s", planReason: "the VM is stopped and its spec says running: apply starts it", repaired: openctl.OutcomeUpdated,
			also: func(ctx context.Context, t *testing.T, s *diffSide, node string) {
				// The Node reads as Stopped too, with what was recorded of
				// it; the others are Ready; plan says what else it sees.
				n, err := s.engine.Get(ctx, manifestID(t, "Node/"+node))
				require.NoError(t, err)
				assert.Equal(t, k3s.PhaseStopped, n.Resource.Status["phase"])
				assert.Equal(t, "its VirtualMachine "+node+" is stopped", n.Resource.Status["message"])
				assert.NotEmpty(t, n.Resource.Status["cluster"], "what was recorded of it stays")
				n, err = s.engine.Get(ctx, manifestID(t, "Node/dev-cp-0"))
				require.NoError(t, err)
				assert.Equal(t, k3s.PhaseReady, n.Resource.Status["phase"])
				plan, err := s.engine.Plan(ctx, s.cluster)
				require.NoError(t, err)
				actions := map[string]string{}
				for _, c := range plan.Changes {
					actions[c.ID.Short()] = string(c.Action) + ": " + strings.Join(c.Reasons, "; ")
				}
				assert.Contains(t, actions["Node/"+node], "known only after apply")
				assert.Contains(t, actions["Cluster/dev"], "the cluster is Degraded: ")
			},
		},
		{
			name: "the VIP holder powered off",
			cause: func(ctx context.Context, t *testing.T, s *diffSide) string {
				holder := vipHolder(ctx, t, s)
				return stop(holder)(ctx, t, s)
			},
			phase:   k3s.PhaseDegraded,
			message: []string{"%s is Stopped (its VirtualMachine %s is stopped)", "etcd keeps its quorum: 2 of 3 servers up"},
			planID:  "VirtualMachine/%s", planReason: "the VM is stopped and its spec says running: apply starts it", repaired: openctl.OutcomeUpdated,
		},
		{
			name: "a worker powered off", cause: stop("dev-worker-1"),
			phase:   k3s.PhaseDegraded,
			message: []string{"%s is Stopped (its VirtualMachine %s is stopped)"},
			planID:  "VirtualMachine/%s", planReason: "the VM is stopped and its spec says running: apply starts it", repaired: openctl.OutcomeUpdated,
		},
		{
			name: "two of three servers powered off",
			cause: func(ctx context.Context, t *testing.T, s *diffSide) string {
				stop("dev-cp-0")(ctx, t, s)
				return stop("dev-cp-2")(ctx, t, s)
			},
			phase:   k3s.PhaseDown,
			message: []string{"the API at https://", "etcd has lost its quorum: 1 of 3 servers up, 2 needed"},
			planID:  "VirtualMachine/%s", planReason: "the VM is stopped and its spec says running: apply starts it", repaired: openctl.OutcomeUpdated,
		},
		{
			name: "k3s stopped on a node",
			cause: func(ctx context.Context, t *testing.T, s *diffSide) string {
				_, err := s.run(ctx, "dev-worker-0", "systemctl stop k3s-agent")
				require.NoError(t, err)
				return "dev-worker-0"
			},
			phase:   k3s.PhaseDegraded,
			message: []string{"%s is Stopped (the k3s-agent service is inactive)"},
			planID:  "Node/%s", planReason: "the node is Stopped: the k3s-agent service is inactive", repaired: openctl.OutcomeUpdated,
		},
		{
			name: "the agent stopped",
			cause: func(ctx context.Context, t *testing.T, s *diffSide) string {
				_, err := s.run(ctx, "dev-cp-2", "systemctl stop "+agent.ServiceName)
				require.NoError(t, err)
				return "dev-cp-2"
			},
			phase:   k3s.PhaseDegraded,
			message: []string{"%s is NotReady (", "agent"},
			planID:  "Node/%s", planReason: "the node is NotReady", repaired: openctl.OutcomeUpdated,
		},
		{
			name: "a worker's VM destroyed outside openctl", cause: destroy("dev-worker-0"),
			phase:   k3s.PhaseDegraded,
			message: []string{"%s is Unreachable (its VirtualMachine %s does not exist (destroyed outside openctl?): apply creates it again)"},
			planID:  "VirtualMachine/%s", planReason: "recorded in state but gone", repaired: openctl.OutcomeCreated,
		},
		{
			name: "a server's VM destroyed outside openctl", cause: destroy("dev-cp-1"),
			phase:   k3s.PhaseDegraded,
			message: []string{"%s is Unreachable (its VirtualMachine %s does not exist", "etcd keeps its quorum: 2 of 3 servers up"},
			planID:  "VirtualMachine/%s", planReason: "recorded in state but gone", repaired: openctl.OutcomeCreated,
		},
	}
	for _, tc := range cases {
		node := tc.cause(ctx, t, s)
		f := func(s string) string { return strings.ReplaceAll(s, "%s", node) }

		// Reading is a status, at once.
		var st map[string]any
		var took time.Duration
		require.Eventually(t, func() bool {
			start := time.Now()
			c, err := s.engine.Get(ctx, s.cluster.ID())
			took = time.Since(start)
			require.NoError(t, err, "%s: reading the cluster is not an error", tc.name)
			st = c.Resource.Status
			return st["phase"] == tc.phase
		}, 2*time.Minute, 500*time.Millisecond, "%s: the cluster is %s", tc.name, tc.phase)
		msg, _ := st["message"].(string)
		for _, m := range tc.message {
			assert.Contains(t, msg, f(m), tc.name)
		}
		// Read at once: a node's host gets a second before its VM is
		// asked, the API 5 s for /readyz.
		assert.Less(t, took, 15*time.Second, "%s: read at once", tc.name)
		if tc.also != nil {
			tc.also(ctx, t, s, node)
		}

		// Plan shows the repair.
		plan, err := s.engine.Plan(ctx, s.cluster)
		require.NoError(t, err, tc.name)
		shown := ""
		for _, c := range plan.Changes {
			if c.ID.Short() == f(tc.planID) {
				shown = string(c.Action) + ": " + strings.Join(c.Reasons, "; ")
			}
		}
		assert.NotEmpty(t, shown, "%s: plan shows a change of %s", tc.name, f(tc.planID))
		assert.Contains(t, shown, tc.planReason, tc.name)

		// Apply repairs it, and then nothing is left to do.
		start := time.Now()
		rep, err := s.engine.Apply(ctx, s.cluster)
		repair := time.Since(start)
		require.NoError(t, err, "%s: apply repairs", tc.name)
		r, ok := rep.Result(manifestID(t, f(tc.planID)))
		require.True(t, ok, tc.name)
		assert.Equal(t, tc.repaired, r.Outcome, tc.name)
		c, err := s.engine.Get(ctx, s.cluster.ID())
		require.NoError(t, err)
		assert.Equal(t, k3s.PhaseReady, c.Resource.Status["phase"], "%s: %v", tc.name, c.Resource.Status["message"])
		assert.Equal(t, "5/5", c.Resource.Status["readyNodes"], tc.name)
		after, err := s.engine.Plan(ctx, s.cluster)
		require.NoError(t, err)
		assert.False(t, after.HasChanges(), "%s: plan after the repair: %v", tc.name, after.Changes)
		t.Logf("%-38s | status %s (%v): %q | plan: %s %s | apply: %s in %v", tc.name, tc.phase, took.Round(time.Millisecond), msg, f(tc.planID), shown, r.Outcome, repair.Round(100*time.Millisecond))
	}
}

// vipHolder is the server whose host has the cluster's VIP.
func vipHolder(ctx context.Context, t *testing.T, s *diffSide) string {
	c, err := s.engine.Get(ctx, s.cluster.ID())
	require.NoError(t, err)
	u, err := url.Parse(fmt.Sprint(c.Resource.Status["endpoint"]))
	require.NoError(t, err)
	for _, n := range []string{"dev-cp-0", "dev-cp-1", "dev-cp-2"} {
		out, err := s.run(ctx, n, "ip -4 addr show")
		require.NoError(t, err)
		if strings.Contains(out, " "+u.Hostname()+"/") {
			return n
		}
	}
	t.Fatalf("no server holds the VIP %s", u.Hostname())
	return ""
}

// manifestID parses "Kind/name" among the example's kinds.
func manifestID(t *testing.T, short string) manifest.ID {
	kind, name, ok := strings.Cut(short, "/")
	require.True(t, ok, short)
	if kind == k3s.KindNode {
		return manifest.ID{APIVersion: k3s.APIVersion, Kind: kind, Name: name}
	}
	return manifest.ID{APIVersion: "proxmox.openctl.io/v1", Kind: kind, Name: name}
}
