package graph_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/graph"
	"github.com/openctl/openctl/graph/graphtest"
)

func noop(context.Context, string) error { return nil }

func TestRunRespectsDependencies(t *testing.T) {
	for _, limit := range []int{0, 1, 2, 4, 16} {
		t.Run(fmt.Sprint("concurrency ", limit), func(t *testing.T) {
			g := graphtest.Random(300, 900, 3)
			var events []graph.Event[int] // OnEvent is serialised: no lock needed
			results, err := g.Run(context.Background(), graph.RunOptions[int]{
				Concurrency: limit,
				OnEvent:     func(e graph.Event[int]) { events = append(events, e) },
			}, func(context.Context, int) error { return nil })
			require.NoError(t, err)
			require.Len(t, results, 300)
			for k, r := range results {
				assert.Equal(t, k, r.Node)
				assert.Equal(t, graph.Succeeded, r.Status)
				assert.NoError(t, r.Err)
			}
			started, finished := map[int]int{}, map[int]int{}
			for i, e := range events {
				switch e.Type {
				case graph.EventStarted:
					started[e.Node] = i
				case graph.EventSucceeded:
					finished[e.Node] = i
				default:
					t.Fatalf("unexpected event %v", e)
				}
			}
			for _, to := range g.Nodes() {
				for _, from := range g.Deps(to) {
					assert.Less(t, finished[from], started[to], "%d must finish before %d starts", from, to)
				}
			}
		})
	}
}

func TestRunHeightFirst(t *testing.T) {
	// "a" sorts first, but the chain z1 -> z2 -> z3 is the critical path.
	g := build([]string{"a"}, [2]string{"z1", "z2"}, [2]string{"z2", "z3"})
	var order []string
	_, err := g.Run(context.Background(), graph.RunOptions[string]{Concurrency: 1},
		func(_ context.Context, node string) error {
			order = append(order, node)
			return nil
		})
	require.NoError(t, err)
	assert.Equal(t, []string{"z1", "z2", "a", "z3"}, order)
}

func TestRunConcurrencyBound(t *testing.T) {
	tests := []struct {
		name  string
		limit int
		want  int // the most calls in flight at once
	}{
		{"zero means one", 0, 1},
		{"one", 1, 1},
		{"three", 3, 3},
		{"eight", 8, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := graphtest.Random(120, 200, 5) // plenty of independent nodes
			var inflight, most atomic.Int64
			// The first calls hold until tt.want of them are in flight
			// (the graph has 37 roots, so that many can start at once),
			// then every call returns at once: the peak is reached by
			// design, not by timing, and a Run above its bound would go
			// past it.
			full := make(chan struct{})
			var fill sync.Once
			_, err := g.Run(context.Background(), graph.RunOptions[int]{Concurrency: tt.limit},
				func(ctx context.Context, _ int) error {
					n := inflight.Add(1)
					defer inflight.Add(-1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					if n >= int64(tt.want) {
						fill.Do(func() { close(full) })
					}
					select {
					case <-full:
					case <-ctx.Done():
					}
					return nil
				})
			require.NoError(t, err)
			assert.Equal(t, int64(tt.want), most.Load())
		})
	}
}

func TestRunFailure(t *testing.T) {
	errBoom := errors.New("boom")
	errBang := errors.New("bang")
	tests := []struct {
		name    string
		fail    map[string]error
		status  map[string]graph.Status
		causes  map[string]string // skipped node -> failed dependency
		errs    []error           // the failed nodes' errors, in node order
		message string
	}{
		{
			name:   "failure skips only dependents",
			fail:   map[string]error{"b": errBoom},
			status: map[string]graph.Status{"a": graph.Succeeded, "b": graph.Failed, "c": graph.Skipped, "e": graph.Skipped, "d": graph.Succeeded, "x": graph.Succeeded, "y": graph.Succeeded},
			causes: map[string]string{"c": "b", "e": "b"},
			errs:   []error{errBoom},
		},
		{
			name:   "every failure reported in node order",
			fail:   map[string]error{"y": errBang, "d": errBoom},
			status: map[string]graph.Status{"a": graph.Succeeded, "b": graph.Succeeded, "c": graph.Succeeded, "d": graph.Failed, "e": graph.Skipped, "x": graph.Succeeded, "y": graph.Failed},
			causes: map[string]string{"e": "d"},
			errs:   []error{errBoom, errBang},
		},
		{
			name:   "root failure skips the whole branch",
			fail:   map[string]error{"a": errBoom},
			status: map[string]graph.Status{"a": graph.Failed, "b": graph.Skipped, "c": graph.Skipped, "d": graph.Skipped, "e": graph.Skipped, "x": graph.Succeeded, "y": graph.Succeeded},
			causes: map[string]string{"b": "a", "c": "a", "d": "a", "e": "a"},
			errs:   []error{errBoom},
		},
	}
	// a -> b -> c -> e, a -> d -> e, and independently x -> y.
	g := build(nil, [2]string{"a", "b"}, [2]string{"b", "c"}, [2]string{"c", "e"}, [2]string{"a", "d"}, [2]string{"d", "e"}, [2]string{"x", "y"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			ran := map[string]bool{}
			skipEvents := map[string]graph.Event[string]{}
			results, err := g.Run(context.Background(), graph.RunOptions[string]{
				Concurrency: 3,
				OnEvent: func(e graph.Event[string]) {
					if e.Type == graph.EventSkipped {
						skipEvents[e.Node] = e
					}
				},
			}, func(_ context.Context, node string) error {
				mu.Lock()
				ran[node] = true
				mu.Unlock()
				return tt.fail[node]
			})
			require.Error(t, err)
			assert.Equal(t, errors.Join(tt.errs...).Error(), err.Error())
			for _, e := range tt.errs {
				assert.ErrorIs(t, err, e)
			}
			require.Len(t, results, len(tt.status))
			for node, want := range tt.status {
				r := results[node]
				assert.Equal(t, want, r.Status, node)
				assert.Equal(t, want != graph.Skipped, ran[node], "%s ran", node)
				cause, skipped := tt.causes[node]
				if !skipped {
					continue
				}
				var se *graph.SkipError[string]
				require.ErrorAs(t, r.Err, &se, node)
				assert.Equal(t, graph.SkipError[string]{Node: node, Cause: cause, Err: tt.fail[cause]}, *se)
				assert.EqualError(t, se, fmt.Sprintf("graph: skipped %s: dependency %s failed: %v", node, cause, tt.fail[cause]))
				assert.ErrorIs(t, r.Err, tt.fail[cause])
				assert.True(t, r.Start.IsZero())
				assert.Equal(t, cause, skipEvents[node].Cause)
				assert.Equal(t, r.Err, skipEvents[node].Err)
			}
		})
	}
}

func TestRunPanic(t *testing.T) {
	errInner := errors.New("inner")
	tests := []struct {
		name  string
		value any
		is    error // also matched by the result's error
	}{
		{"string", "kaboom", errcode.Internal},
		{"error value", errInner, errInner},
		{"nil", nil, errcode.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := build([]string{"other"}, [2]string{"bad", "after"})
			results, err := g.Run(context.Background(), graph.RunOptions[string]{Concurrency: 2},
				func(_ context.Context, node string) error {
					if node == "bad" {
						panic(tt.value)
					}
					return nil
				})
			require.Error(t, err)
			assert.ErrorIs(t, err, errcode.Internal)
			assert.ErrorIs(t, err, tt.is)
			var pe *graph.PanicError
			require.ErrorAs(t, results["bad"].Err, &pe)
			assert.Equal(t, graph.Failed, results["bad"].Status)
			assert.Equal(t, errcode.Internal, errcode.Of(pe))
			assert.NotEmpty(t, pe.Stack)
			assert.Contains(t, pe.Error(), "graph: panic: ")
			if tt.value != nil {
				assert.Equal(t, tt.value, pe.Value)
				assert.Contains(t, pe.Error(), fmt.Sprint(tt.value))
			}
			assert.Equal(t, graph.Skipped, results["after"].Status)
			assert.Equal(t, graph.Succeeded, results["other"].Status)
		})
	}
}

func TestRunGoexit(t *testing.T) {
	g := build(nil, [2]string{"a", "b"})
	results, err := g.Run(context.Background(), graph.RunOptions[string]{}, func(_ context.Context, node string) error {
		if node == "a" {
			runtime.Goexit()
		}
		return nil
	})
	assert.ErrorIs(t, err, errcode.Internal)
	assert.Equal(t, graph.Failed, results["a"].Status)
	assert.Equal(t, graph.Skipped, results["b"].Status)
}

func TestRunCancel(t *testing.T) {
	tests := []struct {
		name     string
		inflight func(ctx context.Context) error // what the blocked call returns once ctx is done
		want     graph.Status
	}{
		{"in-flight call finishes its work", func(context.Context) error { return nil }, graph.Succeeded},
		{"in-flight call gives up", func(ctx context.Context) error { return ctx.Err() }, graph.Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			// slow -> next -> last, plus two quick independent nodes that
			// sort after "slow" but have a lower height.
			g := build([]string{"quick1", "quick2"}, [2]string{"slow", "next"}, [2]string{"next", "last"})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var terminal sync.Map
			results, err := g.Run(ctx, graph.RunOptions[string]{
				Concurrency: 1,
				OnEvent: func(e graph.Event[string]) {
					if e.Type != graph.EventStarted {
						_, dup := terminal.LoadOrStore(e.Node, e.Type)
						assert.False(t, dup, "second terminal event for %s", e.Node)
					}
				},
			}, func(ctx context.Context, node string) error {
				if node != "slow" {
					return nil
				}
				cancel() // cancelled while slow is in flight
				<-ctx.Done()
				return tt.inflight(ctx)
			})
			require.Error(t, err)
			assert.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, tt.want, results["slow"].Status)
			for _, node := range []string{"next", "last", "quick1", "quick2"} {
				r := results[node]
				assert.Equal(t, graph.Skipped, r.Status, node)
				assert.ErrorIs(t, r.Err, context.Canceled, node)
				var se *graph.SkipError[string]
				assert.False(t, errors.As(r.Err, &se), "%s was skipped by the context, not a dependency", node)
				typ, ok := terminal.Load(node)
				assert.True(t, ok)
				assert.Equal(t, graph.EventSkipped, typ)
			}
			waitForGoroutines(t, before)
		})
	}

	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		g := build(nil, [2]string{"a", "b"})
		results, err := g.Run(ctx, graph.RunOptions[string]{}, func(context.Context, string) error {
			t.Error("nothing should run")
			return nil
		})
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, "graph: skipped a: context canceled", results["a"].Err.Error())
		assert.Equal(t, graph.Skipped, results["b"].Status)
	})

	t.Run("cancelled after the last node", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		g := build([]string{"only"})
		_, err := g.Run(ctx, graph.RunOptions[string]{}, func(context.Context, string) error {
			cancel()
			return nil
		})
		assert.NoError(t, err, "every node succeeded")
	})
}

// waitForGoroutines polls until no more goroutines run than before, and
// fails the test if that does not happen within a few seconds.
func waitForGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for wait := time.Millisecond; runtime.NumGoroutine() > before; wait *= 2 {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines: %d before Run, %d after", before, runtime.NumGoroutine())
		}
		time.Sleep(wait)
	}
}

func TestRunEvents(t *testing.T) {
	g := graphtest.Random(200, 500, 11)
	failing := 17
	var mu sync.Mutex // guards started, read by fn
	started := map[int]bool{}
	var events []graph.Event[int]
	results, err := g.Run(context.Background(), graph.RunOptions[int]{
		Concurrency: 4,
		OnEvent: func(e graph.Event[int]) {
			events = append(events, e) // serialised: no lock needed, the race detector checks it
			if e.Type == graph.EventStarted {
				mu.Lock()
				started[e.Node] = true
				mu.Unlock()
			}
		},
	}, func(_ context.Context, node int) error {
		mu.Lock()
		ok := started[node]
		mu.Unlock()
		assert.True(t, ok, "EventStarted for %d delivered before its function runs", node)
		if node%10 == 0 {
			// The sleep is under test: Result.Duration must cover it
			// (checked below). Nothing waits for it.
			time.Sleep(100 * time.Microsecond)
		}
		if node == failing {
			return errors.New("failing")
		}
		return nil
	})
	require.Error(t, err)

	first := map[int]int{}    // node -> index of its EventStarted
	terminal := map[int]int{} // node -> index of its terminal event
	for i, e := range events {
		if e.Type == graph.EventStarted {
			_, dup := first[e.Node]
			assert.False(t, dup, "started twice: %d", e.Node)
			first[e.Node] = i
			continue
		}
		_, dup := terminal[e.Node]
		require.False(t, dup, "second terminal event for %d", e.Node)
		terminal[e.Node] = i
		r := results[e.Node]
		switch e.Type {
		case graph.EventSucceeded:
			assert.Equal(t, graph.Succeeded, r.Status)
		case graph.EventFailed:
			assert.Equal(t, graph.Failed, r.Status)
			assert.Equal(t, r.Err, e.Err)
		case graph.EventSkipped:
			assert.Equal(t, graph.Skipped, r.Status)
			assert.Equal(t, failing, e.Cause)
			_, ran := first[e.Node]
			assert.False(t, ran, "skipped node %d started", e.Node)
			continue
		}
		s, ok := first[e.Node]
		require.True(t, ok, "%d finished without starting", e.Node)
		assert.Less(t, s, i)
		assert.Equal(t, r.Duration, e.Duration)
		assert.False(t, r.Start.IsZero())
		assert.False(t, e.Time.Before(r.Start))
		if e.Node%10 == 0 {
			assert.GreaterOrEqual(t, r.Duration, 100*time.Microsecond, "node %d slept", e.Node)
		}
	}
	assert.Len(t, terminal, 200, "one terminal event per node")
	assert.NotEmpty(t, g.Dependents(failing))
	for _, d := range g.Dependents(failing) {
		assert.Equal(t, graph.Skipped, results[d].Status)
	}
}

func TestRunInvalid(t *testing.T) {
	t.Run("cycle", func(t *testing.T) {
		g := build([]string{"fine"}, [2]string{"a", "b"}, [2]string{"b", "a"})
		results, err := g.Run(context.Background(), graph.RunOptions[string]{}, func(context.Context, string) error {
			t.Error("nothing should run")
			return nil
		})
		assert.Nil(t, results)
		var ce *graph.CycleError[string]
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, [][]string{{"a", "b"}}, ce.Cycles)
	})
	t.Run("nil function", func(t *testing.T) {
		_, err := build([]string{"a"}).Run(context.Background(), graph.RunOptions[string]{}, nil)
		assert.ErrorIs(t, err, errcode.Invalid)
	})
	t.Run("empty graph", func(t *testing.T) {
		results, err := graph.New[string]().Run(context.Background(), graph.RunOptions[string]{}, noop)
		assert.NoError(t, err)
		assert.Empty(t, results)
	})
}

func TestRunConcurrentRuns(t *testing.T) {
	// Once built, a graph may be run and sorted from several goroutines.
	g := graphtest.Random(500, 1500, 2)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			results, err := g.Run(context.Background(), graph.RunOptions[int]{Concurrency: 3},
				func(context.Context, int) error { return nil })
			assert.NoError(t, err)
			assert.Len(t, results, 500)
			_, err = g.Sort()
			assert.NoError(t, err)
		})
	}
	wg.Wait()
}

// TestRunWorkConserving: Run never leaves a slot idle while a node is
// ready. Each call blocks until the test releases it; after every release
// the test waits until Run has started exactly min(limit, ready nodes)
// calls — fewer is an idle slot, more breaks the bound — then releases the
// oldest call. How close the makespan comes to the lower bound is what
// BenchmarkGraphRunLayered reports.
func TestRunWorkConserving(t *testing.T) {
	const limit = 4
	g := graphtest.Layered(6, 8, 2, 1)
	var mu sync.Mutex
	var running []int // started, not yet released, in start order
	started := map[int]bool{}
	release := map[int]chan struct{}{}
	for _, v := range g.Nodes() {
		release[v] = make(chan struct{})
	}
	done := map[int]bool{} // released by the test
	ready := func() int {  // nodes not released whose dependencies all are
		n := 0
		for _, v := range g.Nodes() {
			if done[v] {
				continue
			}
			ok := true
			for _, d := range g.Deps(v) {
				ok = ok && done[d]
			}
			if ok {
				n++
			}
		}
		return n
	}
	errc := make(chan error, 1)
	go func() {
		_, err := g.Run(context.Background(), graph.RunOptions[int]{Concurrency: limit},
			func(_ context.Context, v int) error {
				mu.Lock()
				running = append(running, v)
				started[v] = true
				mu.Unlock()
				<-release[v]
				return nil
			})
		errc <- err
	}()
	for len(done) < g.Len() {
		want := min(limit, ready())
		var got int
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			got = len(running)
			return got >= want
		}, 10*time.Second, time.Millisecond, "%d of %d nodes released: %d calls running, %d ready", len(done), g.Len(), got, want)
		mu.Lock()
		require.Equal(t, want, len(running), "calls running after %d releases", len(done))
		v := running[0]
		running = running[1:]
		done[v] = true
		mu.Unlock()
		close(release[v])
	}
	require.NoError(t, <-errc)
	assert.Len(t, started, g.Len())
}

func TestStatusString(t *testing.T) {
	assert.Equal(t, "pending", graph.Pending.String())
	assert.Equal(t, "succeeded", graph.Succeeded.String())
	assert.Equal(t, "failed", graph.Failed.String())
	assert.Equal(t, "skipped", graph.Skipped.String())
	assert.Equal(t, "Status(9)", graph.Status(9).String())
	assert.Equal(t, "started", graph.EventStarted.String())
	assert.Equal(t, "succeeded", graph.EventSucceeded.String())
	assert.Equal(t, "failed", graph.EventFailed.String())
	assert.Equal(t, "skipped", graph.EventSkipped.String())
	assert.Equal(t, "EventType(-1)", graph.EventType(-1).String())
}
