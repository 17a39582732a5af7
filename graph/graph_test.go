package graph_test

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/graph"
)

// build returns a graph of the given nodes and edges, added in that order.
func build(nodes []string, edges ...[2]string) *graph.Graph[string] {
	g := graph.New[string]()
	for _, n := range nodes {
		g.AddNode(n)
	}
	for _, e := range edges {
		g.AddEdge(e[0], e[1])
	}
	return g
}

func TestGraphStructure(t *testing.T) {
	g := build([]string{"c", "a"}, [2]string{"a", "b"}, [2]string{"a", "b"}, [2]string{"c", "b"}, [2]string{"b", "d"})
	g.AddNode("a") // idempotent

	assert.Equal(t, 4, g.Len())
	assert.Equal(t, 3, g.EdgeCount(), "duplicate edge ignored")
	assert.True(t, g.Has("d"))
	assert.False(t, g.Has("zz"))
	assert.True(t, g.HasEdge("a", "b"))
	assert.False(t, g.HasEdge("b", "a"))
	assert.False(t, g.HasEdge("a", "zz"))
	assert.Equal(t, []string{"a", "b", "c", "d"}, g.Nodes())
	assert.Equal(t, []string{"a", "c"}, g.Deps("b"))
	assert.Equal(t, []string{"d"}, g.Dependents("b"))
	assert.Nil(t, g.Deps("a"))
	assert.Nil(t, g.Dependents("d"))
	assert.Nil(t, g.Deps("zz"))
	assert.Nil(t, g.Dependents("zz"))

	var zero graph.Graph[int] // the zero value is usable
	zero.AddEdge(1, 2)
	assert.Equal(t, []int{1, 2}, zero.Nodes())
}

func TestReverse(t *testing.T) {
	g := build(nil, [2]string{"a", "b"}, [2]string{"b", "c"}, [2]string{"a", "c"})
	r := g.Reverse()
	assert.Equal(t, g.Nodes(), r.Nodes())
	assert.Equal(t, []string{"b", "c"}, r.Deps("a"))
	assert.True(t, r.HasEdge("c", "a"))
	assert.False(t, r.HasEdge("a", "c"))
	order, err := r.Sort()
	require.NoError(t, err)
	assert.Equal(t, []string{"c", "b", "a"}, order)

	r.AddEdge("a", "z") // the copies do not share storage
	assert.False(t, g.Has("z"))
	assert.Equal(t, []string{"b", "c"}, g.Dependents("a"))
	r.AddEdge("c", "b")
	assert.False(t, g.HasEdge("c", "b"))

	loop := build(nil, [2]string{"x", "x"}).Reverse()
	assert.Error(t, loop.Validate())
}

func TestSort(t *testing.T) {
	tests := []struct {
		name  string
		nodes []string
		edges [][2]string
		want  []string
	}{
		{"empty", nil, nil, []string{}},
		{"isolated nodes sorted", []string{"c", "a", "b"}, nil, []string{"a", "b", "c"}},
		{"chain against key order", nil, [][2]string{{"c", "b"}, {"b", "a"}}, []string{"c", "b", "a"}},
		{"diamond", nil, [][2]string{{"a", "c"}, {"a", "b"}, {"b", "d"}, {"c", "d"}}, []string{"a", "b", "c", "d"}},
		{"smallest ready first", []string{"z"}, [][2]string{{"y", "a"}, {"b", "c"}}, []string{"b", "c", "y", "a", "z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			order, err := build(tt.nodes, tt.edges...).Sort()
			require.NoError(t, err)
			assert.Equal(t, tt.want, order)
		})
	}
}

func TestSortDeterministic(t *testing.T) {
	// The same nodes and edges added in any order give the same order.
	const n = 200
	rng := rand.New(rand.NewPCG(1, 2))
	var edges [][2]int
	for range 600 {
		a, b := rng.IntN(n), rng.IntN(n)
		if a != b {
			edges = append(edges, [2]int{min(a, b), max(a, b)})
		}
	}
	var want []int
	for i := range 10 {
		rng.Shuffle(len(edges), func(i, j int) { edges[i], edges[j] = edges[j], edges[i] })
		g := graph.New[int]()
		for _, v := range rng.Perm(n) {
			g.AddNode(v)
		}
		for _, e := range edges {
			g.AddEdge(e[0], e[1])
		}
		order, err := g.Sort()
		require.NoError(t, err)
		if i == 0 {
			want = order
			continue
		}
		require.Equal(t, want, order, "permutation %d", i)
	}
}

func TestWaves(t *testing.T) {
	tests := []struct {
		name  string
		nodes []string
		edges [][2]string
		want  [][]string
	}{
		{"empty", nil, nil, nil},
		{"independent", []string{"b", "a"}, nil, [][]string{{"a", "b"}}},
		{"deepest dependency decides", []string{"e"}, [][2]string{{"a", "b"}, {"b", "c"}, {"a", "c"}, {"d", "c"}},
			[][]string{{"a", "d", "e"}, {"b"}, {"c"}}},
		{"diamond", nil, [][2]string{{"a", "c"}, {"a", "b"}, {"b", "d"}, {"c", "d"}},
			[][]string{{"a"}, {"b", "c"}, {"d"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			waves, err := build(tt.nodes, tt.edges...).Waves()
			require.NoError(t, err)
			assert.Equal(t, tt.want, waves)
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		edges   [][2]string
		cycles  [][]string
		message string
	}{
		{
			name:  "acyclic",
			edges: [][2]string{{"a", "b"}, {"b", "c"}, {"a", "c"}},
		},
		{
			name:    "self-loop",
			edges:   [][2]string{{"a", "b"}, {"b", "b"}},
			cycles:  [][]string{{"b"}},
			message: "graph: dependency cycle: b -> b",
		},
		{
			name:    "three-node cycle names all three",
			edges:   [][2]string{{"x", "a"}, {"c", "a"}, {"a", "b"}, {"b", "c"}, {"c", "z"}},
			cycles:  [][]string{{"a", "b", "c"}},
			message: "graph: dependency cycle: a -> b -> c -> a",
		},
		{
			name:    "two disjoint cycles both reported",
			edges:   [][2]string{{"q", "p"}, {"p", "q"}, {"a", "b"}, {"b", "a"}, {"b", "m"}, {"m", "p"}},
			cycles:  [][]string{{"a", "b"}, {"p", "q"}},
			message: "graph: dependency cycle: a -> b -> a; p -> q -> p",
		},
		{
			name:    "self-loop inside a larger cycle",
			edges:   [][2]string{{"a", "b"}, {"b", "a"}, {"a", "a"}},
			cycles:  [][]string{{"a"}, {"a", "b"}},
			message: "graph: dependency cycle: a -> a; a -> b -> a",
		},
		{
			name:    "no single cycle through every member",
			edges:   [][2]string{{"a", "b"}, {"b", "a"}, {"a", "c"}, {"c", "a"}},
			cycles:  [][]string{{"a", "b", "c"}},
			message: "graph: dependency cycle: a -> b -> a -> c -> a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := build(nil, tt.edges...)
			err := g.Validate()
			if tt.cycles == nil {
				require.NoError(t, err)
				return
			}
			var ce *graph.CycleError[string]
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.cycles, ce.Cycles)
			assert.EqualError(t, err, tt.message)
			assert.ErrorIs(t, err, errcode.Invalid)
			assert.Equal(t, errcode.Invalid, errcode.Of(err))

			_, sortErr := g.Sort()
			assert.Equal(t, err, sortErr, "Sort reports the same cycles")
			_, wavesErr := g.Waves()
			assert.Equal(t, err, wavesErr, "Waves reports the same cycles")
		})
	}
}

func TestCycleErrorMessage(t *testing.T) {
	// A CycleError built by hand has no paths: Error lists the members.
	err := &graph.CycleError[string]{Cycles: [][]string{{"a"}, {"b", "c"}, {"d", "e", "f"}}}
	assert.EqualError(t, err, "graph: dependency cycle: a -> a; b -> c -> b; d, e, f (mutually dependent)")
	assert.True(t, errors.Is(err, errcode.Invalid))
	assert.False(t, errors.Is(err, errcode.Internal))

	// A star has no short walk through every member once it is big.
	g := graph.New[int]()
	for leaf := 1; leaf <= 1000; leaf++ {
		g.AddEdge(0, leaf)
		g.AddEdge(leaf, 0)
	}
	var ce *graph.CycleError[int]
	require.ErrorAs(t, g.Validate(), &ce)
	require.Len(t, ce.Cycles, 1)
	assert.Len(t, ce.Cycles[0], 1001)
	assert.Contains(t, ce.Error(), "0 -> 1 -> 0 -> 2 -> 0")
	assert.Contains(t, ce.Error(), "-> 1000 -> 0")

	// A broom: 0 -> 1 -> ... -> 50, then 50 -> leaf -> 0 for 50 leaves.
	// Every walk through all the leaves repeats the handle, so Error lists
	// the members instead.
	broom := graph.New[int]()
	for i := range 50 {
		broom.AddEdge(i, i+1)
		broom.AddEdge(50, 51+i)
		broom.AddEdge(51+i, 0)
	}
	require.ErrorAs(t, broom.Validate(), &ce)
	require.Len(t, ce.Cycles, 1)
	assert.Len(t, ce.Cycles[0], 101)
	assert.Regexp(t, `^graph: dependency cycle: 0, 1, 2, .*, 100 \(mutually dependent\)$`, ce.Error())
}

func TestValidateLong(t *testing.T) {
	// Far deeper than any recursive DFS could go on a goroutine stack.
	const n = 100_000
	chain := graph.New[int]()
	for i := range n - 1 {
		chain.AddEdge(i, i+1)
	}
	require.NoError(t, chain.Validate())
	order, err := chain.Sort()
	require.NoError(t, err)
	assert.Len(t, order, n)

	chain.AddEdge(n-1, 0) // now one ring through every node
	var ce *graph.CycleError[int]
	require.ErrorAs(t, chain.Validate(), &ce)
	require.Len(t, ce.Cycles, 1)
	assert.Len(t, ce.Cycles[0], n)
	msg := ce.Error()
	assert.Contains(t, msg, "graph: dependency cycle: 0 -> 1 -> 2 -> ")
	assert.Contains(t, msg, " -> "+strconv.Itoa(n-1)+" -> 0")
}

func TestDOT(t *testing.T) {
	g := build([]string{"lonely"}, [2]string{"b", "a"}, [2]string{"b", "c\"q\\"}, [2]string{"a", "c\"q\\"})
	want := `digraph "my \"deps\"" {
	n0 [label="a"];
	n1 [label="b"];
	n2 [label="c\"q\\"];
	n3 [label="lonely"];
	n0 -> n2;
	n1 -> n0;
	n1 -> n2;
}
`
	assert.Equal(t, want, g.DOT(`my "deps"`, nil))
	assert.Equal(t, want, g.Reverse().Reverse().DOT(`my "deps"`, nil))

	labelled := build(nil, [2]string{"x", "y"}).DOT("", func(k string) string { return k + "\nline" })
	assert.Equal(t, "digraph {\n\tn0 [label=\"x\\nline\"];\n\tn1 [label=\"y\\nline\"];\n\tn0 -> n1;\n}\n", labelled)
}
