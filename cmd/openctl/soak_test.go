package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
)

// The soak test of issue 12: kill "openctl apply" at random moments
// against a faulty Proxmox VE, re-apply until an apply succeeds, and check
// from the simulator's own view that the world is what the manifest says.
//
//	go test -race -run TestSoakInterruptedApply ./cmd/openctl -v
//	OPENCTL_SOAK_TRIALS=200 go test -run TestSoakInterruptedApply -timeout 30m ./cmd/openctl
//	OPENCTL_SOAK_SEED=<seed> OPENCTL_SOAK_TRIALS=1 go test -run TestSoakInterruptedApply -v ./cmd/openctl
const (
	soakDefaultTrials = 20
	soakWorkers       = 4 // trials run at once; each has its own simulator and state
	soakVMs           = 7
	soakSpeed         = 8 // a clean apply of soakVMs VMs takes about 1.5 s
	soakMaxApplies    = 5 // re-applies after the killed one
	soakCheckTries    = 3 // runs of a check (plan, get) that fails on an injected 5xx
	soakTrialTimeout  = 90 * time.Second
)

// soakFaults are the faults of every trial's simulator, re-applies
// included: a few percent of 5xx on every route, some config lock
// timeouts and some failed tasks.
var soakFaults = proxmoxtest.Faults{ErrorRate: 0.03, LockTimeoutRate: 0.03, TaskFailureRate: 0.03}

// soakEvents are the simulator requests a kill may be tied to: the kill
// is sent from the simulator's request hook, as the Nth such request is
// answered — just after a clone, a configure, a start, a destroy (the
// clean-up after a failed create), an address read, a task poll.
var soakEvents = []string{
	"POST /nodes/{node}/qemu/{vmid}/clone",
	"POST /nodes/{node}/qemu/{vmid}/config",
	"POST /nodes/{node}/qemu/{vmid}/status/start",
	"DELETE /nodes/{node}/qemu/{vmid}",
	"GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces",
	"GET /nodes/{node}/tasks/{upid}/status",
}

// soakTrial is what one trial did and found.
type soakTrial struct {
	n    int
	seed uint64
	sig  syscall.Signal
	// kill is when the signal was sent: "after 0.62s" or "at POST .../config #3".
	kill string
	// killed is how the interrupted apply ended.
	killed string
	// applies is the number of re-applies run (including the successful one).
	applies int
	// plan is the exit code of the last plan --detailed-exitcode.
	plan     int
	problems []soakProblem
	notes    []string
}

// soakProblem is a convergence failure: kind groups them in the summary.
type soakProblem struct{ kind, detail string }

func (tr *soakTrial) fail(kind, format string, args ...any) {
	tr.problems = append(tr.problems, soakProblem{kind, fmt.Sprintf(format, args...)})
}

func (tr *soakTrial) note(format string, args ...any) {
	tr.notes = append(tr.notes, fmt.Sprintf(format, args...))
}

// TestSoakInterruptedApply kills openctl apply (SIGKILL, SIGINT or
// SIGTERM, sometimes SIGTERM then SIGKILL as a CI runner does) at a random
// moment — a random delay within a clean apply's duration, or tied to a
// simulator event — against a simulator with faults on, re-applies (the
// faults still on) until an apply exits 0, and then checks from the
// simulator's own state that every VM of the manifest exists exactly once,
// runs, and has its address from the guest agent, that no other VM exists,
// and that "openctl plan --detailed-exitcode" exits 0 and "openctl get vms
// -o json" shows every address. Every trial has a fresh simulator and a
// fresh state directory, so that one trial's seed reproduces it alone.
func TestSoakInterruptedApply(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test: skipped with -short")
	}
	trials := soakDefaultTrials
	if v := os.Getenv("OPENCTL_SOAK_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "OPENCTL_SOAK_TRIALS")
		trials = n
	}
	base := rand.Uint64() >> 12
	if v := os.Getenv("OPENCTL_SOAK_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "OPENCTL_SOAK_SEED")
		base = n
	}
	t.Logf("soak: %d trials, seeds %d..%d (OPENCTL_SOAK_SEED=<seed> OPENCTL_SOAK_TRIALS=1 reruns one)", trials, base, base+uint64(trials)-1)
	ctx, cancel := context.WithTimeout(t.Context(), soakTrialTimeout+time.Duration(trials)*soakTrialTimeout/soakWorkers)
	defer cancel()

	bin := soakBinary(ctx, t)
	window := soakCalibrate(ctx, t, bin)
	t.Logf("soak: a clean apply of %d VMs takes %v: kills within it", soakVMs, window.Round(time.Millisecond))

	results := make([]*soakTrial, trials)
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range min(soakWorkers, trials) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= trials {
					return
				}
				tr := &soakTrial{n: i + 1, seed: base + uint64(i)}
				runSoakTrial(ctx, t, bin, tr, window)
				results[i] = tr
			}
		})
	}
	wg.Wait()

	kinds := map[string]int{}
	var failed []*soakTrial
	checkRetried := 0
	for _, tr := range results {
		for _, n := range tr.notes {
			if strings.HasPrefix(n, "plan ") || strings.HasPrefix(n, "get ") {
				checkRetried++
				break
			}
		}
		line := fmt.Sprintf("trial %2d seed %d: %s %s → %s; %d re-apply(s); plan exit %d", tr.n, tr.seed, soakSignal(tr.sig), tr.kill, tr.killed, tr.applies, tr.plan)
		if len(tr.notes) > 0 {
			line += "; notes: " + strings.Join(tr.notes, "; ")
		}
		if len(tr.problems) == 0 {
			t.Log(line + ": converged")
			continue
		}
		failed = append(failed, tr)
		seen := map[string]bool{}
		for _, p := range tr.problems {
			line += "\n\tFAIL " + p.kind + ": " + p.detail
			if !seen[p.kind] {
				seen[p.kind] = true
				kinds[p.kind]++
			}
		}
		t.Log(line)
	}
	var summary []string
	for k, n := range kinds {
		summary = append(summary, fmt.Sprintf("%d× %s", n, k))
	}
	sort.Strings(summary)
	t.Logf("soak: %d trials, %d failures (%s); a check (plan, get) failed on an injected 5xx and was run again in %d trials", trials, len(failed), strings.Join(summary, ", "), checkRetried)
	for _, tr := range failed {
		var ks []string
		for _, p := range tr.problems {
			if !slices.Contains(ks, p.kind) {
				ks = append(ks, p.kind)
			}
		}
		t.Errorf("trial %d (seed %d, %s %s) did not converge: %s — rerun: OPENCTL_SOAK_SEED=%d OPENCTL_SOAK_TRIALS=1", tr.n, tr.seed, soakSignal(tr.sig), tr.kill, strings.Join(ks, "; "), tr.seed)
	}
}

// soakBinary is the openctl the trials run: this test binary (which runs
// main with OPENCTL_TEST_MAIN=1), or, when it is built with -race, a plain
// build of this package. Under -race the PBKDF2 derivation that unlocks
// the sealed password in every openctl process takes seconds of CPU, which
// would make 20 trials take minutes; the engine's concurrency is
// race-tested in process by the other tests.
func soakBinary(ctx context.Context, t *testing.T) string {
	if !raceEnabled {
		return os.Args[0]
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Logf("soak: no go command to build a plain openctl (%v): running the race-enabled test binary, slowly", err)
		return os.Args[0]
	}
	return buildPlain(ctx, t, ".", "openctl")
}

// buildPlain builds the main package pkg without the race detector (the
// test's GOFLAGS otherwise) into the test's temporary directory, as name.
func buildPlain(ctx context.Context, t *testing.T, pkg, name string) string {
	gotool, err := exec.LookPath("go")
	require.NoError(t, err, "the go command, to build %s", pkg)
	bin := filepath.Join(t.TempDir(), name)
	build := exec.CommandContext(ctx, gotool, "build", "-o", bin, pkg)
	var flags []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if f != "-race" && f != "-race=true" {
			flags = append(flags, f)
		}
	}
	build.Env = append(os.Environ(), "GOFLAGS="+strings.Join(flags, " "))
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// soakCalibrate applies the manifest once, uninterrupted and without
// faults, and returns how long that took: the window kills fall in. It is
// also the control of the checks: that apply must pass every one of them.
func soakCalibrate(ctx context.Context, t *testing.T, bin string) time.Duration {
	srv, err := proxmoxtest.New(append(proxmoxtest.SandboxLayout(3, proxmoxtest.DefaultSharedStorage), proxmoxtest.WithSpeed(soakSpeed))...)
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0"))
	defer srv.Close()
	s := newSoakEnv(t, bin, srv)
	start := time.Now()
	code, out := s.run(ctx, "apply", "-f", s.manifest)
	took := time.Since(start)
	require.Equal(t, 0, code, "a clean apply: %s", out)
	control := &soakTrial{}
	s.checkSimulator(ctx, control)
	s.checkPlan(ctx, control)
	s.checkGet(ctx, control)
	require.Empty(t, control.problems, "a clean apply without faults fails the checks")
	require.Len(t, s.ip, soakVMs, "addresses")
	return took
}

// soakEnv is one trial's openctl: its simulator, state directory and
// manifest.
type soakEnv struct {
	bin      string // the openctl binary
	srv      *proxmoxtest.Server
	env      []string
	manifest string
	names    []string
	password map[string]bool // VMs with a cloud-init password
	node     map[string]string
	ip       map[string]string // addresses the guest agents report, set by checkSimulator
}

func newSoakEnv(t *testing.T, bin string, srv *proxmoxtest.Server) *soakEnv {
	dir := t.TempDir()
	s := &soakEnv{bin: bin, srv: srv, manifest: filepath.Join(dir, "vms.yaml"), password: map[string]bool{}, node: map[string]string{}, ip: map[string]string{}}
	var b strings.Builder
	for i := range soakVMs {
		name, node := fmt.Sprintf("vm-%02d", i), fmt.Sprintf("pve%d", i%3+1)
		s.names = append(s.names, name)
		s.node[name] = node
		pw := ""
		if i%3 == 0 { // secrets are in play: sealed in the state
			pw = ", password: hunter2"
			s.password[name] = true
		}
		fmt.Fprintf(&b, `---
apiVersion: proxmox.openctl.io/v1
kind: VirtualMachine
metadata: {name: %s, labels: {app: soak}}
spec:
  node: %s
  template: {name: ubuntu-24.04-cloud}
  cpu: {cores: 2}
  memory: {size: 1024}
  cloudInit: {user: ubuntu%s, ipConfig: {net0: {ip: dhcp}}}
  agent: {enabled: true}
  tags: [soak]
`, name, node, pw)
	}
	require.NoError(t, os.WriteFile(s.manifest, []byte(b.String()), 0o600))
	id, secret := srv.Token()
	s.env = append(os.Environ(), "OPENCTL_TEST_MAIN=1", "NO_COLOR=1",
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"),
		"OPENCTL_HOME="+filepath.Join(dir, "home"), "OPENCTL_CONFIG="+filepath.Join(dir, "none.yaml"),
		"OPENCTL_STATE_PASSPHRASE=soak passphrase", "OPENCTL_PROXMOX_URL="+srv.URL(), "OPENCTL_PROXMOX_TOKEN_ID="+id,
		"OPENCTL_PROXMOX_TOKEN_SECRET="+secret, "OPENCTL_PROXMOX_FINGERPRINT="+srv.Fingerprint())
	return s
}

func (s *soakEnv) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Env = s.env
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// run runs openctl to its end and returns its exit code (-1 if it could
// not run or died of a signal) and its combined output.
func (s *soakEnv) run(ctx context.Context, args ...string) (int, string) {
	out, err := s.command(ctx, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	default:
		return -1, string(out) + "\n" + err.Error()
	}
}

// soakHook is the request hook of a trial's simulator: while armed, it
// calls fire once when route has been answered n times.
type soakHook struct {
	mu    sync.Mutex
	route string // guarded by mu; "" when disarmed
	n     int    // guarded by mu: answers still to see before firing
	fire  func() // guarded by mu
}

func (h *soakHook) observe(info proxmoxtest.RequestInfo) {
	h.mu.Lock()
	var fire func()
	if h.route != "" && info.Route == h.route {
		if h.n--; h.n == 0 {
			fire, h.route = h.fire, ""
		}
	}
	h.mu.Unlock()
	if fire != nil {
		fire()
	}
}

func (h *soakHook) arm(route string, n int, fire func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.route, h.n, h.fire = route, n, fire
}

func (h *soakHook) disarm() { h.arm("", 0, nil) }

// runSoakTrial runs trial tr: one killed apply, re-applies, and the checks.
// It records what it finds in tr and never fails the test itself.
func runSoakTrial(ctx context.Context, t *testing.T, bin string, tr *soakTrial, window time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, soakTrialTimeout)
	defer cancel()
	rng := rand.New(rand.NewPCG(tr.seed, 0x50a1c))
	hook := &soakHook{}
	srv, err := proxmoxtest.New(append(proxmoxtest.SandboxLayout(3, proxmoxtest.DefaultSharedStorage),
		proxmoxtest.WithSpeed(soakSpeed), proxmoxtest.WithSeed(int64(tr.seed)),
		proxmoxtest.WithFaults(soakFaults), proxmoxtest.WithRequestHook(hook.observe))...)
	if err == nil {
		err = srv.Start("127.0.0.1:0")
	}
	if err != nil {
		tr.fail("test setup", "simulator: %v", err)
		return
	}
	defer srv.Close()
	s := newSoakEnv(t, bin, srv)

	tr.sig = []syscall.Signal{syscall.SIGKILL, syscall.SIGINT, syscall.SIGTERM}[rng.IntN(3)]
	// A CI runner that times a job out sends SIGTERM, then SIGKILL after a
	// grace period: sometimes the SIGKILL comes while openctl is cleaning up.
	thenKill := tr.sig != syscall.SIGKILL && rng.IntN(4) == 0
	graceKill := time.Duration(rng.Int64N(int64(window/2) + 1))

	cmd := s.command(ctx, "apply", "-f", s.manifest)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	var signalled atomic.Bool
	started := make(chan struct{}) // closed once cmd.Process is set
	send := func() {
		<-started
		if cmd.Process.Signal(tr.sig) == nil {
			signalled.Store(true)
		}
		if thenKill {
			// The random grace period is the behaviour under test.
			time.AfterFunc(graceKill, func() { _ = cmd.Process.Kill() })
		}
	}
	var timer *time.Timer
	if rng.IntN(2) == 0 {
		delay := time.Duration(rng.Int64N(int64(window) + 1))
		tr.kill = "after " + delay.Round(time.Millisecond).String()
		defer func() {
			if timer != nil {
				timer.Stop()
			}
		}()
		if err := cmd.Start(); err != nil {
			tr.fail("test setup", "start openctl: %v", err)
			return
		}
		close(started)
		// The random delay is the behaviour under test: a kill at any moment.
		timer = time.AfterFunc(delay, send)
	} else {
		route := soakEvents[rng.IntN(len(soakEvents))]
		n := 1 + rng.IntN(soakVMs)
		tr.kill = fmt.Sprintf("at %s #%d", route, n)
		hook.arm(route, n, send)
		if err := cmd.Start(); err != nil {
			hook.disarm()
			close(started)
			tr.fail("test setup", "start openctl: %v", err)
			return
		}
		close(started)
	}
	if thenKill {
		tr.kill += fmt.Sprintf(" (SIGKILL %v later)", graceKill.Round(time.Millisecond))
	}
	err = cmd.Wait()
	hook.disarm()
	if !soakEnded(tr, err, signalled.Load()) || !soakReapply(ctx, tr, s, soakMaxApplies) {
		return
	}

	// Tasks from the killed apply (a clone, a destroy) may still run in
	// Proxmox: wait for them to end before judging, as they would change
	// what is there.
	if err := soakSettle(ctx, srv); err != nil {
		tr.fail("test setup", "%v", err)
		return
	}
	s.checkSimulator(ctx, tr)
	s.checkPlan(ctx, tr)
	s.checkGet(ctx, tr)
}

// soakEnded records in tr how the interrupted apply ended, from its
// Wait's err and whether the signal was sent. It reports false when the
// apply could not be run at all.
func soakEnded(tr *soakTrial, err error, signalled bool) bool {
	var ee *exec.ExitError
	switch {
	case err == nil:
		tr.killed = "exit 0"
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			tr.killed = "died of " + soakSignal(ws.Signal())
		} else {
			tr.killed = fmt.Sprintf("exit %d", ee.ExitCode())
		}
	default:
		tr.fail("test setup", "openctl apply: %v", err)
		return false
	}
	if !signalled {
		tr.killed += " before the signal"
	}
	if err == nil && signalled && tr.sig != syscall.SIGKILL {
		tr.note("the interrupted apply exited 0")
	}
	return true
}

// soakReapply re-applies s.manifest until an apply exits 0, at most
// max times, recording what went wrong in tr. A stale lock
// (which a re-run must take over by itself) is a failure; the test then
// force-unlocks to see the rest. It reports false when the test could
// not go on.
func soakReapply(ctx context.Context, tr *soakTrial, s *soakEnv, max int) bool {
	unlocked := false
	converged := false
	for tr.applies < max && !converged {
		tr.applies++
		code, out := s.run(ctx, "apply", "-f", s.manifest)
		switch {
		case code == 0:
			converged = true
		case code == 1 && strings.Contains(out, "the lock is stale") && !unlocked:
			tr.fail("stale lock needed state force-unlock", "re-apply %d: %s", tr.applies, soakErrorLine(out))
			unlocked = true
			if code, out := s.run(ctx, "state", "force-unlock"); code != 0 {
				tr.fail("test setup", "state force-unlock: exit %d: %s", code, out)
				return false
			}
		case code == 1 && soakOnlyFaults(out):
			tr.note("re-apply %d failed on injected faults", tr.applies)
		default:
			tr.fail("re-apply failed", "re-apply %d: exit %d: %s", tr.applies, code, soakErrorLine(out))
		}
	}
	if !converged {
		tr.fail("no successful apply", "%d re-applies, none exited 0", tr.applies)
	}
	return true
}

// soakSignal names sig as kill(1) does.
func soakSignal(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// soakFailedRe matches the line apply prints when a resource fails:
// "<time> vm/<name> failed: <error>".
var soakFailedRe = regexp.MustCompile(`^\S+ vm/\S+ failed: `)

// soakErrorLine is the first line of out that reports a failed resource
// that soakFault does not excuse, or else the first "openctl: " line.
func soakErrorLine(out string) string {
	lines := strings.Split(out, "\n")
	for _, l := range lines {
		if soakFailedRe.MatchString(l) && !soakFault(l) {
			return l
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "openctl: ") {
			return l
		}
	}
	return strings.TrimSpace(out)
}

// soakOnlyFaults reports whether apply failed resources and every failure
// comes from the injected faults.
func soakOnlyFaults(out string) bool {
	found := false
	for _, l := range strings.Split(out, "\n") {
		if soakFailedRe.MatchString(l) {
			found = true
			if !soakFault(l) {
				return false
			}
		}
	}
	return found
}

// soakFault reports whether a resource failure comes from the injected
// faults: a 5xx or a failed task "(fault injection)", a config lock
// timeout, or an error openctl marks transient. Failing a resource on
// those is right; any other failure is a finding.
func soakFault(line string) bool {
	return strings.Contains(line, "fault injection") || strings.Contains(line, "got timeout") || strings.Contains(line, "(TRANSIENT)")
}

// soakSettle waits until no task runs on any node of srv, for at most 30 s.
func soakSettle(ctx context.Context, srv *proxmoxtest.Server) error {
	ok := poll(func() bool {
		for _, node := range []string{"pve1", "pve2", "pve3"} {
			var tasks []map[string]any
			if err := soakGet(ctx, srv, "/nodes/"+node+"/tasks?source=active", &tasks); err != nil || len(tasks) > 0 {
				return false
			}
		}
		return true
	})
	if !ok {
		return errors.New("tasks still running in the simulator after 30s")
	}
	return nil
}

// soakGet reads path from the simulator's API into out, again after an
// injected 5xx (the checks must not be fooled by the faults).
func soakGet(ctx context.Context, srv *proxmoxtest.Server, path string, out any) error {
	id, secret := srv.Token()
	b := backoff.Policy{Initial: 5 * time.Millisecond, Max: 100 * time.Millisecond}.Start()
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+path, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "PVEAPIToken="+id+"="+secret)
		resp, err := srv.Client().Do(req)
		if err != nil {
			return err
		}
		var body struct {
			Data    json.RawMessage `json:"data"`
			Message string          `json:"message"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		switch {
		case err != nil:
			return fmt.Errorf("GET %s: %w", path, err)
		case resp.StatusCode == http.StatusOK:
			return json.Unmarshal(body.Data, out)
		case strings.Contains(body.Message, "fault injection") && attempt < 20:
			if err := b.Wait(ctx); err != nil {
				return err
			}
		default:
			return fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(body.Message))
		}
	}
}

// checkSimulator checks the simulator's own state: each manifest VM exists
// exactly once, on its node, running, configured as the manifest says,
// with an IPv4 address from its guest agent; there is no other VM.
func (s *soakEnv) checkSimulator(ctx context.Context, tr *soakTrial) {
	byName := map[string][]proxmoxtest.VM{}
	for _, vm := range s.srv.VMs() {
		if vm.Template {
			continue
		}
		if !slices.Contains(s.names, vm.Name) {
			tr.fail("extra VM", "VM %d %q on %s (lock %q, running %v) is not in the manifest", vm.VMID, vm.Name, vm.Node, vm.Lock, vm.Running)
			continue
		}
		byName[vm.Name] = append(byName[vm.Name], vm)
	}
	for _, name := range s.names {
		vms := byName[name]
		switch len(vms) {
		case 0:
			tr.fail("VM missing", "%s does not exist", name)
			continue
		case 1:
		default:
			var ids []string
			for _, vm := range vms {
				ids = append(ids, strconv.Itoa(vm.VMID))
			}
			tr.fail("duplicate VM", "%s exists %d times: VMIDs %s", name, len(vms), strings.Join(ids, ", "))
			continue
		}
		vm := vms[0]
		what := fmt.Sprintf("%s (VMID %d)", name, vm.VMID)
		if vm.Node != s.node[name] {
			tr.fail("VM on the wrong node", "%s is on %s, the manifest says %s", what, vm.Node, s.node[name])
		}
		if vm.Lock != "" {
			tr.fail("VM locked", "%s is locked %q", what, vm.Lock)
		}
		if vm.Config["cores"] != "2" || vm.Config["memory"] != "1024" || vm.Config["ciuser"] != "ubuntu" {
			tr.fail("VM not configured", "%s has cores=%q memory=%q ciuser=%q", what, vm.Config["cores"], vm.Config["memory"], vm.Config["ciuser"])
		}
		if s.password[name] && vm.Config["cipassword"] == "" {
			tr.fail("VM not configured", "%s has no cloud-init password", what)
		}
		if !vm.Running {
			tr.fail("VM not running", "%s is stopped", what)
			continue
		}
		if ip, err := s.agentIP(ctx, vm); err != nil {
			tr.fail("VM running without an address", "%s: %v", what, err)
		} else if ip == "" {
			tr.fail("VM running without an address", "%s: the guest agent lists no IPv4 address", what)
		} else {
			s.ip[name] = ip
		}
	}
}

// agentIP is vm's first non-loopback IPv4 address, read from its guest
// agent through the simulator's API.
func (s *soakEnv) agentIP(ctx context.Context, vm proxmoxtest.VM) (string, error) {
	var res struct {
		Result []struct {
			Name string `json:"name"`
			IPs  []struct {
				Type string `json:"ip-address-type"`
				IP   string `json:"ip-address"`
			} `json:"ip-addresses"`
		} `json:"result"`
	}
	if err := soakGet(ctx, s.srv, fmt.Sprintf("/nodes/%s/qemu/%d/agent/network-get-interfaces", vm.Node, vm.VMID), &res); err != nil {
		return "", err
	}
	for _, iface := range res.Result {
		for _, a := range iface.IPs {
			if iface.Name != "lo" && a.Type == "ipv4" {
				return a.IP, nil
			}
		}
	}
	return "", nil
}

// checkPlan runs plan --detailed-exitcode: it must exit 0.
func (s *soakEnv) checkPlan(ctx context.Context, tr *soakTrial) {
	code, out := s.runCheck(ctx, tr, s.run, "plan", "--detailed-exitcode", "-f", s.manifest)
	tr.plan = code
	switch code {
	case 0:
	case 2:
		tr.fail("plan shows changes after a successful apply", "%s", soakPlanChanges(out))
	default:
		tr.fail("plan failed", "exit %d: %s", code, soakErrorLine(out))
	}
}

// runCheck runs a check's openctl command with run, again (up to
// soakCheckTries runs, each noted) when it exits 1 on an injected 5xx.
// The engine retries such an error (DefaultRetryPolicy), but a read of
// the whole fleet makes a request per VM, and each attempt is the whole
// read: at soakFaults' 3% per request, about one read in a thousand
// fails all its attempts and says so (TRANSIENT). The soak is about
// convergence, which a later read shows.
func (s *soakEnv) runCheck(ctx context.Context, tr *soakTrial, run func(context.Context, ...string) (int, string), args ...string) (int, string) {
	for i := 1; ; i++ {
		code, out := run(ctx, args...)
		if code != 1 || !strings.Contains(out, "fault injection") || i == soakCheckTries {
			return code, out
		}
		tr.note("%s %d failed on an injected 5xx: %s", args[0], i, soakErrorLine(out))
	}
}

// soakPlanChanges keeps the lines of plan's output that name a change.
func soakPlanChanges(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "time=") {
			keep = append(keep, l)
		}
	}
	if len(keep) > 6 {
		keep = append(keep[:6], "…")
	}
	return strings.Join(keep, " | ")
}

// checkGet runs get vms -o json: each manifest VM is listed once,
// and each one the simulator runs with an address shows that address. A
// VM the simulator has stopped is already a failure of checkSimulator.
func (s *soakEnv) checkGet(ctx context.Context, tr *soakTrial) {
	code, out := s.runCheck(ctx, tr, s.runStdout, "get", "vms", "-o", "json")
	if code != 0 {
		tr.fail("get vms failed", "exit %d: %s", code, soakErrorLine(out))
		return
	}
	var got struct {
		Kind  string `json:"kind"`
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
			Status   struct {
				State string `json:"state"`
				IP    string `json:"ip"`
				VMID  int    `json:"vmid"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Kind != "List" {
		tr.fail("get vms failed", "not a JSON List: %v: %s", err, out)
		return
	}
	list := got.Items
	for _, name := range s.names {
		n := 0
		for _, r := range list {
			if r.Metadata.Name != name {
				continue
			}
			n++
			if want := s.ip[name]; want != "" && (r.Status.State != "running" || r.Status.IP != want) {
				tr.fail("get vms shows a running VM without its address", "%s (VMID %d): state %q, address %q; the guest agent reports %s", name, r.Status.VMID, r.Status.State, r.Status.IP, want)
			}
		}
		if n != 1 {
			tr.fail("get vms lists a VM not once", "%s listed %d times", name, n)
		}
	}
}

// runStdout is run with standard output alone.
func (s *soakEnv) runStdout(ctx context.Context, args ...string) (int, string) {
	cmd := s.command(ctx, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), stderr.String()
	default:
		return -1, err.Error()
	}
}
