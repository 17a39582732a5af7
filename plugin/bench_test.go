package plugin_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/plugin"
	"github.com/openctl/openctl/registry/providertest"
)

// BenchmarkGet compares one Get through the Go example plugin (a process
// start and a JSON round trip) with one Get of a compiled-in provider
// (providertest.Fake); it reports the plugin's time per call and the
// ratio.
func BenchmarkGet(b *testing.B) {
	id := manifest.ID{APIVersion: "notes.openctl.io/v1", Kind: "Note", Name: "bench"}
	r := &manifest.Resource{APIVersion: id.APIVersion, Kind: id.Kind, Metadata: manifest.Metadata{Name: id.Name}, Spec: map[string]any{"text": "hello"}}

	p, err := plugin.Load(b.Context(), notesPlugin(b), plugin.Options{})
	require.NoError(b, err)
	prov := plugin.New(p, plugin.NewConfig(map[string]any{"dir": b.TempDir()}), plugin.Options{})
	_, err = prov.Apply(b.Context(), r)
	require.NoError(b, err)

	fake := providertest.NewFake("notes", "Note")
	_, err = fake.Apply(b.Context(), r)
	require.NoError(b, err)

	const inProcessCalls = 10000
	start := time.Now()
	for range inProcessCalls {
		if _, err := fake.Get(b.Context(), id); err != nil {
			b.Fatal(err)
		}
	}
	inProcess := time.Since(start) / inProcessCalls

	b.ResetTimer()
	for b.Loop() {
		if _, err := prov.Get(b.Context(), id); err != nil {
			b.Fatal(err)
		}
	}
	perCall := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(inProcess.Nanoseconds()), "compiled-in-ns/op")
	b.ReportMetric(float64(perCall)/float64(max(inProcess, 1)), "x-compiled-in")
}
