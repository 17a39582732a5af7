package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/k3s"
)

// The K3s soak: the example cluster (3 servers, 2 workers, a VIP, on
// Proxmox VMs) on a sandbox served to other processes, as `openctl
// sandbox` serves it. Each trial creates it, scales its workers to 3 or
// upgrades it, and interrupts one of those applies — SIGKILL, SIGINT or
// SIGTERM, as the Nth line of its progress is printed (a step begun or
// ended, anywhere from the first clone to the last node's upgrade) — then
// applies again until an apply exits 0 (at most three times). Then, from
// the sandbox's own view: every VM once and running, one etcd member per
// server; from openctl: the cluster Ready with every node, plan exit 0.
//
//	go test -run TestSoakInterruptedK3sApply ./cmd/openctl -v
//	OPENCTL_K3S_SOAK_TRIALS=100 go test -run TestSoakInterruptedK3sApply -timeout 90m ./cmd/openctl
//	OPENCTL_K3S_SOAK_SEED=<seed> OPENCTL_K3S_SOAK_TRIALS=1 go test -run TestSoakInterruptedK3sApply -v ./cmd/openctl
const (
	k3sSoakDefaultTrials = 20
	k3sSoakWorkers       = 3 // trials run at once, each with its own sandbox and state
	k3sSoakMaxApplies    = 3
	k3sSoakSpeed         = 8
	k3sSoakTrialTimeout  = 6 * time.Minute
	k3sSoakUpgradeTo     = "v1.37.3+k3s1"
)

// k3sSoakPhase is one apply of a trial: the manifest it applies and what
// the cluster then has.
type k3sSoakPhase struct {
	name             string
	servers, workers int
	edit             func(string) string
}

var k3sSoakPhases = []k3sSoakPhase{
	{name: "create", servers: 3, workers: 2, edit: func(m string) string { return m }},
	{name: "scale", servers: 3, workers: 3, edit: func(m string) string {
		return strings.Replace(m, "count: 2", "count: 3", 1)
	}},
	{name: "upgrade", servers: 3, workers: 2, edit: func(m string) string {
		return strings.Replace(m, "version: v1.37.2+k3s1", "version: "+k3sSoakUpgradeTo, 1)
	}},
}

func TestSoakInterruptedK3sApply(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test: skipped with -short")
	}
	trials := k3sSoakDefaultTrials
	if v := os.Getenv("OPENCTL_K3S_SOAK_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "OPENCTL_K3S_SOAK_TRIALS")
		trials = n
	}
	base := rand.Uint64() >> 12
	if v := os.Getenv("OPENCTL_K3S_SOAK_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "OPENCTL_K3S_SOAK_SEED")
		base = n
	}
	example, err := os.ReadFile("../../examples/k3s-proxmox.yaml")
	require.NoError(t, err)
	for _, ph := range k3sSoakPhases[1:] {
		require.NotEqual(t, string(example), ph.edit(string(example)), "the %s phase changes the example", ph.name)
	}
	ctx, cancel := context.WithTimeout(t.Context(), k3sSoakTrialTimeout*time.Duration(1+trials/k3sSoakWorkers))
	defer cancel()
	bins := k3sSoakBinaries{openctl: soakBinary(ctx, t), sandbox: buildPlain(ctx, t, "./internal/soaksandbox", "soaksandbox")}

	// The control: each phase applied without interruption, one after
	// the other in one sandbox, passes every check; the events each
	// prints are where interruptions fall (the upgrade's also scale the
	// workers back to 2: a few more than a trial's upgrade prints).
	lines := map[string]int{}
	control := &soakTrial{}
	s := newK3sSoakEnv(ctx, t, bins, string(example), control)
	require.Empty(t, control.problems)
	for _, ph := range k3sSoakPhases {
		start := time.Now()
		code, out := s.run(ctx, "apply", "--progress", "plain", "-f", s.write(ph))
		require.Equal(t, 0, code, "a clean %s: %s", ph.name, out)
		lines[ph.name] = len(k3sSoakEventRe.FindAllString(out, -1))
		s.check(ctx, control, ph)
		require.Empty(t, control.problems, "a clean %s fails the checks", ph.name)
		t.Logf("k3s soak: a clean %s takes %v and prints %d events", ph.name, time.Since(start).Round(time.Millisecond), lines[ph.name])
	}
	s.close()
	t.Logf("k3s soak: %d trials, seeds %d..%d (OPENCTL_K3S_SOAK_SEED=<seed> OPENCTL_K3S_SOAK_TRIALS=1 reruns one)", trials, base, base+uint64(trials)-1)

	results := make([]*soakTrial, trials)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(k3sSoakWorkers, trials) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= trials {
					return
				}
				tr := &soakTrial{n: i + 1, seed: base + uint64(i)}
				runK3sSoakTrial(ctx, t, bins, string(example), tr, lines)
				results[i] = tr
			}
		})
	}
	wg.Wait()

	var failed []string
	for _, tr := range results {
		line := fmt.Sprintf("trial %2d seed %d: %s %s → %s; %d re-apply(s)", tr.n, tr.seed, soakSignal(tr.sig), tr.kill, tr.killed, tr.applies)
		if len(tr.notes) > 0 {
			line += "; " + strings.Join(tr.notes, "; ")
		}
		if len(tr.problems) == 0 {
			t.Log(line + ": converged")
			continue
		}
		for _, p := range tr.problems {
			line += "\n\tFAIL " + p.kind + ": " + p.detail
		}
		t.Log(line)
		failed = append(failed, fmt.Sprintf("trial %d (seed %d, %s %s)", tr.n, tr.seed, soakSignal(tr.sig), tr.kill))
	}
	t.Logf("k3s soak: %d of %d trials converged", trials-len(failed), trials)
	sort.Strings(failed)
	for _, f := range failed {
		t.Errorf("%s did not converge — rerun: OPENCTL_K3S_SOAK_SEED=<its seed> OPENCTL_K3S_SOAK_TRIALS=1", f)
	}
}

// runK3sSoakTrial runs one trial: the phases up to a random one clean,
// that one interrupted, then re-applies and the checks.
func runK3sSoakTrial(ctx context.Context, t *testing.T, bins k3sSoakBinaries, example string, tr *soakTrial, lines map[string]int) {
	ctx, cancel := context.WithTimeout(ctx, k3sSoakTrialTimeout)
	defer cancel()
	rng := rand.New(rand.NewPCG(tr.seed, 0x3c5))
	ph := k3sSoakPhases[rng.IntN(len(k3sSoakPhases))]
	tr.sig = []syscall.Signal{syscall.SIGKILL, syscall.SIGINT, syscall.SIGTERM}[rng.IntN(3)]
	k := 1 + rng.IntN(max(lines[ph.name], 1))
	delay := time.Duration(rng.IntN(300)) * time.Millisecond
	tr.kill = fmt.Sprintf("during %s at line %d of %d + %v", ph.name, k, lines[ph.name], delay)

	s := newK3sSoakEnv(ctx, t, bins, example, tr)
	if s == nil {
		return
	}
	defer s.close()
	if ph.name != "create" {
		if code := s.apply(ctx, tr, k3sSoakPhases[0]); code != 0 {
			tr.fail("test setup", "the create before the %s exited %d", ph.name, code)
			return
		}
	}

	cmd := s.command(ctx, "apply", "--progress", "plain", "-f", s.write(ph))
	var signalled atomic.Bool
	var out bytes.Buffer
	started := make(chan struct{})
	send := func() {
		<-started
		if cmd.Process.Signal(tr.sig) == nil {
			signalled.Store(true)
		}
	}
	w := &lineTrigger{w: &out, n: k, fire: func() { time.AfterFunc(delay, send) }}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		close(started)
		tr.fail("test setup", "start openctl: %v", err)
		return
	}
	close(started)
	err := cmd.Wait()
	if !soakEnded(tr, err, signalled.Load()) {
		return
	}
	if events := k3sSoakEventRe.FindAllString(out.String(), -1); len(events) > 0 && signalled.Load() {
		tr.note("last event: %q", events[len(events)-1])
	}
	if strings.Contains(out.String(), string(errcode.Internal)) {
		tr.fail("interruption reported as INTERNAL", "%s", soakErrorLine(out.String()))
	}
	if !soakReapply(ctx, tr, s.soakEnv, k3sSoakMaxApplies) {
		return
	}
	s.check(ctx, tr, ph)
}

// k3sSoakEventRe matches a line of apply's plain progress that reports
// an event ("<time> node/dev-cp-1 step: starting k3s"), as opposed to the
// summary printed at the end.
var k3sSoakEventRe = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\S+ [a-z0-9]+/\S+ .*$`)

// lineTrigger passes writes on to w and calls fire once, when the nth
// event line (k3sSoakEventRe) has been written.
type lineTrigger struct {
	mu    sync.Mutex
	w     *bytes.Buffer
	n     int
	fired bool
	fire  func()
}

func (l *lineTrigger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if !l.fired && len(k3sSoakEventRe.FindAll(l.w.Bytes(), -1)) >= l.n {
		l.fired = true
		l.fire()
	}
	return n, err
}

// k3sSoakEnv is one trial's world: a sandbox served by a soaksandbox
// process (internal/soaksandbox, built without the race detector), and an
// openctl state and configuration pointing at it.
type k3sSoakEnv struct {
	*soakEnv
	server  *exec.Cmd
	stdin   io.Closer
	view    string // the server's view URL
	dir     string
	example string
}

func newK3sSoakEnv(ctx context.Context, t *testing.T, bins k3sSoakBinaries, example string, tr *soakTrial) *k3sSoakEnv {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	server := exec.CommandContext(ctx, bins.sandbox, "-config-out", cfg, "-seed", strconv.FormatUint(tr.seed, 10), "-speed", strconv.Itoa(k3sSoakSpeed))
	server.Stderr = os.Stderr
	server.WaitDelay = 10 * time.Second
	stdin, err := server.StdinPipe()
	var stdout io.ReadCloser
	if err == nil {
		stdout, err = server.StdoutPipe()
	}
	if err == nil {
		err = server.Start()
	}
	if err != nil {
		tr.fail("test setup", "sandbox: %v", err)
		return nil
	}
	var hello struct{ View string }
	if err := json.NewDecoder(stdout).Decode(&hello); err != nil || hello.View == "" {
		_ = stdin.Close()
		_ = server.Wait()
		tr.fail("test setup", "sandbox: no view URL (%v)", err)
		return nil
	}
	s := &k3sSoakEnv{server: server, stdin: stdin, view: hello.View, dir: dir, example: example, soakEnv: &soakEnv{bin: bins.openctl}}
	s.env = append(os.Environ(), "OPENCTL_TEST_MAIN=1", "NO_COLOR=1",
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"),
		"OPENCTL_HOME="+filepath.Join(dir, "home"), "OPENCTL_CONFIG="+cfg,
		"OPENCTL_STATE_PASSPHRASE=soak passphrase")
	return s
}

// k3sSoakBinaries are the programs a trial runs: openctl and the sandbox.
type k3sSoakBinaries struct{ openctl, sandbox string }

// k3sSoakView is what the sandbox says is there (see soaksandbox).
type k3sSoakView struct {
	VMs []struct {
		Name, Node string
		Running    bool
	}
	Etcd map[string][]string
}

func (s *k3sSoakEnv) look(ctx context.Context) (*k3sSoakView, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.view, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var v k3sSoakView
	return &v, json.NewDecoder(resp.Body).Decode(&v)
}

func (s *k3sSoakEnv) close() {
	_ = s.stdin.Close()
	_ = s.server.Wait()
}

// write writes the phase's manifest and makes it the one the checks use.
func (s *k3sSoakEnv) write(ph k3sSoakPhase) string {
	s.manifest = filepath.Join(s.dir, ph.name+".yaml")
	if err := os.WriteFile(s.manifest, []byte(ph.edit(s.example)), 0o600); err != nil {
		panic(err) // the test's own temporary directory
	}
	return s.manifest
}

// apply applies the phase's manifest uninterrupted and returns its exit
// code, recording a failure in tr.
func (s *k3sSoakEnv) apply(ctx context.Context, tr *soakTrial, ph k3sSoakPhase) int {
	code, out := s.run(ctx, "apply", "-f", s.write(ph))
	if code != 0 {
		tr.fail("test setup", "%s: exit %d: %s", ph.name, code, soakErrorLine(out))
	}
	return code
}

// check checks the world once the phase's apply has succeeded.
func (s *k3sSoakEnv) check(ctx context.Context, tr *soakTrial, ph k3sSoakPhase) {
	// Each VM once, running; no other; one etcd member per server, in
	// one cluster: from the sandbox's own view.
	view, err := s.look(ctx)
	if err != nil {
		tr.fail("test setup", "the sandbox's view: %v", err)
		return
	}
	want := map[string]bool{}
	for i := range ph.servers {
		want[fmt.Sprintf("dev-cp-%d", i)] = true
	}
	for i := range ph.workers {
		want[fmt.Sprintf("dev-worker-%d", i)] = true
	}
	count := map[string]int{}
	for _, vm := range view.VMs {
		count[vm.Name]++
		switch {
		case !want[vm.Name]:
			tr.fail("extra VM", "VM %q on %s", vm.Name, vm.Node)
		case !vm.Running:
			tr.fail("VM not running", "%s", vm.Name)
		}
	}
	for name := range want {
		if count[name] != 1 {
			tr.fail("VM count", "%d VMs named %s", count[name], name)
		}
	}
	if len(view.Etcd) != 1 {
		tr.fail("etcd", "%d datastores: %v", len(view.Etcd), view.Etcd)
	}
	for _, m := range view.Etcd {
		slices.Sort(m)
		if want := []string{"dev-cp-0", "dev-cp-1", "dev-cp-2"}; !slices.Equal(m, want) {
			tr.fail("etcd members", "%v, want %v", m, want)
		}
	}
	// The cluster Ready with every node, as openctl reads it.
	code, out := s.run(ctx, "get", "clusters", "dev", "-o", "json")
	var c struct {
		Status map[string]any `json:"status"`
	}
	switch {
	case code != 0:
		tr.fail("get", "exit %d: %s", code, soakErrorLine(out))
	case json.Unmarshal([]byte(out), &c) != nil:
		tr.fail("get", "not JSON: %s", out)
	case c.Status["phase"] != k3s.PhaseReady || c.Status["readyNodes"] != fmt.Sprintf("%d/%d", ph.servers+ph.workers, ph.servers+ph.workers):
		tr.fail("cluster not ready", "%v %v: %v", c.Status["phase"], c.Status["readyNodes"], c.Status["message"])
	}
	s.checkPlan(ctx, tr)
}
