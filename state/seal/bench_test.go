package seal_test

import (
	"testing"

	"github.com/openctl/openctl/state/seal"
)

// BenchmarkSealOpen measures one Seal plus one Open of a record with three
// secrets (a 3 KB kubeconfig, a join token, a password) and reports the
// passphrase derivations run inside the loop: 0, records never derive.
func BenchmarkSealOpen(b *testing.B) {
	_, k, err := seal.NewKey(pass, 0)
	if err != nil {
		b.Fatal(err)
	}
	secrets := sampleSecrets()
	before := seal.Derivations()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s, err := k.Seal(vmID, secrets)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := k.Open(vmID, s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(seal.Derivations()-before), "derivations")
}

// BenchmarkUnlock measures the one expensive derivation (DefaultIterations).
func BenchmarkUnlock(b *testing.B) {
	kf, _, err := seal.NewKey(pass, 0)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := kf.Unlock(pass); err != nil {
			b.Fatal(err)
		}
	}
}
