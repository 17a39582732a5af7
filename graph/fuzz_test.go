package graph_test

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/graph"
)

var (
	numberRE = regexp.MustCompile(`\d+`)
	pathRE   = regexp.MustCompile(`\d+( -> \d+)+`)
)

// FuzzGraph builds a graph from pairs of bytes (edges between the nodes 0
// to 15; a trailing odd byte is an isolated node; bytes after the 64th are
// ignored) and checks the invariants of Validate, Sort, Waves, Reverse and
// Run against a brute-force reachability matrix.
func FuzzGraph(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Add([]byte{0, 1, 1, 2, 2, 3, 0, 3})                   // DAG
	f.Add([]byte{3, 3})                                     // self-loop
	f.Add([]byte{0, 1, 1, 2, 2, 0})                         // 3-cycle
	f.Add([]byte{0, 1, 1, 0, 5, 6, 6, 5, 1, 5, 9})          // two cycles, joined one way
	f.Add([]byte{0, 1, 1, 0, 0, 2, 2, 0, 0, 0, 3, 4, 4, 3}) // SCC without a Hamiltonian cycle, loop inside
	f.Fuzz(func(t *testing.T, data []byte) {
		const n = 16
		if len(data) > 64 {
			data = data[:64] // 32 edges: plenty for 16 nodes, and quick to minimise
		}
		g := graph.New[int]()
		var reach [n][n]bool // reach[a][b]: a path of one edge or more from a to b
		for i := 0; i+1 < len(data); i += 2 {
			from, to := int(data[i]%n), int(data[i+1]%n)
			g.AddEdge(from, to)
			reach[from][to] = true
		}
		if len(data)%2 == 1 {
			g.AddNode(int(data[len(data)-1] % n))
		}
		for k := range n {
			for a := range n {
				for b := range n {
					reach[a][b] = reach[a][b] || reach[a][k] && reach[k][b]
				}
			}
		}
		nodes := g.Nodes()
		acyclic := true
		for _, v := range nodes {
			acyclic = acyclic && !reach[v][v]
		}

		err := g.Validate()
		require.Equal(t, acyclic, err == nil, "Validate: %v", err)
		require.Equal(t, acyclic, g.Reverse().Validate() == nil, "Reverse().Validate")
		if acyclic {
			checkAcyclic(t, g, nodes)
			return
		}

		var ce *graph.CycleError[int]
		require.ErrorAs(t, err, &ce)
		order, sortErr := g.Sort()
		assert.Nil(t, order)
		assert.Equal(t, err, sortErr, "Sort reports the same cycles")
		waves, wavesErr := g.Waves()
		assert.Nil(t, waves)
		assert.Equal(t, err, wavesErr, "Waves reports the same cycles")
		results, runErr := g.Run(context.Background(), graph.RunOptions[int]{}, func(context.Context, int) error {
			t.Error("Run called fn on a cyclic graph")
			return nil
		})
		assert.Nil(t, results)
		assert.Equal(t, err, runErr, "Run reports the same cycles")

		inCycle := map[int]bool{}
		for _, c := range ce.Cycles {
			require.NotEmpty(t, c)
			require.True(t, slices.IsSorted(c), "cycle %v not sorted", c)
			if len(c) == 1 {
				assert.True(t, g.HasEdge(c[0], c[0]), "single-node cycle %v without a self-loop", c)
			}
			for _, a := range c {
				inCycle[a] = true
				for _, b := range c {
					if a != b {
						assert.True(t, reach[a][b], "cycle %v: %d does not reach %d", c, a, b)
					}
				}
			}
		}
		assert.True(t, slices.IsSortedFunc(ce.Cycles, slices.Compare[[]int]), "cycles not sorted: %v", ce.Cycles)
		for _, v := range nodes {
			assert.Equal(t, reach[v][v], inCycle[v], "node %d on a cycle: %v, reported: %v", v, reach[v][v], inCycle[v])
		}

		// The message names every node of every cycle, and a path it
		// prints follows real edges.
		msg := ce.Error()
		named := map[int]bool{}
		for _, m := range numberRE.FindAllString(msg, -1) {
			k, _ := strconv.Atoi(m)
			named[k] = true
		}
		for v := range inCycle {
			assert.True(t, named[v], "%q does not name %d", msg, v)
		}
		for _, path := range pathRE.FindAllString(msg, -1) {
			steps := strings.Split(path, " -> ")
			for i := 0; i+1 < len(steps); i++ {
				a, _ := strconv.Atoi(steps[i])
				b, _ := strconv.Atoi(steps[i+1])
				assert.True(t, g.HasEdge(a, b), "%q: no edge %d -> %d", msg, a, b)
			}
			assert.Equal(t, steps[0], steps[len(steps)-1], "%q: path does not close", path)
		}
	})
}

// checkAcyclic checks Sort, Waves and Run on an acyclic graph.
func checkAcyclic(t *testing.T, g *graph.Graph[int], nodes []int) {
	order, err := g.Sort()
	require.NoError(t, err)
	require.ElementsMatch(t, nodes, order, "Sort returns every node once")
	pos := map[int]int{}
	for i, v := range order {
		pos[v] = i
	}
	for _, to := range nodes {
		for _, from := range g.Deps(to) {
			assert.Less(t, pos[from], pos[to], "Sort: edge %d -> %d", from, to)
		}
	}

	waves, err := g.Waves()
	require.NoError(t, err)
	wave := map[int]int{}
	for i, w := range waves {
		require.NotEmpty(t, w)
		assert.True(t, slices.IsSorted(w))
		for _, v := range w {
			_, dup := wave[v]
			require.False(t, dup, "node %d in two waves", v)
			wave[v] = i
		}
	}
	require.Len(t, wave, len(nodes))
	for _, v := range nodes {
		deepest := -1
		for _, d := range g.Deps(v) {
			deepest = max(deepest, wave[d])
		}
		assert.Equal(t, deepest+1, wave[v], "wave of %d", v)
	}

	var events []graph.Event[int]
	results, err := g.Run(context.Background(), graph.RunOptions[int]{
		Concurrency: 3,
		OnEvent:     func(e graph.Event[int]) { events = append(events, e) },
	}, func(context.Context, int) error { return nil })
	require.NoError(t, err)
	require.Len(t, results, len(nodes))
	at := map[[2]int]int{} // {node, type} -> index in events
	for i, e := range events {
		at[[2]int{e.Node, int(e.Type)}] = i
	}
	require.Len(t, events, 2*len(nodes))
	for _, to := range nodes {
		assert.Equal(t, graph.Succeeded, results[to].Status)
		for _, from := range g.Deps(to) {
			assert.Less(t, at[[2]int{from, int(graph.EventSucceeded)}], at[[2]int{to, int(graph.EventStarted)}])
		}
	}
}
