package k3s_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/k3s"
)

// The K3s soak: the example (3 servers, 2 workers, a VIP, on simulated
// Proxmox VMs) applied on the sandbox and interrupted at a random remote
// command of its create — as SIGINT or SIGTERM does, the apply's context
// cancelled — then applied again at once until an apply succeeds (at most
// three times). Then every node must be Ready, each VM exist once,
// running, and plan show nothing to do.
//
//	go test -run TestSoakInterruptedK3sApply ./k3s -v
//	OPENCTL_K3S_SOAK_TRIALS=100 go test -run TestSoakInterruptedK3sApply -timeout 60m ./k3s
//	OPENCTL_K3S_SOAK_SEED=<seed> OPENCTL_K3S_SOAK_TRIALS=1 go test -run TestSoakInterruptedK3sApply -v ./k3s
//
// It interrupts through the context only: a SIGKILL of the process (no
// clean-up at all) is the Proxmox soak's (cmd/openctl), not yet this one's.
const (
	k3sSoakDefaultTrials = 10
	k3sSoakWorkers       = 4 // trials run at once, each with its own sandbox
	k3sSoakMaxApplies    = 3
)

func TestSoakInterruptedK3sApply(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test: skipped with -short")
	}
	t.Parallel()
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
	// How many remote commands a clean create sends: the interruptions
	// fall among them.
	commands := func() int {
		s := newSandboxSide(t)
		var n atomic.Int64
		s.setHook(func(string, string) { n.Add(1) })
		_, err := s.engine.Apply(t.Context(), s.cluster)
		require.NoError(t, err, "a clean create")
		return int(n.Load())
	}()
	t.Logf("k3s soak: %d trials, seeds %d..%d; a clean create sends %d remote commands (OPENCTL_K3S_SOAK_SEED=<seed> OPENCTL_K3S_SOAK_TRIALS=1 reruns one)", trials, base, base+uint64(trials)-1, commands)

	type result struct {
		seed           uint64
		at, interrupt  string
		applies        int
		problems, logs []string
	}
	results := make([]result, trials)
	slots := make(chan struct{}, k3sSoakWorkers)
	var wg sync.WaitGroup
	for i := range trials {
		wg.Add(1)
		t.Run(fmt.Sprintf("trial%03d", i+1), func(t *testing.T) {
			t.Parallel()
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			r := &results[i]
			r.seed = base + uint64(i)
			defer func() { assert.Empty(t, r.problems, "seed %d, %s", r.seed, r.at) }()
			rng := rand.New(rand.NewPCG(r.seed, r.seed))
			k, delay := 1+rng.IntN(commands), time.Duration(rng.IntN(300))*time.Millisecond
			s := newSandboxSide(t)
			ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
			defer cancel()

			actx, interrupt := context.WithCancel(ctx)
			defer interrupt()
			var n atomic.Int64
			s.setHook(func(node, step string) {
				if int(n.Add(1)) == k {
					r.at = fmt.Sprintf("command %d of %d (%s: %s) + %s", k, commands, node, step, delay)
					time.AfterFunc(delay, interrupt)
				}
			})
			_, err := s.engine.Apply(actx, s.cluster)
			s.setHook(nil)
			r.interrupt = "interrupted"
			if err == nil {
				r.interrupt = "finished before the interruption"
			}
			for r.applies < k3sSoakMaxApplies {
				r.applies++
				_, err = s.engine.Apply(ctx, s.cluster)
				if err == nil {
					break
				}
				r.logs = append(r.logs, fmt.Sprintf("re-apply %d: %v", r.applies, err))
			}
			if err != nil {
				r.problems = append(r.problems, fmt.Sprintf("no re-apply of %d succeeded", k3sSoakMaxApplies))
				return
			}
			f, err := s.engine.Get(ctx, s.cluster.ID())
			if err != nil {
				r.problems = append(r.problems, "get: "+err.Error())
			} else if f.Resource.Status["phase"] != k3s.PhaseReady || f.Resource.Status["readyNodes"] != "5/5" {
				r.problems = append(r.problems, fmt.Sprintf("the cluster is %v %v: %v", f.Resource.Status["phase"], f.Resource.Status["readyNodes"], f.Resource.Status["message"]))
			}
			count := map[string]int{}
			for _, vm := range guestVMs(s.srv) {
				count[vm.Name]++
				if !vm.Running {
					r.problems = append(r.problems, vm.Name+" is not running")
				}
			}
			for _, name := range diffNodes {
				if count[name] != 1 {
					r.problems = append(r.problems, fmt.Sprintf("%d VMs named %s", count[name], name))
				}
			}
			if len(count) != len(diffNodes) {
				r.problems = append(r.problems, fmt.Sprintf("VMs: %v", count))
			}
			plan, err := s.engine.Plan(ctx, s.cluster)
			switch {
			case err != nil:
				r.problems = append(r.problems, "plan: "+err.Error())
			case plan.HasChanges():
				var changes []string
				for _, c := range plan.Changes {
					if c.Action != "no-op" {
						changes = append(changes, c.ID.Short()+": "+string(c.Action)+" ("+strings.Join(c.Reasons, "; ")+")")
					}
				}
				r.problems = append(r.problems, "plan after convergence: "+strings.Join(changes, ", "))
			}
		})
	}
	t.Cleanup(func() {
		wg.Wait()
		failed := 0
		var lines []string
		for i, r := range results {
			line := fmt.Sprintf("trial %3d seed %d: %s at %s; %d re-apply(s)", i+1, r.seed, r.interrupt, r.at, r.applies)
			if len(r.logs) > 0 {
				line += "; " + strings.Join(r.logs, "; ")
			}
			if len(r.problems) > 0 {
				failed++
				line += "; FAILED: " + strings.Join(r.problems, "; ")
			} else {
				line += ": converged"
			}
			lines = append(lines, line)
		}
		sort.Strings(lines)
		t.Logf("k3s soak: %d of %d trials converged\n%s", trials-failed, trials, strings.Join(lines, "\n"))
	})
}
