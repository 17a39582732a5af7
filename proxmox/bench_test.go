package proxmox_test

import (
	"testing"
	"time"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
)

// BenchmarkApplyVMs applies 50 VMs spread over 3 simulated nodes (nodes:
// [pve1, pve2, pve3], template on shared storage) with engine concurrency
// 16, at the sandbox's default latencies sped up 20 times. It reports
// wall/lower-bound and the requests each VM cost.
//
// The lower bound: a VM needs clone + config + start + agent-up + agent-IP
// in sequence (T), so with 16 workers one of them does at least ⌈50/16⌉
// VMs: ⌈50/16⌉·T; and a node clones at most Limits.PerNode VMs at once, so
// the busiest node's clones take ⌈n/PerNode⌉·clone before its last VM's
// remaining T−clone (likewise ⌈50/PerTemplate⌉·clone for the one
// template). The bound is the largest of the three.
func BenchmarkApplyVMs(b *testing.B) {
	const vms, workers, nodes, speed = 50, 16, 3, 20.0
	lat := proxmoxtest.DefaultLatencies()
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) / speed) }
	perVM := scale(lat.Clone + lat.Config + lat.Start + lat.AgentUp + lat.AgentIP)
	limits := proxmox.Limits{PerNode: 4, PerTemplate: 8}
	perNode := (vms + nodes - 1) / nodes
	clone := scale(lat.Clone)
	byWorkers := time.Duration((vms+workers-1)/workers) * perVM
	byNodes := time.Duration((perNode+limits.PerNode-1)/limits.PerNode)*clone + perVM - clone
	byTemplate := time.Duration((vms+limits.PerTemplate-1)/limits.PerTemplate)*clone + perVM - clone
	bound := max(byWorkers, byNodes, byTemplate)

	var wall time.Duration
	var requests int
	for i := range b.N {
		b.StopTimer()
		srv, err := proxmoxtest.New(proxmoxtest.WithNodes(nodes), proxmoxtest.WithSpeed(speed), proxmoxtest.WithSharedStorage("ceph"),
			proxmoxtest.WithTemplates(proxmoxtest.Template{VMID: 9000, Name: "ubuntu-24.04-cloud", Node: "pve1", Agent: true, Storage: "ceph"}))
		if err != nil {
			b.Fatal(err)
		}
		if err := srv.Start("127.0.0.1:0"); err != nil {
			b.Fatal(err)
		}
		// The provider's default polling (tasks 100ms→2s, agent 500ms→5s)
		// scaled like the latencies, so the ratio measures the design,
		// not a poll interval 20 times too coarse for the sped-up clock.
		id, sec := srv.Token()
		p, err := proxmox.New(proxmox.Config{Limits: limits, Contexts: map[string]proxmox.Context{"sim": {
			Endpoint: srv.URL(), TokenID: id, TokenSecret: secretOf(sec), Fingerprint: srv.Fingerprint(),
		}}}, proxmox.WithPollInterval(scale(100*time.Millisecond), scale(2*time.Second)),
			proxmox.WithAgentPollInterval(scale(500*time.Millisecond), scale(5*time.Second)),
			proxmox.WithRetryBackoff(scale(200*time.Millisecond)))
		if err != nil {
			b.Fatal(err)
		}
		eng := engine(b, p, workers)
		rs := fleet(vms, "pve1", "pve2", "pve3")
		ctx := ctxT(b)
		b.StartTimer()
		start := time.Now()
		rep, err := eng.Apply(ctx, rs...)
		wall += time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if n := rep.Count(openctl.OutcomeCreated); n != vms {
			b.Fatalf("created %d of %d", n, vms)
		}
		requests += total(srv)
		if i == 0 {
			b.Logf("requests by route: %v", srv.RequestCounts())
		}
		srv.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(wall)/float64(b.N)/float64(bound), "wall/lower-bound")
	b.ReportMetric(float64(requests)/float64(b.N*vms), "requests/VM")
	b.ReportMetric(float64(bound)/1e6, "lower-bound-ms")
}
