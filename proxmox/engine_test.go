package proxmox_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fleet(n int, nodes ...string) []*manifest.Resource {
	var rs []*manifest.Resource
	for i := range n {
		spec := map[string]any{}
		if len(nodes) > 0 {
			l := make([]any, len(nodes))
			for j, nd := range nodes {
				l[j] = nd
			}
			spec["node"] = nil
			spec["nodes"] = l
		}
		r := vm(fmt.Sprintf("vm-%02d", i), spec)
		if len(nodes) > 0 {
			delete(r.Spec, "node")
		}
		rs = append(rs, r)
	}
	return rs
}

func engine(t testing.TB, p *proxmox.Provider, concurrency int) *openctl.Engine {
	t.Helper()
	return engineWithRetry(t, p, concurrency, 8)
}

// engineWithStore returns an engine for p recording into st.
func engineWithStore(t testing.TB, p *proxmox.Provider, st state.Store) *openctl.Engine {
	t.Helper()
	e, err := openctl.New(openctl.WithProviders(p), openctl.WithStore(st),
		openctl.WithRetry(backoff.Policy{MaxAttempts: 4, Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}))
	require.NoError(t, err)
	return e
}

// engineWithRetry returns an engine for p that makes up to attempts
// attempts of a provider call failing transiently, 10ms apart growing to
// 200ms. It is the one place these tests set the engine's retry policy.
func engineWithRetry(t testing.TB, p *proxmox.Provider, concurrency, attempts int) *openctl.Engine {
	t.Helper()
	e, err := openctl.New(openctl.WithProviders(p), openctl.WithConcurrency(concurrency),
		openctl.WithRetry(backoff.Policy{MaxAttempts: attempts, Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}))
	require.NoError(t, err)
	return e
}

// TestTwentyVMsInParallel: 20 VMs with concurrency 8 on 3 nodes — no VMID
// collision, none leaked, all running with addresses; a second apply makes
// no write; delete removes everything.
func TestTwentyVMsInParallel(t *testing.T) {
	e := newEnv(t, proxmoxtest.WithNodes(3), proxmoxtest.WithSharedStorage("ceph"),
		proxmoxtest.WithTemplates(proxmoxtest.Template{VMID: 9000, Name: "ubuntu-24.04-cloud", Node: "pve1", Agent: true, Storage: "ceph"}))
	ctx := ctxT(t)
	eng := engine(t, e.p, 8)
	rs := fleet(20, "pve1", "pve2", "pve3")

	rep, err := eng.Apply(ctx, rs...)
	require.NoError(t, err)
	require.Equal(t, 20, rep.Count(openctl.OutcomeCreated))

	vms := guests(e.srv)
	require.Len(t, vms, 20, "exactly one VM per manifest")
	ids := map[int]bool{}
	perNode := map[string]int{}
	for _, r := range rep.Results {
		id := int(status(t, r.Resource, "vmid").(int64))
		require.False(t, ids[id], "VMID %d used twice", id)
		ids[id] = true
		assert.Equal(t, "running", status(t, r.Resource, "state"))
		assert.NotEmpty(t, status(t, r.Resource, "ip"))
		sim := vms[r.ID.Name]
		assert.Equal(t, id, sim.VMID)
		assert.True(t, sim.Running)
		perNode[sim.Node]++
	}
	assert.Len(t, perNode, 3, "nodes: [...] spreads VMs by free memory: %v", perNode)

	before := writes(e.srv)
	rep, err = eng.Apply(ctx, rs...)
	require.NoError(t, err)
	assert.Equal(t, 20, rep.Count(openctl.OutcomeUnchanged))
	assert.Equal(t, before, writes(e.srv), "a second apply must make zero writes")

	ids2 := make([]manifest.ID, len(rs))
	for i, r := range rs {
		ids2[i] = r.ID()
	}
	rep, err = eng.Delete(ctx, ids2...)
	require.NoError(t, err)
	assert.Equal(t, 20, rep.Count(openctl.OutcomeDeleted))
	assert.Empty(t, guests(e.srv))
}

// TestApplyUnderFaults: 10% HTTP 500 on every route, lock timeouts and 5%
// task failures (fixed seed). Every VM either converges (running, with an
// address) or fails with a per-VM error, and nothing half-made is left:
// every VM in the simulator is one the report calls created. A second
// apply without faults converges the rest.
func TestApplyUnderFaults(t *testing.T) {
	e := newEnv(t, proxmoxtest.WithNodes(3), proxmoxtest.WithSeed(42), proxmoxtest.WithFaults(proxmoxtest.Faults{
		ErrorRate: 0.10, LockTimeoutRate: 0.05, TaskFailureRate: 0.05,
	}))
	ctx := ctxT(t)
	eng := engine(t, e.p, 8)
	rs := fleet(20, "pve1")

	rep, _ := eng.Apply(ctx, rs...)
	require.NotNil(t, rep)
	vms := guests(e.srv)
	created := 0
	for _, r := range rep.Results {
		switch r.Outcome {
		case openctl.OutcomeCreated:
			created++
			sim, ok := vms[r.ID.Name]
			require.True(t, ok, "%s reported created but missing", r.ID.Name)
			assert.True(t, sim.Running, "%s", r.ID.Name)
			assert.NotEmpty(t, r.Resource.Status["ip"], "%s", r.ID.Name)
		case openctl.OutcomeFailed:
			require.Error(t, r.Err)
			assert.Contains(t, r.Err.Error(), r.ID.Name, "the error names the VM")
			t.Logf("failed as expected under faults: %v", r.Err)
			_, left := vms[r.ID.Name]
			assert.False(t, left, "%s failed but left a half-made VM: %v", r.ID.Name, r.Err)
		default:
			t.Fatalf("%s: unexpected outcome %s", r.ID.Name, r.Outcome)
		}
	}
	assert.Len(t, vms, created, "only converged VMs exist")
	t.Logf("under faults: %d of 20 created, %d requests", created, total(e.srv))

	// Faults are per request; with them still on, re-applying converges.
	for range 3 {
		if rep, err := eng.Apply(ctx, rs...); err == nil {
			assert.Equal(t, 20, rep.Count(openctl.OutcomeCreated)+rep.Count(openctl.OutcomeUnchanged))
			break
		}
	}
	assert.Len(t, guests(e.srv), 20)
}

func total(srv *proxmoxtest.Server) int {
	n := 0
	for _, c := range srv.RequestCounts() {
		n += c
	}
	return n
}

// TestTokenWithoutCloneIsUnauthorized: the missing privilege is named and
// nothing is retried or created.
func TestTokenWithoutCloneIsUnauthorized(t *testing.T) {
	srv := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(fastLatencies))
	sec, err := srv.AddToken("ops@pve!limited", "VM.Audit", "Sys.Audit", "Datastore.Audit", "VM.Allocate", "VM.Config.Options")
	require.NoError(t, err)
	p := newProvider(t, srv, func(c *proxmox.Config) {
		ctx := c.Contexts["sim"]
		ctx.TokenID, ctx.TokenSecret = "ops@pve!limited", secretOf(sec)
		c.Contexts["sim"] = ctx
	})
	_, err = p.Apply(ctxT(t), vm("web-01", nil))
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Unauthorized), "%v", err)
	assert.Contains(t, err.Error(), "VM.Clone")
	assert.NotContains(t, err.Error(), sec, "the secret never appears in errors")
	assert.Empty(t, guests(srv))
	assert.Equal(t, 1, srv.RequestCount("POST /nodes/{node}/qemu/{vmid}/clone"), "an authorisation failure is not retried")
}

// TestFingerprintMismatchRefusesToConnect: a pinned fingerprint that is not
// the server's fails before any request is sent.
func TestFingerprintMismatchRefusesToConnect(t *testing.T) {
	srv := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(fastLatencies))
	p := newProvider(t, srv, func(c *proxmox.Config) {
		ctx := c.Contexts["sim"]
		ctx.Fingerprint = strings.Repeat("AB:", 31) + "AB"
		c.Contexts["sim"] = ctx
	})
	_, err := p.Apply(ctxT(t), vm("web-01", nil))
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Unauthorized), "%v", err)
	assert.Contains(t, err.Error(), "fingerprint")
	assert.Zero(t, total(srv), "no request may reach a server whose certificate does not match")
}

// TestRefToAFieldNoVMHas: a $ref to a VM field that does not exist
// (status.adress) is refused by Validate, before anything is applied;
// one that exists (status.ip) is accepted.
func TestRefToAFieldNoVMHas(t *testing.T) {
	e := engine(t, newEnv(t).p, 2)
	web := vm("web-01", nil)
	user := func(field string) *manifest.Resource {
		return &manifest.Resource{APIVersion: proxmox.APIVersion, Kind: proxmox.KindVirtualMachine, Metadata: manifest.Metadata{Name: "app-01"},
			Spec: vm("app-01", map[string]any{"description": refs.Marker(vmID("web-01"), field)}).Spec}
	}
	require.NoError(t, e.Validate(t.Context(), web, user("status.ip")))
	err := e.Validate(t.Context(), web, user("status.adress"))
	require.ErrorIs(t, err, errcode.Invalid)
	assert.ErrorContains(t, err, "status.adress")
}

// TestApplyChecksTheEndpointsFirst: when one of the contexts an Apply
// uses refuses its token, the Apply fails before anything is cloned —
// also on the contexts that work — naming the endpoint and the token,
// instead of creating half of the VMs.
func TestApplyChecksTheEndpointsFirst(t *testing.T) {
	env := newEnv(t)
	p := newProvider(t, env.srv, func(c *proxmox.Config) {
		bad := c.Contexts["sim"]
		bad.TokenSecret = secret.New("00000000-0000-0000-0000-000000000000")
		c.Contexts["bad"] = bad
		c.DefaultContext = "sim"
	})
	before := writes(env.srv)
	_, err := engine(t, p, 2).Apply(ctxT(t), vm("web-01", nil), vm("web-02", map[string]any{"context": "bad"}))
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Unauthorized), "%v", err)
	assert.ErrorContains(t, err, `context "bad"`)
	assert.Equal(t, before, writes(env.srv), "nothing is changed when a context cannot be used")
}
