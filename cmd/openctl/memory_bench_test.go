package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/openctl/openctl/internal/benchdata"
)

// BenchmarkValidateMemory runs "openctl validate -f FILE" as a process on
// two large manifests and reports the peak resident size of that process
// (ru_maxrss of the child) as "peak-RSS-MB", the median of b.N runs:
//
//		go test -run '^$' -bench ValidateMemory -benchtime 5x ./cmd/openctl
//
//	  - tags-2MB: the input of issue 12, one VirtualMachine with a flow list
//	    of 999,000 tags (about 2 MB); rejected (a list is capped).
//	  - resources-5000: 5,000 realistic VirtualMachine documents (about 2.3 MB).
func BenchmarkValidateMemory(b *testing.B) {
	bin, home := benchSetup(b)
	dir := b.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"tags-2MB", benchdata.Tags(999_000)},
		{"resources-5000", benchdata.Resources(5000)},
		{"dense-1MB", benchdata.Dense(50, 10_000)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			file := filepath.Join(dir, tc.name+".yaml")
			if err := os.WriteFile(file, tc.data, 0o600); err != nil {
				b.Fatal(err)
			}
			env := append(os.Environ(), "OPENCTL_HOME="+home, "OPENCTL_CONFIG="+filepath.Join(dir, "none.yaml"))
			var rss []float64
			code := 0
			for range b.N {
				c := exec.Command(bin, "validate", "-q", "-f", file)
				c.Env = env
				out, err := c.CombinedOutput()
				var ee *exec.ExitError
				switch {
				case errors.As(err, &ee):
					code = ee.ExitCode()
				case err != nil:
					b.Fatalf("%v\n%s", err, out)
				}
				if code != 0 && code != 2 {
					b.Fatalf("exit %d\n%s", code, out)
				}
				ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage)
				if !ok {
					b.Skip("no rusage on this system")
				}
				rss = append(rss, float64(ru.Maxrss)/1024) // KiB on Linux
			}
			slices.Sort(rss)
			b.ReportMetric(rss[len(rss)/2], "peak-RSS-MB")
			b.ReportMetric(float64(len(tc.data))/(1<<20), "input-MiB")
			b.ReportMetric(float64(code), "exit-code")
		})
	}
}
