package state_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/seal"
)

const benchRecords = 1000

// benchRecord is a typical record: a small spec and status, a kubeconfig
// and a join token as secrets.
func benchRecord(i int) *state.Record {
	return &state.Record{
		APIVersion: "bench.openctl.io/v1", Kind: "Cluster", Name: fmt.Sprintf("c-%04d", i),
		Labels:   map[string]string{"env": "bench"},
		Spec:     map[string]any{"nodes": int64(3), "version": "v1.31.2", "network": map[string]any{"cidr": "10.42.0.0/16"}},
		SpecHash: fmt.Sprintf("%064x", i),
		Status:   map[string]any{"endpoint": fmt.Sprintf("https://10.0.%d.%d:6443", i/256, i%256), "ready": true},
		Secrets: map[string]secret.Secret{
			"status.kubeconfig": secret.New(fmt.Sprintf("apiVersion: v1\nkind: Config\n# cluster %d\n%0512x\n", i, i)),
			"status.joinToken":  secret.New(fmt.Sprintf("K10%060x::server:%032x", i, i)),
		},
	}
}

// benchStore returns the directory of a file store holding benchRecords
// sealed records, and the (unlocked) store that wrote them.
func benchStore(b *testing.B) (string, *state.FileStore, []*state.Record) {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "state")
	s := openFile(b, dir)
	recs := make([]*state.Record, benchRecords)
	for i := range recs {
		r, err := s.Put(b.Context(), benchRecord(i))
		require.NoError(b, err)
		recs[i] = r
	}
	return dir, s, recs
}

func BenchmarkFileStorePut(b *testing.B) {
	_, s, recs := benchStore(b)
	ctx := b.Context()
	i := 0
	for b.Loop() {
		r, err := s.Put(ctx, recs[i%benchRecords])
		if err != nil {
			b.Fatal(err)
		}
		recs[i%benchRecords] = r
		i++
	}
}

func BenchmarkFileStoreGet(b *testing.B) {
	_, s, recs := benchStore(b)
	ctx := b.Context()
	ids := make([]manifest.ID, len(recs))
	for i, r := range recs {
		ids[i] = r.ID()
	}
	i := 0
	for b.Loop() {
		r, err := s.Get(ctx, ids[i%benchRecords])
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Secrets) != 2 {
			b.Fatal("secrets not opened")
		}
		i++
	}
}

// BenchmarkFileStoreList lists 1,000 sealed records. A fresh store opens
// the key once (derivations/fresh-list, outside the timing); then every
// List costs no derivation (derivations/op).
func BenchmarkFileStoreList(b *testing.B) {
	dir, _, _ := benchStore(b)
	ctx := b.Context()
	s, err := state.OpenFile(dir, state.FileOptions{Passphrase: passphrase})
	require.NoError(b, err)
	before := seal.Derivations()
	recs, err := s.List(ctx, state.Filter{})
	require.NoError(b, err)
	require.Len(b, recs, benchRecords)
	fresh := seal.Derivations() - before

	before = seal.Derivations()
	for b.Loop() {
		recs, err := s.List(ctx, state.Filter{})
		if err != nil {
			b.Fatal(err)
		}
		if len(recs) != benchRecords || len(recs[0].Secrets) != 2 {
			b.Fatal("short list")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchRecords), "ns/record")
	b.ReportMetric(float64(seal.Derivations()-before)/float64(b.N), "derivations/op")
	b.ReportMetric(float64(fresh), "derivations/fresh-list")
}
