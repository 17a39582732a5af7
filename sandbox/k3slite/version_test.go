package k3slite_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/openctl/openctl/sandbox/k3slite"
)

func TestWriteRelease(t *testing.T) {
	dir := t.TempDir()
	bin := k3slite.BinaryReporting("v1.37.4+k3s1", "v1.37.9+k3s1")
	if err := k3slite.WriteRelease(dir, "v1.37.4+k3s1", bin); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "v1.37.4+k3s1", "k3s"))
	if err != nil || string(got) != string(bin) {
		t.Fatalf("k3s: %q %v", got, err)
	}
	sums, err := os.ReadFile(filepath.Join(dir, "v1.37.4+k3s1", "sha256sum-amd64.txt"))
	if want := fmt.Sprintf("%x  k3s\n", sha256.Sum256(bin)); err != nil || string(sums) != want {
		t.Fatalf("sums: %q %v, want %q", sums, err, want)
	}
	if string(bin) == string(k3slite.Binary("v1.37.9+k3s1")) || string(bin) == string(k3slite.Binary("v1.37.4+k3s1")) {
		t.Fatal("a failing release has the bytes of a genuine one")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a bad version did not panic")
		}
	}()
	k3slite.Binary("1.37")
}
