package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

// The start-up benchmarks exec the real openctl binary (built once, without
// the race detector, beside the test binary so that "go test" removes it)
// and report the median wall time of a whole process, start to exit, as
// "ms/op-median":
//
//	go test -run '^$' -bench Startup ./cmd/openctl
//
// When kubectl or terraform are on $PATH, BenchmarkStartupVersion also
// reports the medians of "kubectl version --client" and "terraform
// version", what users compare a CLI's responsiveness against.

var (
	benchOnce sync.Once
	benchBin  string // the openctl binary
	benchHome string // an OPENCTL_HOME whose state holds benchRecords records
	benchErr  error
)

const benchRecords = 1000

// benchSetup builds the binary and the state, once per test binary.
func benchSetup(b *testing.B) (bin, home string) {
	b.Helper()
	benchOnce.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			benchErr = err
			return
		}
		dir := filepath.Join(filepath.Dir(exe), fmt.Sprintf("openctl-bench-%d", os.Getpid()))
		benchBin = filepath.Join(dir, "openctl")
		build := exec.Command("go", "build", "-o", benchBin, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			benchErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		benchHome = filepath.Join(dir, "home")
		benchErr = writeBenchState(b.Context(), filepath.Join(benchHome, "state"))
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchBin, benchHome
}

// benchPassphrase seals the benchmark state's secrets.
func benchPassphrase() (secret.Secret, error) { return secret.New("benchmark passphrase"), nil }

// writeBenchState fills a file store with benchRecords VirtualMachine
// records, each with a sealed secret, as applies would have left them.
func writeBenchState(ctx context.Context, dir string) error {
	st, err := state.OpenFile(dir, state.FileOptions{Passphrase: benchPassphrase})
	if err != nil {
		return err
	}
	nodes := []string{"pve1", "pve2", "pve3"}
	for i := range benchRecords {
		node := nodes[i%len(nodes)]
		spec := map[string]any{
			"node":      node,
			"template":  map[string]any{"name": "ubuntu-24.04-cloud"},
			"cpu":       map[string]any{"cores": int64(2)},
			"memory":    map[string]any{"size": int64(2048)},
			"cloudInit": map[string]any{"user": "ubuntu", "ipConfig": map[string]any{"net0": map[string]any{"ip": "dhcp"}}},
			"tags":      []any{"bench"},
		}
		rec := &state.Record{
			APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: fmt.Sprintf("vm-%04d", i),
			Labels:   map[string]string{"app": "bench"},
			Spec:     spec,
			SpecHash: manifest.Hash(spec),
			Status: map[string]any{
				"node": node, "vmid": int64(100 + i), "state": "running",
				"ip": fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256), "managed": true,
			},
			Secrets: map[string]secret.Secret{"spec.cloudInit.password": secret.New(fmt.Sprintf("pw-%d", i))},
		}
		if _, err := st.Put(ctx, rec); err != nil {
			return err
		}
	}
	return nil
}

// benchExec runs cmd b.N times and reports the median wall time.
func benchExec(b *testing.B, env []string, name string, args ...string) {
	b.Helper()
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		c := exec.Command(name, args...)
		c.Env = env
		start := time.Now()
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(medianMS(times), "ms/op-median")
}

func medianMS(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return float64(m) / float64(time.Millisecond)
}

// BenchmarkStartupVersion: "openctl version", which loads no configuration
// and builds no provider. Target: under 30 ms.
func BenchmarkStartupVersion(b *testing.B) {
	bin, home := benchSetup(b)
	env := append(os.Environ(), "OPENCTL_HOME="+home)
	for _, other := range []struct {
		name, metric string
		args         []string
	}{
		{"kubectl", "kubectl-ms/op-median", []string{"version", "--client"}},
		{"terraform", "terraform-ms/op-median", []string{"version"}},
	} {
		if path, err := exec.LookPath(other.name); err == nil {
			var ts []time.Duration
			for range 15 {
				start := time.Now()
				if err := exec.Command(path, other.args...).Run(); err != nil {
					break
				}
				ts = append(ts, time.Since(start))
			}
			if len(ts) > 0 {
				b.ReportMetric(medianMS(ts), other.metric)
			}
		}
	}
	benchExec(b, env, bin, "version")
}

// BenchmarkStartupGetVMs: "openctl get vms --from-state" on a file state
// of 1,000 VirtualMachine records with sealed secrets. --from-state reads
// the state only (no Proxmox server is involved), and get lists records
// without opening their secrets, so no passphrase key derivation happens.
func BenchmarkStartupGetVMs(b *testing.B) {
	bin, home := benchSetup(b)
	env := append(os.Environ(), "OPENCTL_HOME="+home, "OPENCTL_CONFIG="+filepath.Join(home, "config.yaml"),
		"OPENCTL_STATE_PASSPHRASE=wrong on purpose: listing must not need it")
	benchExec(b, env, bin, "get", "vms", "--from-state")
}

// BenchmarkStartupStateList: "openctl state list" on the same state.
func BenchmarkStartupStateList(b *testing.B) {
	bin, home := benchSetup(b)
	env := append(os.Environ(), "OPENCTL_HOME="+home, "OPENCTL_CONFIG="+filepath.Join(home, "config.yaml"))
	benchExec(b, env, bin, "state", "list")
}
