package refs_test

import (
	"fmt"
	"testing"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
)

// BenchmarkRefsResolve resolves a spec holding 10,000 markers to the
// status.ip of 50 targets.
func BenchmarkRefsResolve(b *testing.B) {
	const nRefs, nTargets = 10000, 50
	var targets []*manifest.Resource
	for i := range nTargets {
		targets = append(targets, &manifest.Resource{
			APIVersion: vmAPI,
			Kind:       "VirtualMachine",
			Metadata:   manifest.Metadata{Name: fmt.Sprintf("vm-%d", i)},
			Spec:       map[string]any{"cores": int64(2), "disks": []any{map[string]any{"size": "20G"}}},
			Status:     map[string]any{"ip": fmt.Sprintf("10.0.%d.%d", i/250, i%250), "phase": "Running"},
		})
	}
	items := make([]any, nRefs)
	for i := range items {
		items[i] = map[string]any{
			"name": fmt.Sprintf("item-%d", i),
			"ip":   refs.Marker(vmID(fmt.Sprintf("vm-%d", i%nTargets)), "status.ip"),
		}
	}
	r := web(map[string]any{"items": items})
	g := newFakeGetter(targets...)

	b.ReportAllocs()
	iters := 0
	for b.Loop() {
		if _, err := refs.Resolve(b.Context(), g, r); err != nil {
			b.Fatal(err)
		}
		iters++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(iters*nRefs), "ns/ref")
}
