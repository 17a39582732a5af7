package proxmox_test

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUpdateInPlaceWaitsForRestartUnlessAllowed: cpu and memory changes on
// a running VM stay pending (Plan says so) with restartPolicy never, and
// are applied by a reboot with ifRequired. Tags apply at once.
func TestUpdateInPlaceWaitsForRestartUnlessAllowed(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	eng := engine(t, e.p, 2)
	r := vm("web-01", nil)
	_, err := eng.Apply(ctx, r)
	require.NoError(t, err)

	r2 := r.DeepCopy()
	r2.Spec["cpu"] = map[string]any{"cores": int64(4)}
	r2.Spec["memory"] = map[string]any{"size": int64(4096)}
	r2.Spec["tags"] = []any{"db"}
	plan, err := eng.Plan(ctx, r2)
	require.NoError(t, err)
	c := plan.Changes[0]
	assert.Equal(t, openctl.ActionUpdate, c.Action)
	assert.Contains(t, joined(c.Reasons), "takes effect after a reboot")
	assert.Contains(t, paths(c.Fields), "spec.cpu.cores")
	assert.Contains(t, paths(c.Fields), "spec.memory.size")

	rep, err := eng.Apply(ctx, r2)
	require.NoError(t, err)
	res := rep.Results[0].Resource
	assert.ElementsMatch(t, []any{"cores", "memory"}, res.Status["pendingRestart"])
	sim := guests(e.srv)["web-01"]
	assert.Equal(t, "2", sim.Config["cores"], "not applied while running")
	assert.Equal(t, "4", sim.Pending["cores"])
	assert.Equal(t, "db;openctl", sim.Config["tags"], "tags apply at once")

	r3 := r2.DeepCopy()
	r3.Spec["restartPolicy"] = "ifRequired"
	plan, err = eng.Plan(ctx, r3)
	require.NoError(t, err)
	assert.Contains(t, joined(plan.Changes[0].Reasons), "restartPolicy ifRequired reboots")
	var steps []string
	rep, err = eng.Apply(withSteps(ctx, &steps), r3)
	require.NoError(t, err)
	sim = guests(e.srv)["web-01"]
	assert.Equal(t, "4", sim.Config["cores"])
	assert.Equal(t, "4096", sim.Config["memory"])
	assert.Empty(t, sim.Pending)
	assert.Nil(t, rep.Results[0].Resource.Status["pendingRestart"])
}

func TestDiskGrowsButNeverShrinks(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	r := vm("db-01", map[string]any{"disks": []any{map[string]any{"name": "scsi0", "size": "30G"}}})
	_, err := e.p.Apply(ctx, r)
	require.NoError(t, err)
	assert.Contains(t, guests(e.srv)["db-01"].Config["scsi0"], "size=30G")

	grow := r.DeepCopy()
	grow.Spec["disks"] = []any{map[string]any{"name": "scsi0", "size": "40G"}, map[string]any{"name": "scsi1", "storage": "local-lvm", "size": "5G"}}
	_, err = e.p.Apply(ctx, grow)
	require.NoError(t, err)
	sim := guests(e.srv)["db-01"]
	assert.Contains(t, sim.Config["scsi0"], "size=40G")
	assert.Contains(t, sim.Config["scsi1"], "size=5G")

	shrink := r.DeepCopy()
	shrink.Spec["disks"] = []any{map[string]any{"name": "scsi0", "size": "20G"}}
	before := writes(e.srv)
	_, err = e.p.Apply(ctx, shrink)
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
	assert.Contains(t, err.Error(), "scsi0")
	assert.Contains(t, err.Error(), "spec.disks[0].size")
	assert.Equal(t, before, writes(e.srv))

	// A new VM whose disk would shrink the template's is refused before
	// anything is cloned.
	_, err = e.p.Apply(ctx, vm("tiny", map[string]any{"disks": []any{map[string]any{"name": "scsi0", "size": "1G"}}}))
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
	_, exists := guests(e.srv)["tiny"]
	assert.False(t, exists)
}

func TestTemplateOrNodeChangeIsReplace(t *testing.T) {
	e := newEnv(t, proxmoxtest.WithNodes(2), proxmoxtest.WithTemplates(
		proxmoxtest.Template{VMID: 9000, Name: "ubuntu-24.04-cloud", Node: "pve1", Agent: true},
		proxmoxtest.Template{VMID: 9001, Name: "debian-12-cloud", Node: "pve1", Agent: true},
	))
	ctx := ctxT(t)
	eng := engine(t, e.p, 2)
	r := vm("web-01", nil)
	_, err := eng.Apply(ctx, r)
	require.NoError(t, err)
	oldMAC := guests(e.srv)["web-01"].Config["net0"]

	r2 := r.DeepCopy()
	r2.Spec["template"] = map[string]any{"name": "debian-12-cloud"}
	plan, err := eng.Plan(ctx, r2)
	require.NoError(t, err)
	assert.Equal(t, openctl.ActionReplace, plan.Changes[0].Action)
	assert.Contains(t, joined(plan.Changes[0].Reasons), "template changed from ubuntu-24.04-cloud to debian-12-cloud")

	before := writes(e.srv)
	_, err = eng.Apply(ctx, r2)
	require.Error(t, err, "replace is refused unless allowed")
	assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
	assert.Contains(t, err.Error(), "replacePolicy: allow")
	assert.Equal(t, before, writes(e.srv))

	r2.Spec["replacePolicy"] = "allow"
	rep, err := eng.Apply(ctx, r2)
	require.NoError(t, err)
	now := guests(e.srv)["web-01"]
	assert.Contains(t, now.Config["description"], "template-name=debian-12-cloud")
	assert.NotEqual(t, oldMAC, now.Config["net0"], "a new VM (new MAC), not the old one edited")
	assert.Equal(t, int64(now.VMID), rep.Results[0].Resource.Status["vmid"])
	assert.Len(t, guests(e.srv), 1, "the old VM is gone")
}

// TestAgentNotConfiguredFailsFast: a template without a guest agent and a
// DHCP address is refused at once, with advice, before anything is made.
func TestAgentNotConfiguredFailsFast(t *testing.T) {
	e := newEnv(t, proxmoxtest.WithTemplates(proxmoxtest.Template{VMID: 9000, Name: "bare", Node: "pve1", Agent: false}))
	ctx := ctxT(t)
	start := time.Now()
	_, err := e.p.Apply(ctx, vm("web-01", map[string]any{"template": map[string]any{"name": "bare"}}))
	require.Error(t, err)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
	assert.Contains(t, err.Error(), "spec.agent.enabled")
	assert.Empty(t, guests(e.srv))

	// agent.enabled: false says "do not wait for an address".
	res, err := e.p.Apply(ctx, vm("web-02", map[string]any{"template": map[string]any{"name": "bare"}, "agent": map[string]any{"enabled": false}}))
	require.NoError(t, err)
	assert.Equal(t, "running", res.Status["state"])
	assert.Nil(t, res.Status["ip"])
}

// TestStaticAddressIsKnownWithoutWaiting: with a static ipConfig the VM's
// address is reported without waiting for the guest agent.
func TestStaticAddressIsKnownWithoutWaiting(t *testing.T) {
	lat := fastLatencies
	lat.AgentUp = time.Hour
	e := newEnv(t, proxmoxtest.WithLatencies(lat))
	ctx := ctxT(t)
	res, err := e.p.Apply(ctx, vm("web-01", map[string]any{"cloudInit": map[string]any{
		"user": "ubuntu",
		"ipConfig": map[string]any{"net0": map[string]any{
			"ip": "192.168.1.50/24", "gateway": "192.168.1.1", "ip6": "2001:db8::50/64", "gateway6": "2001:db8::1",
		}},
	}}))
	require.NoError(t, err)
	assert.Equal(t, "192.168.1.50", res.Status["ip"])
	assert.Equal(t, []any{"192.168.1.50", "2001:db8::50"}, res.Status["ips"])
	assert.Equal(t, "ip=192.168.1.50/24,gw=192.168.1.1,ip6=2001:db8::50/64,gw6=2001:db8::1", guests(e.srv)["web-01"].Config["ipconfig0"])
}

func TestGuestAgentDeadline(t *testing.T) {
	lat := fastLatencies
	lat.AgentUp = time.Hour
	srv := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(lat))
	p := newProvider(t, srv, func(c *proxmox.Config) { c.Timeouts.GuestAgent = 300 * time.Millisecond })
	var steps []string
	_, err := p.Apply(withSteps(ctxT(t), &steps), vm("web-01", nil))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no address after 300ms")
	assert.Contains(t, err.Error(), "qemu-guest-agent")
	assert.Contains(t, steps, "waiting for guest agent")
	assert.Empty(t, guests(srv), "a VM that never became usable is removed")
}

func TestActions(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	_, err := e.p.Apply(ctx, vm("web-01", nil))
	require.NoError(t, err)
	do := func(action string, args map[string]any) *registry.ActionResult {
		t.Helper()
		res, err := e.p.Do(ctx, registry.ActionRequest{Action: action, ID: vmID("web-01"), Args: args, Out: &bytes.Buffer{}})
		require.NoError(t, err, action)
		return res
	}
	assert.Equal(t, "web-01 stopped", do("stop", nil).Message)
	assert.False(t, guests(e.srv)["web-01"].Running)
	assert.Equal(t, "web-01 is already stopped", do("shutdown", nil).Message)
	res := do("start", nil)
	assert.Equal(t, "running", res.Resource.Status["state"])
	assert.Equal(t, "web-01 rebooted", do("reboot", nil).Message)
	assert.Equal(t, "web-01 shut down", do("shutdown", map[string]any{"timeout": "10s"}).Message)
	assert.False(t, guests(e.srv)["web-01"].Running)

	_, err = e.p.Do(ctx, registry.ActionRequest{Action: "explode", ID: vmID("web-01"), Out: &bytes.Buffer{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reboot, shutdown, start, stop")
	_, err = e.p.Do(ctx, registry.ActionRequest{Action: "start", ID: vmID("nope"), Out: &bytes.Buffer{}})
	assert.True(t, errcode.Is(err, errcode.NotFound), "%v", err)
}

func TestStateStoppedAndDeleteOfRunningVM(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	res, err := e.p.Apply(ctx, vm("cold", map[string]any{"state": "stopped"}))
	require.NoError(t, err)
	assert.Equal(t, "stopped", res.Status["state"])
	assert.False(t, guests(e.srv)["cold"].Running)

	_, err = e.p.Apply(ctx, vm("hot", nil))
	require.NoError(t, err)
	var steps []string
	require.NoError(t, e.p.Delete(withSteps(ctx, &steps), vmID("hot")))
	assert.Equal(t, []string{"shutting down", "destroying"}, steps)
	require.NoError(t, e.p.Delete(ctx, vmID("hot")), "deleting a missing VM is fine")
	assert.Len(t, guests(e.srv), 1)
}

func TestReadOnlyKindsAreRefused(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	for _, kind := range []string{"Template", "Node"} {
		r := &manifest.Resource{APIVersion: "proxmox.openctl.io/v1", Kind: kind, Metadata: manifest.Metadata{Name: "x"}}
		_, err := e.p.Apply(ctx, r)
		assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
		assert.True(t, errcode.Is(e.p.Validate(ctx, r), errcode.Invalid))
	}
	nodes, err := e.p.List(ctx, "Node")
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	tmpls, err := e.p.List(ctx, "Template")
	require.NoError(t, err)
	require.Len(t, tmpls, 1)
	assert.Equal(t, "ubuntu-24.04-cloud", tmpls[0].Metadata.Name)
}

func joined(ss []string) string {
	b := bytes.Buffer{}
	for _, s := range ss {
		b.WriteString(s + "\n")
	}
	return b.String()
}

func paths(fs []manifest.FieldChange) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Path)
	}
	slices.Sort(out)
	return out
}

// TestDriftIsPlannedAndCorrected: a VM changed outside openctl (stopped,
// memory edited) shows as an update in Plan and is put back by Apply, even
// though its manifest did not change.
func TestDriftIsPlannedAndCorrected(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	eng := engine(t, e.p, 2)
	r := vm("web-01", map[string]any{"state": "running"})
	_, err := eng.Apply(ctx, r)
	require.NoError(t, err)
	id := guests(e.srv)["web-01"].VMID
	require.NoError(t, e.srv.SetConfig(id, "memory", "8192"))

	plan, err := eng.Plan(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, openctl.ActionUpdate, plan.Changes[0].Action)
	assert.Contains(t, paths(plan.Changes[0].Fields), "spec.memory.size")

	rep, err := eng.Apply(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Count(openctl.OutcomeUpdated))
	sim := guests(e.srv)["web-01"]
	assert.Equal(t, "2048", orPending(sim, "memory"))

	before := writes(e.srv)
	rep, err = eng.Apply(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Count(openctl.OutcomeUnchanged))
	assert.Equal(t, before, writes(e.srv))
}

func orPending(v proxmoxtest.VM, key string) string {
	if p, ok := v.Pending[key]; ok {
		return p
	}
	return v.Config[key]
}

// TestNetworksUpdateInPlace: VLAN, firewall and MAC of an existing network
// change in place (Proxmox's "virtio=<MAC>,bridge=..." form), and the
// result diffs as no-op.
func TestNetworksUpdateInPlace(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	eng := engine(t, e.p, 2)
	r := vm("web-01", map[string]any{"networks": []any{map[string]any{"name": "net0", "bridge": "vmbr0", "vlan": int64(10), "firewall": true}}})
	_, err := eng.Apply(ctx, r)
	require.NoError(t, err)
	net0 := guests(e.srv)["web-01"].Config["net0"]
	assert.Regexp(t, `^virtio=[0-9A-F:]{17},bridge=vmbr0,tag=10,firewall=1$`, net0)

	r2 := r.DeepCopy()
	r2.Spec["networks"] = []any{map[string]any{"name": "net0", "bridge": "vmbr0", "vlan": int64(20), "firewall": false, "macAddress": "BC:24:11:00:00:42"},
		map[string]any{"name": "net1", "bridge": "vmbr0", "model": "e1000"}}
	_, err = eng.Apply(ctx, r2)
	require.NoError(t, err)
	sim := guests(e.srv)["web-01"]
	assert.Equal(t, "virtio=BC:24:11:00:00:42,bridge=vmbr0,tag=20,firewall=0", sim.Config["net0"])
	assert.Regexp(t, `^e1000=[0-9A-F:]{17},bridge=vmbr0$`, sim.Config["net1"])

	plan, err := eng.Plan(ctx, r2)
	require.NoError(t, err)
	assert.Equal(t, openctl.ActionNoOp, plan.Changes[0].Action, "%v %v", plan.Changes[0].Reasons, plan.Changes[0].Fields)
}

// TestNewDiskWithSubGiBSize: a disk the template lacks, sized in
// MiB, is created with that size — not rounded up to whole GiB, which the
// next Apply (and Diff) refused as "cannot shrink".
func TestNewDiskWithSubGiBSize(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	r := vm("data", map[string]any{"disks": []any{map[string]any{"name": "scsi1", "storage": "local-lvm", "size": "1500M"}}})
	_, err := e.p.Apply(ctx, r)
	require.NoError(t, err)
	assert.Contains(t, guests(e.srv)["data"].Config["scsi1"], "size=1500M")
	before := writes(e.srv)
	_, err = e.p.Apply(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, before, writes(e.srv))
}

// TestNoSpuriousDiffs: after Apply, Diff says no-op and a second
// Apply writes nothing, for every spec field in forms users write them.
func TestNoSpuriousDiffs(t *testing.T) {
	srv := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(fastLatencies), proxmoxtest.WithNodes(2))
	e := &env{srv: srv, p: newProvider(t, srv, func(c *proxmox.Config) { c.Limits = proxmox.Limits{PerNode: 32, PerTemplate: 32} })}
	ctx := ctxT(t)
	key1 := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMl4B4B2cKbq+6YJ8z+0KCdZq1z7S4Y7p0hfD0tS8ZkD me@laptop (work key)"
	key2 := "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7+/x== root@host"
	dhcp := map[string]any{"net0": map[string]any{"ip": "dhcp"}}
	cases := map[string]map[string]any{
		"cpu":         {"cpu": map[string]any{"cores": int64(3), "sockets": int64(2), "type": "host"}},
		"cpu-type":    {"cpu": map[string]any{"type": "x86-64-v2-AES"}},
		"dns":         {"cloudInit": map[string]any{"user": "u", "nameservers": []any{"1.1.1.1", "2606:4700:4700::1111"}, "searchDomain": "example.com", "ipConfig": dhcp}},
		"static-ip6":  {"cloudInit": map[string]any{"ipConfig": map[string]any{"net0": map[string]any{"ip": "10.1.2.3/24", "gateway": "10.1.2.1", "ip6": "2001:db8::5/64", "gateway6": "2001:db8::1"}}}},
		"ip6-auto":    {"cloudInit": map[string]any{"ipConfig": map[string]any{"net0": map[string]any{"ip": "dhcp", "ip6": "auto"}}}},
		"sshkeys":     {"cloudInit": map[string]any{"user": "u", "sshKeys": []any{key1, "  " + key2 + "  "}, "ipConfig": dhcp}},
		"password":    {"cloudInit": map[string]any{"user": "u", "password": "hunter2", "ipConfig": dhcp}},
		"onboot-off":  {"onBoot": false},
		"onboot-on":   {"onBoot": true},
		"agent-on":    {"agent": map[string]any{"enabled": true}},
		"agent-off":   {"agent": map[string]any{"enabled": false}},
		"tags":        {"tags": []any{"zeta", "alpha", "openctl", "alpha", "k8s.node"}},
		"net1":        {"networks": []any{map[string]any{"name": "net0"}, map[string]any{"name": "net1", "bridge": "vmbr0", "vlan": int64(30), "firewall": true}}},
		"disk-grow":   {"disks": []any{map[string]any{"name": "scsi0", "size": "10240M"}}},
		"desc":        {"description": "line one\nline two\n"},
		"tmpl-vmid":   {"template": map[string]any{"vmid": int64(9000)}},
		"linked":      {"template": map[string]any{"name": "ubuntu-24.04-cloud", "linked": true}},
		"stopped":     {"state": "stopped"},
		"no-start":    {"startOnCreate": false},
		"nodes":       {"nodes": []any{"pve1"}},
		"memory":      {"memory": map[string]any{"size": int64(1024)}},
		"restart-req": {"restartPolicy": "ifRequired", "state": "running"},
	}
	// Create them all at once (quicker), then check each.
	rs := map[string]*manifest.Resource{}
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, spec := range cases {
		r := vm("d-"+name, spec)
		if _, ok := spec["nodes"]; ok {
			delete(r.Spec, "node")
		}
		rs[name] = r
		wg.Go(func() {
			_, err := e.p.Apply(ctx, r)
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	for name := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := rs[name]
			require.NoError(t, errs[name])
			live, err := e.p.Get(ctx, r.ID())
			require.NoError(t, err)
			d, err := e.p.Diff(ctx, r, live)
			require.NoError(t, err)
			assert.Equal(t, registry.DiffNone, d.Action, "fields %v reasons %v", d.Fields, d.Reasons)
			assert.Empty(t, d.Fields)
			assert.Empty(t, d.Reasons)
			// Subtests run in parallel, so request counts are shared: a
			// second Apply that wrote would show as a changed config.
			before := guests(e.srv)[r.Metadata.Name]
			_, err = e.p.Apply(ctx, r)
			require.NoError(t, err)
			after := guests(e.srv)[r.Metadata.Name]
			assert.Equal(t, before.Config, after.Config, "the second apply wrote")
			assert.Equal(t, before.Running, after.Running)
		})
	}
}

// TestLockedVM: a VM locked by someone else (a backup, a clone of
// it) is read but not written: Apply with no change succeeds without
// writing, a change is TRANSIENT and names the lock, and the engine's
// retries converge once the lock is gone.
func TestLockedVM(t *testing.T) {
	for _, lock := range []string{"backup", "clone"} {
		t.Run(lock, func(t *testing.T) { testLockedVM(t, lock) })
	}
}

func testLockedVM(t *testing.T, lock string) {
	// Once armed with a VMID, the first write refused because of the lock
	// after arming ends it (the backup finishes), so that the engine's
	// retry succeeds. The hook runs after the answer is sent, so the
	// refusals before arming are counted and skipped.
	var srv atomic.Pointer[proxmoxtest.Server]
	var unlock, refusals, armedAt atomic.Int64
	e := newEnv(t, proxmoxtest.WithRequestHook(func(r proxmoxtest.RequestInfo) {
		if r.Status < 500 || !strings.Contains(r.Message, "locked") {
			return
		}
		n := refusals.Add(1)
		if id := unlock.Load(); id != 0 && n > armedAt.Load() && unlock.CompareAndSwap(id, 0) {
			_ = srv.Load().SetLock(int(id), "")
		}
	}))
	srv.Store(e.srv)
	ctx := ctxT(t)
	r := vm("web-01", nil)
	_, err := e.p.Apply(ctx, r)
	require.NoError(t, err)
	id := guests(e.srv)["web-01"].VMID
	require.NoError(t, e.srv.SetLock(id, lock))

	before := writes(e.srv)
	_, err = e.p.Apply(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, before, writes(e.srv))

	r2 := r.DeepCopy()
	r2.Spec["tags"] = []any{"db"}
	_, err = e.p.Apply(ctx, r2)
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Transient), "%v", err)
	assert.Contains(t, err.Error(), "locked ("+lock+")")

	require.Eventually(t, func() bool { return refusals.Load() >= 1 }, 5*time.Second, time.Millisecond, "the refused write was seen")
	armedAt.Store(refusals.Load())
	unlock.Store(int64(id))
	rep, err := engine(t, e.p, 1).Apply(ctx, r2)
	require.NoError(t, err)
	assert.Greater(t, rep.Results[0].Attempts, 1)
	assert.Equal(t, "db;openctl", guests(e.srv)["web-01"].Config["tags"])
}

// TestTagsOnlyOnRunningVM: tags apply at once on a running VM — no
// restart reason in Diff, nothing pending afterwards.
func TestTagsOnlyOnRunningVM(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	r := vm("web-01", map[string]any{"tags": []any{"web"}})
	_, err := e.p.Apply(ctx, r)
	require.NoError(t, err)
	r2 := r.DeepCopy()
	r2.Spec["tags"] = []any{"web", "blue", "canary"}
	live, err := e.p.Get(ctx, r.ID())
	require.NoError(t, err)
	d, err := e.p.Diff(ctx, r2, live)
	require.NoError(t, err)
	assert.Equal(t, registry.DiffUpdate, d.Action)
	assert.Empty(t, d.Reasons, "a tag change needs no reboot")
	require.Len(t, d.Fields, 1)
	assert.Equal(t, "spec.tags", d.Fields[0].Path)

	res, err := e.p.Apply(ctx, r2)
	require.NoError(t, err)
	assert.Nil(t, res.Status["pendingRestart"])
	sim := guests(e.srv)["web-01"]
	assert.Empty(t, sim.Pending)
	assert.Equal(t, "blue;canary;openctl;web", sim.Config["tags"])
	assert.Greater(t, res.Status["uptime"].(int64), int64(-1))
}
