// Package graphtest builds reproducible graphs for tests and benchmarks of
// package graph and of code built on it. It is not meant for production
// code.
package graphtest

import (
	"math/rand/v2"

	"github.com/openctl/openctl/graph"
)

// RandomEdges returns edges distinct edges between the nodes 0 to nodes-1,
// chosen with a PCG generator seeded with seed. Every edge goes from a lower
// to a higher node, so the graph is acyclic. The same arguments always give
// the same edges in the same order. If edges is more than the
// nodes*(nodes-1)/2 possible edges, every possible edge is returned.
func RandomEdges(nodes, edges int, seed uint64) [][2]int {
	if nodes < 2 || edges <= 0 {
		return nil
	}
	edges = min(edges, nodes*(nodes-1)/2)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	seen := make(map[[2]int]bool, edges)
	out := make([][2]int, 0, edges)
	for len(out) < edges {
		a, b := rng.IntN(nodes), rng.IntN(nodes-1)
		if b >= a {
			b++
		}
		e := [2]int{min(a, b), max(a, b)}
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// Random returns a graph of the nodes 0 to nodes-1 (all of them, connected
// or not) and the edges of RandomEdges(nodes, edges, seed).
func Random(nodes, edges int, seed uint64) *graph.Graph[int] {
	g := graph.New[int]()
	for v := range nodes {
		g.AddNode(v)
	}
	for _, e := range RandomEdges(nodes, edges, seed) {
		g.AddEdge(e[0], e[1])
	}
	return g
}

// Layered returns a graph of layers*width nodes in layers of width nodes:
// node l*width+i is the i-th node of layer l. Every node after the first
// layer depends on deps distinct nodes of the previous layer (all of them
// if deps >= width), chosen with a PCG generator seeded with seed.
func Layered(layers, width, deps int, seed uint64) *graph.Graph[int] {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := graph.New[int]()
	for v := range layers * width {
		g.AddNode(v)
	}
	deps = max(0, min(deps, width))
	for l := 1; l < layers; l++ {
		for i := range width {
			for _, j := range rng.Perm(width)[:deps] {
				g.AddEdge((l-1)*width+j, l*width+i)
			}
		}
	}
	return g
}
