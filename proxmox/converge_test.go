package proxmox_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pve "github.com/luthermonson/go-proxmox"
	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// foreignClient is another client of the simulated cluster (an openctl
// process that was killed, an administrator): it starts tasks through the
// API, as they would.
func foreignClient(t testing.TB, srv *proxmoxtest.Server) *pve.Client {
	t.Helper()
	id, sec := srv.Token()
	return pve.NewClient(srv.URL(), pve.WithHTTPClient(srv.Client()), pve.WithAPIToken(id, sec))
}

// settled waits until no task runs on the simulator (the clones and
// destroys of the calls under test have all ended).
func settled(t testing.TB, srv *proxmoxtest.Server, c *pve.Client) {
	t.Helper()
	require.Eventually(t, func() bool {
		var ts []map[string]any
		if err := c.Get(context.Background(), "/nodes/pve1/tasks?source=active", &ts); err != nil {
			return false
		}
		return len(ts) == 0 && !slices.ContainsFunc(srv.VMs(), func(v proxmoxtest.VM) bool { return v.Lock != "" })
	}, 10*time.Second, 2*time.Millisecond)
}

// TestInterruptedCreateIsFinished (issue 12 item 1): an Apply killed
// right after the configure task (or right after asking for the start)
// leaves a VM whose creation is unfinished. Proxmox's config task used to
// rewrite the description without the "provisioning" marker, so a new
// process found a stopped VM, counted it as created and never started it,
// and Plan reported no change. Now the marker stays until the VM is
// converged: Diff reports the VM as a change (spec.state stopped →
// running), the next Apply starts it and waits for its address, and a
// Plan afterwards is a no-op.
func TestInterruptedCreateIsFinished(t *testing.T) {
	for _, route := range []string{"POST /nodes/{node}/qemu/{vmid}/config", "POST /nodes/{node}/qemu/{vmid}/status/start"} {
		t.Run(route[strings.LastIndex(route, "/")+1:], func(t *testing.T) {
			lat := fastLatencies
			lat.Start = 150 * time.Millisecond
			var cancelFirst atomic.Pointer[context.CancelFunc]
			srv := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(lat), proxmoxtest.WithRequestHook(func(r proxmoxtest.RequestInfo) {
				if r.Route == route && r.Status == http.StatusOK {
					if c := cancelFirst.Swap(nil); c != nil {
						(*c)() // the first process is killed here
					}
				}
			}))
			ctx, cancel := context.WithCancel(ctxT(t))
			cancelFirst.Store(&cancel)
			_, err := newProvider(t, srv, nil).Apply(ctx, vm("web-01", nil))
			require.ErrorIs(t, err, context.Canceled)

			p := newProvider(t, srv, nil) // a new process
			if route == "POST /nodes/{node}/qemu/{vmid}/config" {
				// Killed before the start: the VM is stopped, and Plan
				// must say that apply will start it.
				live, err := p.Get(ctxT(t), vmID("web-01"))
				require.NoError(t, err)
				require.Equal(t, "stopped", live.Status["state"])
				d, err := p.Diff(ctxT(t), vm("web-01", nil), live)
				require.NoError(t, err)
				assert.Equal(t, registry.DiffUpdate, d.Action, "%+v", d)
				assert.Contains(t, d.Fields, manifest.FieldChange{Path: "spec.state", Old: "stopped", New: "running"})
			}

			eng := engine(t, p, 1)
			rep, err := eng.Apply(ctxT(t), vm("web-01", nil))
			require.NoError(t, err)
			res := rep.Results[0].Resource
			assert.Equal(t, "running", res.Status["state"])
			assert.NotEmpty(t, res.Status["ip"])
			g := guests(srv)
			require.Len(t, g, 1)
			assert.True(t, g["web-01"].Running, "the VM runs")
			assert.NotContains(t, g["web-01"].Config["description"], "provisioning", "the marker goes once the VM is converged")

			plan, err := eng.Plan(ctxT(t), vm("web-01", nil))
			require.NoError(t, err)
			assert.False(t, plan.HasChanges(), "%+v", plan.Changes)
		})
	}
}

// TestProvisioningMarkerLastsUntilConverged: the marker is on the VM
// through the configure task and the start, and only goes once the
// address is known.
func TestProvisioningMarkerLastsUntilConverged(t *testing.T) {
	var srvRef atomic.Pointer[proxmoxtest.Server]
	var mu sync.Mutex
	var seen []string // the marker's state at each config and start request
	srv := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(fastLatencies), proxmoxtest.WithRequestHook(func(r proxmoxtest.RequestInfo) {
		if r.Status != http.StatusOK || (r.Method != http.MethodPost && r.Method != http.MethodPut) || strings.HasSuffix(r.Route, "/clone") {
			return
		}
		for _, v := range srvRef.Load().VMs() {
			if v.Name == "web-01" {
				mu.Lock()
				seen = append(seen, fmt.Sprintf("%s %s provisioning=%v", r.Method, r.Route[strings.LastIndex(r.Route, "/")+1:], strings.Contains(v.Config["description"], "; provisioning")))
				mu.Unlock()
			}
		}
	}))
	srvRef.Store(srv)
	_, err := newProvider(t, srv, nil).Apply(ctxT(t), vm("web-01", nil))
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"POST config provisioning=true", "POST start provisioning=true", "PUT config provisioning=false"}, seen)
}

// TestDestroyInFlightIsNotAdopted (issue 12 item 2): a destroy still
// running (started by a killed run, or anyone else) must not be adopted
// as the VM: Apply waits for it and then creates a new VM.
func TestDestroyInFlightIsNotAdopted(t *testing.T) {
	lat := fastLatencies
	lat.Destroy = 300 * time.Millisecond
	srv := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(lat))
	r := vm("web-01", map[string]any{"state": "stopped"})
	old, err := newProvider(t, srv, nil).Apply(ctxT(t), r)
	require.NoError(t, err)
	oldID := old.Status["vmid"].(int64)

	fc := foreignClient(t, srv)
	var upid pve.UPID
	require.NoError(t, fc.Delete(ctxT(t), fmt.Sprintf("/nodes/pve1/qemu/%d?purge=1", oldID), &upid))

	var steps []string
	res, err := newProvider(t, srv, nil).Apply(withSteps(ctxT(t), &steps), r)
	require.NoError(t, err)
	// Proxmox reuses the freed VMID: a new VM shows in a second clone.
	assert.Equal(t, 2, srv.RequestCount("POST /nodes/{node}/qemu/{vmid}/clone"), "the dying VM was adopted")
	settled(t, srv, fc)
	g := guests(srv)
	require.Len(t, g, 1, "%v", srv.VMs())
	assert.Equal(t, res.Status["vmid"], int64(g["web-01"].VMID), "the VM Apply reported exists")
	assert.True(t, slices.ContainsFunc(steps, func(s string) bool { return strings.HasPrefix(s, "waiting for task qmdestroy") }), "%v", steps)
}

// TestStartInFlightIsAwaited (issue 12 item 2): a start task still running
// (a cancelled apply's, another client's) is waited for; Apply and the
// start action do not start the VM again and fail with "VM ... already
// running".
func TestStartInFlightIsAwaited(t *testing.T) {
	for _, via := range []string{"apply", "action"} {
		t.Run(via, func(t *testing.T) {
			lat := fastLatencies
			lat.Start = 300 * time.Millisecond
			srv := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(lat))
			created, err := newProvider(t, srv, nil).Apply(ctxT(t), vm("web-01", map[string]any{"state": "stopped"}))
			require.NoError(t, err)
			id := created.Status["vmid"].(int64)

			var upid pve.UPID
			require.NoError(t, foreignClient(t, srv).Post(ctxT(t), fmt.Sprintf("/nodes/pve1/qemu/%d/status/start", id), nil, &upid))

			p := newProvider(t, srv, nil)
			var res *manifest.Resource
			if via == "apply" {
				res, err = p.Apply(ctxT(t), vm("web-01", map[string]any{"state": "running"}))
			} else {
				var out *registry.ActionResult
				out, err = p.Do(ctxT(t), registry.ActionRequest{ID: vmID("web-01"), Action: "start"})
				if err == nil {
					res = out.Resource
					assert.Equal(t, "web-01 is already running", out.Message)
				}
			}
			require.NoError(t, err)
			assert.Equal(t, "running", res.Status["state"])
			assert.Equal(t, 1, srv.RequestCount("POST /nodes/{node}/qemu/{vmid}/status/start"), "the foreign start and none more")
		})
	}
}

// TestVMVanishingMidReadIsGone (issue 12 item 7): a VM destroyed while
// Plan reads it — between the cluster list and its config, between Get
// and Diff, or while Get asks its guest agent — is gone, not an error.
// Proxmox answers 500 "Configuration file 'nodes/<node>/qemu-server/<id>.conf'
// does not exist" for it (BEHAVIOUR.md, Lifecycle).
func TestVMVanishingMidReadIsGone(t *testing.T) {
	setup := func(t *testing.T, route string) (*proxmoxtest.Server, *proxmox.Provider, *atomic.Int64) {
		var srvRef atomic.Pointer[proxmoxtest.Server]
		var armed atomic.Int64 // the VMID to remove after the next request to route
		srv := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(fastLatencies), proxmoxtest.WithRequestHook(func(r proxmoxtest.RequestInfo) {
			if r.Route == route {
				if id := armed.Swap(0); id != 0 {
					_ = srvRef.Load().RemoveVM(int(id))
				}
			}
		}))
		srvRef.Store(srv)
		p := newProvider(t, srv, nil)
		_, err := p.Apply(ctxT(t), vm("web-01", nil))
		require.NoError(t, err)
		return srv, p, &armed
	}
	t.Run("between list and config", func(t *testing.T) {
		srv, p, armed := setup(t, "GET /cluster/resources")
		armed.Store(int64(guests(srv)["web-01"].VMID))
		_, err := p.Get(ctxT(t), vmID("web-01"))
		assert.True(t, errcode.Is(err, errcode.NotFound), "%v", err)
	})
	t.Run("between get and diff", func(t *testing.T) {
		srv, p, _ := setup(t, "")
		live, err := p.Get(ctxT(t), vmID("web-01"))
		require.NoError(t, err)
		require.NoError(t, srv.RemoveVM(guests(srv)["web-01"].VMID))
		d, err := p.Diff(ctxT(t), vm("web-01", nil), live)
		require.NoError(t, err)
		assert.Equal(t, registry.DiffUpdate, d.Action)
		assert.Contains(t, strings.Join(d.Reasons, "; "), "disappeared")
	})
	t.Run("plan, while the agent is asked", func(t *testing.T) {
		srv, p, armed := setup(t, "GET /nodes/{node}/qemu/{vmid}/pending")
		armed.Store(int64(guests(srv)["web-01"].VMID))
		plan, err := engine(t, p, 1).Plan(ctxT(t), vm("web-01", nil))
		require.NoError(t, err)
		c, ok := plan.Change(vmID("web-01"))
		require.True(t, ok)
		assert.Equal(t, openctl.ActionCreate, c.Action)
	})
}

// TestGetAddressNeverSilentlyBlank (issue 12, smaller things): under
// injected 5xx on the guest agent, Get either reports the address or
// fails TRANSIENT (for the engine to retry the whole Get, per "Who
// retries"); it never reports a running VM without an address and
// without saying why. Through the engine's retries, every Get has the
// address.
func TestGetAddressNeverSilentlyBlank(t *testing.T) {
	agent := "GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces"
	e := newEnv(t, proxmoxtest.WithFaults(proxmoxtest.Faults{Routes: []string{agent}, ErrorRate: 0.3}))
	_, err := e.p.Apply(ctxT(t), vm("web-01", nil))
	require.NoError(t, err)
	failed := 0
	for range 30 {
		res, err := e.p.Get(ctxT(t), vmID("web-01"))
		if err != nil {
			assert.True(t, errcode.Is(err, errcode.Transient), "%v", err)
			failed++
			continue
		}
		assert.NotEmpty(t, res.Status["ip"], "a running VM's address, silently blank: %v", res.Status)
	}
	assert.Positive(t, failed, "faults were injected")
	eng := engine(t, e.p, 1)
	for range 10 {
		f, err := eng.Get(ctxT(t), vmID("web-01"))
		require.NoError(t, err)
		assert.NotEmpty(t, f.Resource.Status["ip"])
	}
}

// TestAddressUnknownSaysWhy: a running VM whose guest agent is not up yet
// has no address, and status.ipError says why.
func TestAddressUnknownSaysWhy(t *testing.T) {
	lat := fastLatencies
	lat.AgentUp = time.Hour
	e := newEnv(t, proxmoxtest.WithLatencies(lat))
	_, err := e.p.Apply(ctxT(t), vm("web-01", map[string]any{"state": "stopped"}))
	require.NoError(t, err)
	var upid pve.UPID
	require.NoError(t, foreignClient(t, e.srv).Post(ctxT(t), fmt.Sprintf("/nodes/pve1/qemu/%d/status/start", guests(e.srv)["web-01"].VMID), nil, &upid))
	require.Eventually(t, func() bool { return guests(e.srv)["web-01"].Running }, 5*time.Second, 2*time.Millisecond)
	res, err := e.p.Get(ctxT(t), vmID("web-01"))
	require.NoError(t, err)
	assert.Equal(t, "running", res.Status["state"])
	assert.Nil(t, res.Status["ip"])
	assert.Contains(t, res.Status["ipError"], "guest agent is not running")
}

// TestAgentAddress: a VM's address is what its guest agent reports on
// its network interface, never a loopback address (the guest's "lo").
func TestAgentAddress(t *testing.T) {
	e := newEnv(t)
	res, err := e.p.Apply(ctxT(t), vm("web-01", nil))
	require.NoError(t, err)
	ip, err := netip.ParseAddr(fmt.Sprint(res.Status["ip"]))
	require.NoError(t, err)
	assert.False(t, ip.IsLoopback(), "%s", ip)
	assert.NotContains(t, fmt.Sprint(res.Status["ips"]), "127.")
}
