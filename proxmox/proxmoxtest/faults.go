package proxmoxtest

import (
	"hash/fnv"
	"slices"
	"sync"
	"time"
)

// Faults injects failures. Every decision is a pure function of the seed,
// the route (or task type) and how many requests that route has seen, so a
// sequence of calls fails the same way on every run with the same seed.
type Faults struct {
	// Routes restricts ErrorRate, Latency and LockTimeoutRate to these routes
	// ("METHOD /path" as in Server.Routes); empty means every route.
	Routes []string
	// ErrorRate is the probability that a request fails with HTTP 500
	// before it is handled.
	ErrorRate float64
	// Latency is added to every request (not scaled by WithSpeed).
	Latency time.Duration
	// LockTimeoutRate is the probability that an operation needing the VM
	// config lock fails with "can't lock file
	// '/var/lock/qemu-server/lock-<vmid>.conf' - got timeout" (synchronously
	// for config, clone, delete and template; inside the task for
	// start/stop/shutdown/reboot/resize).
	LockTimeoutRate float64
	// TaskFailureRate is the probability that a task fails at its end.
	TaskFailureRate float64
	// TaskStatusLostRate is the probability that a finished task's status
	// and log answer 500 "no such task" (as when PVE has rotated its status
	// file away) while the node's task list still has it.
	TaskStatusLostRate float64
}

// faultPlan makes the seeded decisions. It is safe for concurrent use.
type faultPlan struct {
	seed uint64
	f    Faults

	mu sync.Mutex
	n  map[string]uint64 // guarded by mu: decisions drawn per kind+key
}

func newFaultPlan(seed int64, f Faults) *faultPlan {
	return &faultPlan{seed: uint64(seed), f: f, n: map[string]uint64{}}
}

func (p *faultPlan) applies(route string) bool {
	return len(p.f.Routes) == 0 || slices.Contains(p.f.Routes, route)
}

// draw returns the next uniform number in [0,1) for kind+key.
func (p *faultPlan) draw(kind, key string) float64 {
	p.mu.Lock()
	k := p.n[kind+" "+key]
	p.n[kind+" "+key] = k + 1
	p.mu.Unlock()
	h := fnv.New64a()
	_, _ = h.Write([]byte(kind + "\x00" + key))
	x := splitmix64(p.seed ^ h.Sum64() ^ splitmix64(k))
	return float64(x>>11) / (1 << 53)
}

func (p *faultPlan) latency(route string) time.Duration {
	if p.f.Latency <= 0 || !p.applies(route) {
		return 0
	}
	return p.f.Latency
}

func (p *faultPlan) httpError(route string) bool {
	if p.f.ErrorRate <= 0 || !p.applies(route) {
		return false
	}
	return p.draw("error", route) < p.f.ErrorRate
}

func (p *faultPlan) lockTimeout(route string) bool {
	if p.f.LockTimeoutRate <= 0 || !p.applies(route) {
		return false
	}
	return p.draw("lock", route) < p.f.LockTimeoutRate
}

func (p *faultPlan) taskFailure(typ string) bool {
	if p.f.TaskFailureRate <= 0 {
		return false
	}
	return p.draw("task", typ) < p.f.TaskFailureRate
}

func (p *faultPlan) taskStatusLost(typ string) bool {
	if p.f.TaskStatusLostRate <= 0 {
		return false
	}
	return p.draw("lost", typ) < p.f.TaskStatusLostRate
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
