package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/postgres"
	"github.com/openctl/openctl/state/seal"
)

const benchRecords = 1000

// benchRecord is a record of a realistic size with two secrets.
func benchRecord(name string) *state.Record {
	return &state.Record{
		APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: name,
		Labels: map[string]string{"openctl.io/owner": "cluster-a", "tier": "web"},
		Spec: map[string]any{
			"node": "pve-1", "cores": int64(4), "memory": int64(8192),
			"disks":     []any{map[string]any{"size": "32G", "storage": "local-lvm"}},
			"cloudInit": map[string]any{"user": "ubuntu", "sshKeys": []any{"ssh-ed25519 AAAAC3Nza... user@host"}},
		},
		SpecHash: "8f14e45fceea167a5a36dedd4bea2543",
		Status:   map[string]any{"vmid": int64(101), "ip": "10.0.0.21", "state": "running"},
		Secrets: map[string]secret.Secret{
			"status.kubeconfig": secret.New("apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: LS0tLS1CRUdJTi...\n"),
			"status.joinToken":  secret.New("K10a8f5e6c1d2b3a4f5e6d7c8b9a0f1e2d3c4b5a6::server:0123456789abcdef"),
		},
	}
}

// BenchmarkPostgresPut writes 1,000 new records with secrets per
// iteration, one Put each (one INSERT round trip plus a key-row read).
func BenchmarkPostgresPut(b *testing.B) {
	ctx := b.Context()
	s, _ := newStore(b)
	_, err := s.Put(ctx, benchRecord("warm-up")) // creates and unlocks the key
	require.NoError(b, err)
	recs := make([]*state.Record, benchRecords)
	d0 := seal.Derivations()
	iter := 0
	start := time.Now()
	for b.Loop() {
		for i := range recs {
			recs[i] = benchRecord(fmt.Sprintf("vm-%d-%d", iter, i))
		}
		for _, r := range recs {
			if _, err := s.Put(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
		iter++
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(iter*benchRecords), "ns/record")
	b.ReportMetric(float64(seal.Derivations()-d0)/float64(iter), "derivations/op")
}

// BenchmarkPostgresList lists 1,000 sealed records from a newly opened
// Store per iteration: the one passphrase derivation (unlocking the key)
// plus opening 1,000 records.
func BenchmarkPostgresList(b *testing.B) {
	ctx := b.Context()
	s, dsn := newStore(b)
	for i := range benchRecords {
		_, err := s.Put(ctx, benchRecord(fmt.Sprintf("vm-%d", i)))
		require.NoError(b, err)
	}
	d0 := seal.Derivations()
	iter := 0
	start := time.Now()
	for b.Loop() {
		fresh, err := postgres.Open(ctx, dsn, postgres.Options{Passphrase: passphrase})
		if err != nil {
			b.Fatal(err)
		}
		all, err := fresh.List(ctx, state.Filter{})
		if err != nil || len(all) != benchRecords {
			b.Fatal(len(all), err)
		}
		_ = fresh.Close()
		iter++
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(iter*benchRecords), "ns/record")
	b.ReportMetric(float64(seal.Derivations()-d0)/float64(iter), "derivations/op")
}

// BenchmarkPostgresListWarm lists 1,000 sealed records with a Store whose
// key is already unlocked: the per-record cost alone.
func BenchmarkPostgresListWarm(b *testing.B) {
	ctx := b.Context()
	s, _ := newStore(b)
	for i := range benchRecords {
		_, err := s.Put(ctx, benchRecord(fmt.Sprintf("vm-%d", i)))
		require.NoError(b, err)
	}
	iter := 0
	start := time.Now()
	for b.Loop() {
		all, err := s.List(ctx, state.Filter{})
		if err != nil || len(all) != benchRecords {
			b.Fatal(len(all), err)
		}
		iter++
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(iter*benchRecords), "ns/record")
}
