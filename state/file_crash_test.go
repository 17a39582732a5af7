package state_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/state"
)

// helperEnv returns the environment of a helper process: this test binary
// run again with the variable set. The race detector's one-second pause at
// exit is turned off.
func helperEnv(variable, value string) []string {
	return append(os.Environ(), variable+"="+value, "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
}

// Helper processes are this test binary run again with one of these
// variables set.
const (
	envCrashDir    = "OPENCTL_TEST_CRASH_DIR"
	envCrashGens   = "OPENCTL_TEST_CRASH_GENS"
	envLockRaceDir = "OPENCTL_TEST_LOCKRACE_DIR"
)

const crashRecords = 3

func crashID(i int) manifest.ID {
	return manifest.ID{APIVersion: "crash.openctl.io/v1", Kind: "Blob", Name: fmt.Sprint("r", i)}
}

// crashRecord returns version seq of a crash-test record: odd versions are
// large (32 KiB), even ones small, and
// every field repeats seq so that a mix of two versions shows.
func crashRecord(i, seq int) *state.Record {
	size := 16
	if seq%2 == 1 {
		size = 32 << 10
	}
	return &state.Record{
		APIVersion: crashID(i).APIVersion, Kind: crashID(i).Kind, Name: crashID(i).Name,
		Spec:     map[string]any{"seq": int64(seq), "blob": strings.Repeat(string(rune('a'+seq%26)), size)},
		SpecHash: strconv.Itoa(seq),
		Status:   map[string]any{"seq": int64(seq)},
	}
}

// checkCrashRecord verifies that r is one whole version of its record.
func checkCrashRecord(t *testing.T, r *state.Record) {
	t.Helper()
	seq, err := strconv.Atoi(r.SpecHash)
	require.NoError(t, err, "%s: specHash %q", r.Name, r.SpecHash)
	want := crashRecord(0, seq)
	assert.Equal(t, want.Spec, r.Spec, "%s: spec of version %d", r.Name, seq)
	assert.Equal(t, want.Status, r.Status, "%s: status of version %d", r.Name, seq)
	assert.Equal(t, int64(seq), r.Generation, "%s: generation", r.Name)
	assert.NotEmpty(t, r.Lineage)
}

// TestCrashHelper is the child of TestFileStoreCrash: starting from the
// generations the parent passes, it rewrites the records forever,
// alternating large and small versions, until killed.
func TestCrashHelper(t *testing.T) {
	dir := os.Getenv(envCrashDir)
	if dir == "" {
		t.Skip("helper process for TestFileStoreCrash")
	}
	ctx := t.Context()
	s, err := state.OpenFile(dir, state.FileOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	gens := make([]int64, crashRecords)
	for i, g := range strings.Split(os.Getenv(envCrashGens), ",") {
		if gens[i], err = strconv.ParseInt(g, 10, 64); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
	var first int64 // continue the round robin where the last helper stopped
	for _, g := range gens {
		first += g
	}
	for n := 0; ; n++ {
		i := int((first + int64(n)) % crashRecords)
		r := crashRecord(i, int(gens[i])+1)
		r.Generation = gens[i]
		if _, err := s.Put(ctx, r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		gens[i]++
		if n == 0 {
			fmt.Println("ready") // after one write: the kill lands among writes
		}
	}
}

// TestFileStoreCrash kills a writing process with SIGKILL at random
// moments (100 times, in two directories at once) and checks that every
// record file afterwards holds one whole version, old or new.
func TestFileStoreCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 100 processes")
	}
	for w := range 2 {
		t.Run(fmt.Sprint("dir", w), func(t *testing.T) {
			t.Parallel()
			crashTrials(t, 50)
		})
	}
}

func crashTrials(t *testing.T, trials int) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := state.OpenFile(dir, state.FileOptions{})
	require.NoError(t, err)
	ctx := t.Context()
	leftovers := 0
	gens := make([]string, crashRecords)
	for i := range gens {
		gens[i] = "0"
	}
	last := int64(0)
	start := time.Now()
	for trial := range trials {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
		cmd.Env = append(helperEnv(envCrashDir, dir), envCrashGens+"="+strings.Join(gens, ","))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || line != "ready\n" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("trial %d: helper did not start: %q %v: %s", trial, line, err, stderr.String())
		}
		// This sleep is the behaviour under test, not synchronisation:
		// the helper is writing, and the kill lands at a random moment
		// among its writes.
		time.Sleep(time.Duration(1+rand.IntN(30)) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		err = cmd.Wait()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "trial %d: %s", trial, stderr.String())
		ws := ee.Sys().(syscall.WaitStatus)
		require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "trial %d: helper ended by itself (%v): %s", trial, err, stderr.String())

		tmps, _ := filepath.Glob(filepath.Join(dir, "crash", "Blob", ".*.tmp"))
		leftovers += len(tmps)
		all, err := s.List(ctx, state.Filter{})
		require.NoError(t, err, "trial %d", trial)
		require.LessOrEqual(t, len(all), crashRecords, "trial %d: a temporary file listed as a record", trial)
		var total int64
		seen := 0
		for i := range crashRecords {
			if seen < len(all) && all[seen].ID() == crashID(i) {
				r := all[seen]
				checkCrashRecord(t, r)
				total += r.Generation
				gens[i] = strconv.FormatInt(r.Generation, 10)
				seen++
			}
			require.Equal(t, gens[i] != "0", seen > 0 && all[seen-1].ID() == crashID(i), "trial %d: record %d lost", trial, i)
		}
		require.Equal(t, len(all), seen, "trial %d: unexpected records %v", trial, all)
		require.Greater(t, total, last, "trial %d: the helper wrote before it was killed", trial)
		last = total
		if t.Failed() {
			t.FailNow()
		}
	}
	t.Logf("%d trials in %v: a leftover temporary file after %d kills, %d versions written",
		trials, time.Since(start).Round(time.Millisecond), leftovers, last)

	// Leftovers are harmless: the next write of each record reuses them.
	all, err := s.List(ctx, state.Filter{})
	require.NoError(t, err)
	for _, r := range all {
		seq, _ := strconv.Atoi(r.SpecHash)
		next := crashRecord(0, seq+1)
		next.Name, next.Generation = r.Name, r.Generation
		_, err := s.Put(ctx, next)
		require.NoError(t, err)
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, "crash", "Blob", ".*.tmp"))
	assert.Empty(t, tmps)
}
