package manifest_test

import (
	"runtime"
	"testing"

	"github.com/openctl/openctl/internal/benchdata"
	"github.com/openctl/openctl/manifest"
)

// BenchmarkDecodeLarge decodes large manifests and reports, besides the
// time and allocations, the bytes allocated per input byte
// ("alloc-B/input-B") and the heap the decoded resources keep alive, per
// input byte ("live-B/input-B"), measured after a garbage collection.
// The peak resident size of a whole "openctl validate" on the same
// inputs is measured by BenchmarkValidateMemory in cmd/openctl.
//
//	go test -run '^$' -bench DecodeLarge -benchmem ./manifest
func BenchmarkDecodeLarge(b *testing.B) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"tags-2MB", benchdata.Tags(999_000)},
		{"resources-5000", benchdata.Resources(5000)},
		{"dense-1MB", benchdata.Dense(50, 10_000)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.data)))
			var before, after runtime.MemStats
			var live uint64
			runtime.GC()
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for range b.N {
				rs, _ := manifest.DecodeBytes(tc.data, "big.yaml")
				if live == 0 {
					b.StopTimer()
					var m runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&m)
					live = m.HeapAlloc - min(m.HeapAlloc, before.HeapAlloc)
					runtime.KeepAlive(rs)
					b.StartTimer()
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			in := float64(len(tc.data))
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/in, "alloc-B/input-B")
			b.ReportMetric(float64(live)/in, "live-B/input-B")
			b.ReportMetric(in/(1<<20), "input-MiB")
		})
	}
}
