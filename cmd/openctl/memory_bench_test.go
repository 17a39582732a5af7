package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
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
		{"tags-2MB", benchTags(999_000)},
		{"resources-5000", benchResources(5000)},
		{"dense-1MB", benchDense(50, 10_000)},
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

// benchTags is one VirtualMachine whose spec.tags is a flow list of n
// one-letter tags.
func benchTags(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata: {name: web-01}\nspec:\n  node: pve1\n  template: {name: ubuntu-24.04-cloud}\n  tags: [")
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('t')
	}
	b.WriteString("]\n")
	return []byte(b.String())
}

// benchResources is a stream of n VirtualMachine documents.
func benchResources(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `---
apiVersion: proxmox.openctl.io/v1
kind: VirtualMachine
metadata:
  name: vm-%05d
  labels: {app: web, tier: frontend}
spec:
  node: pve%d
  template: {name: ubuntu-24.04-cloud}
  cores: 2
  memory: 4096
  cloudInit:
    user: ubuntu
    sshKeys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx bench@example"]
    ipConfig: {net0: {ip: dhcp}}
  tags: [web, bench]
`, i, i%3+1)
	}
	return []byte(b.String())
}

// benchDense is one VirtualMachine just under the 1 MiB document limit and
// within every other limit, as dense as YAML gets: lists lists of n
// one-letter items in flow style. It is the worst case the decoder
// accepts.
func benchDense(lists, n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata: {name: web-01}\nspec:\n")
	for l := range lists {
		fmt.Fprintf(&b, "  l%d: [", l)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('t')
		}
		b.WriteString("]\n")
	}
	return []byte(b.String())
}
