package graph

import (
	"cmp"
	"maps"
	"math/bits"
	"slices"
)

// Graph is a directed graph whose nodes are keys of type K. An edge from a
// to b means b depends on a: a must finish before b starts.
//
// Internally each key is mapped once to a dense int index and edges are kept
// as adjacency lists of indexes, so the algorithms never hash keys.
//
// The zero value is an empty graph ready to use. A Graph is not safe for
// concurrent mutation: AddNode and AddEdge must not be called at the same
// time as any other method. Every other method only reads the graph, so once
// it is built they may be called concurrently with each other.
type Graph[K cmp.Ordered] struct {
	index map[K]int           // key -> node index (insertion order)
	keys  []K                 // node index -> key
	out   [][]int             // out[v]: dependents of v, in insertion order
	in    [][]int             // in[v]: dependencies of v, in insertion order
	edges map[uint64]struct{} // every edge as edgeKey(from, to), to ignore duplicates
	loops int                 // number of self-loops
}

// New returns an empty graph.
func New[K cmp.Ordered]() *Graph[K] { return &Graph[K]{} }

// edgeKey packs an edge into one map key. Node indexes fit in 32 bits: a
// graph with more nodes would not fit in memory anyway.
func edgeKey(from, to int) uint64 { return uint64(uint32(from))<<32 | uint64(uint32(to)) }

// node returns k's index, adding k first if it is missing.
func (g *Graph[K]) node(k K) int {
	if v, ok := g.index[k]; ok {
		return v
	}
	if g.index == nil {
		g.index = make(map[K]int)
	}
	v := len(g.keys)
	g.index[k] = v
	g.keys = append(g.keys, k)
	g.out = append(g.out, nil)
	g.in = append(g.in, nil)
	return v
}

// AddNode adds k. Adding a node that is already present does nothing.
func (g *Graph[K]) AddNode(k K) { g.node(k) }

// AddEdge records that to depends on from: from must finish before to
// starts. Missing nodes are added; an edge that is already present is
// ignored. A self-loop (from == to) is recorded, and reported as a cycle by
// Validate, Sort, Waves and Run.
func (g *Graph[K]) AddEdge(from, to K) {
	u, v := g.node(from), g.node(to)
	e := edgeKey(u, v)
	if _, dup := g.edges[e]; dup {
		return
	}
	if g.edges == nil {
		g.edges = make(map[uint64]struct{})
	}
	g.edges[e] = struct{}{}
	g.out[u] = append(g.out[u], v)
	g.in[v] = append(g.in[v], u)
	if u == v {
		g.loops++
	}
}

// Len returns the number of nodes.
func (g *Graph[K]) Len() int { return len(g.keys) }

// EdgeCount returns the number of edges, self-loops included.
func (g *Graph[K]) EdgeCount() int { return len(g.edges) }

// Has reports whether k is a node of the graph.
func (g *Graph[K]) Has(k K) bool {
	_, ok := g.index[k]
	return ok
}

// HasEdge reports whether the graph has an edge from from to to, that is,
// whether to depends directly on from.
func (g *Graph[K]) HasEdge(from, to K) bool {
	u, ok := g.index[from]
	if !ok {
		return false
	}
	v, ok := g.index[to]
	if !ok {
		return false
	}
	_, ok = g.edges[edgeKey(u, v)]
	return ok
}

// Nodes returns every node, sorted ascending.
func (g *Graph[K]) Nodes() []K {
	nodes := slices.Clone(g.keys)
	slices.Sort(nodes)
	return nodes
}

// Deps returns the direct dependencies (predecessors) of k, sorted. It
// returns nil if k has none or is not in the graph.
func (g *Graph[K]) Deps(k K) []K {
	v, ok := g.index[k]
	if !ok {
		return nil
	}
	return g.sortedKeys(g.in[v])
}

// Dependents returns the nodes that depend directly on k (its successors),
// sorted. It returns nil if there are none or k is not in the graph.
func (g *Graph[K]) Dependents(k K) []K {
	v, ok := g.index[k]
	if !ok {
		return nil
	}
	return g.sortedKeys(g.out[v])
}

// sortedKeys returns the keys of the nodes vs, sorted, or nil if vs is empty.
func (g *Graph[K]) sortedKeys(vs []int) []K {
	if len(vs) == 0 {
		return nil
	}
	ks := make([]K, len(vs))
	for i, v := range vs {
		ks[i] = g.keys[v]
	}
	slices.Sort(ks)
	return ks
}

// Reverse returns a new graph with the same nodes and every edge flipped, so
// that dependents come before their dependencies (the order in which to
// delete things).
func (g *Graph[K]) Reverse() *Graph[K] {
	r := &Graph[K]{
		index: maps.Clone(g.index),
		keys:  slices.Clone(g.keys),
		out:   cloneAdjacency(g.in),
		in:    cloneAdjacency(g.out),
		loops: g.loops,
	}
	if len(g.edges) > 0 {
		r.edges = make(map[uint64]struct{}, len(g.edges))
		for e := range g.edges {
			r.edges[bits.RotateLeft64(e, 32)] = struct{}{} // swap from and to
		}
	}
	return r
}

// cloneAdjacency deep-copies adjacency lists into one backing array. Each
// list is capped at its length so that a later append reallocates instead
// of overwriting its neighbour.
func cloneAdjacency(adj [][]int) [][]int {
	total := 0
	for _, l := range adj {
		total += len(l)
	}
	backing := make([]int, 0, total)
	c := make([][]int, len(adj))
	for v, l := range adj {
		if len(l) == 0 {
			continue
		}
		start := len(backing)
		backing = append(backing, l...)
		c[v] = backing[start:len(backing):len(backing)]
	}
	return c
}

// kahn returns the nodes in a topological order, using the returned slice
// itself as the FIFO queue. If the graph is cyclic the order is shorter than
// Len: nodes on or after a cycle never become ready.
func (g *Graph[K]) kahn() []int {
	n := len(g.keys)
	waiting := make([]int, n)
	order := make([]int, 0, n)
	for v := range n {
		waiting[v] = len(g.in[v])
		if waiting[v] == 0 {
			order = append(order, v)
		}
	}
	for i := 0; i < len(order); i++ {
		for _, w := range g.out[order[i]] {
			waiting[w]--
			if waiting[w] == 0 {
				order = append(order, w)
			}
		}
	}
	return order
}

// Validate returns nil if the graph is acyclic, and otherwise a
// *CycleError listing every cycle. It never panics.
//
// An acyclic graph is recognised in linear time with Kahn's algorithm; only
// a cyclic one pays for finding the cycles with Tarjan's algorithm.
func (g *Graph[K]) Validate() error {
	if g.loops == 0 && len(g.kahn()) == len(g.keys) {
		return nil
	}
	return g.cycleError()
}

// Sort returns every node in a topological order: each node comes after all
// of its dependencies. The order is deterministic: whenever several nodes
// are ready, the smallest key comes first. A cyclic graph yields a
// *CycleError, the same one Validate returns.
func (g *Graph[K]) Sort() ([]K, error) {
	n := len(g.keys)
	waiting := make([]int, n)
	var ready queue[K]
	for v := range n {
		waiting[v] = len(g.in[v])
		if waiting[v] == 0 {
			ready.items = append(ready.items, entry[K]{key: g.keys[v], node: v})
		}
	}
	ready.init()
	order := make([]K, 0, n)
	for ready.len() > 0 {
		v := ready.pop()
		order = append(order, g.keys[v])
		for _, w := range g.out[v] {
			waiting[w]--
			if waiting[w] == 0 {
				ready.push(entry[K]{key: g.keys[w], node: w})
			}
		}
	}
	if len(order) < n {
		return nil, g.cycleError()
	}
	return order, nil
}

// Waves groups the nodes into execution waves: wave 0 holds the nodes
// without dependencies and wave n the nodes whose deepest dependency is in
// wave n-1, so every node of a wave can run in parallel once the previous
// waves are done. Each wave is sorted. A cyclic graph yields a *CycleError.
func (g *Graph[K]) Waves() ([][]K, error) {
	order := g.kahn()
	if len(order) < len(g.keys) {
		return nil, g.cycleError()
	}
	if len(order) == 0 {
		return nil, nil
	}
	level := make([]int, len(g.keys))
	deepest := 0
	for _, v := range order { // every dependency of v comes earlier in order
		for _, w := range g.out[v] {
			level[w] = max(level[w], level[v]+1)
		}
		deepest = max(deepest, level[v])
	}
	waves := make([][]K, deepest+1)
	for v, l := range level {
		waves[l] = append(waves[l], g.keys[v])
	}
	for _, w := range waves {
		slices.Sort(w)
	}
	return waves, nil
}
