// Package graph is a generic directed acyclic graph with a deterministic
// topological order and a bounded parallel runner.
//
// Nodes are keys of any ordered type. An edge from a to b means "a must
// finish before b starts": b depends on a. Every order the package produces
// is deterministic: ties are always broken by the smallest key.
//
//	g := graph.New[string]()
//	g.AddEdge("network", "vm")  // vm depends on network
//	g.AddEdge("vm", "dns")      // dns depends on vm
//	order, err := g.Sort()      // [network vm dns]
//
//	results, err := g.Run(ctx, graph.RunOptions[string]{Concurrency: 4},
//		func(ctx context.Context, node string) error {
//			return apply(ctx, node)
//		})
//
// # Cycles
//
// [Graph.Validate], [Graph.Sort], [Graph.Waves] and [Graph.Run] report a
// cyclic graph with a *[CycleError] that lists every cycle: every strongly
// connected component of more than one node (found with an iterative
// Tarjan's algorithm, so very long chains cannot overflow the stack) and
// every self-loop. A CycleError matches errcode.Invalid with errors.Is. No
// function in the package panics on a cyclic or otherwise odd graph.
//
// # Running
//
// [Graph.Run] calls a function for every node, at most
// [RunOptions.Concurrency] at a time, starting a node only after all of its
// dependencies succeeded. When a node fails (returns an error or panics),
// everything that depends on it, directly or transitively, is skipped with a
// *[SkipError]; independent branches keep running. When the context is
// cancelled, nodes that have not started are skipped and Run waits for the
// calls in flight. Every node gets exactly one [Result].
//
// Among the nodes that are ready to start, Run starts the one with the
// longest chain of work behind it (its height: the number of nodes on the
// longest path from it to a node nothing depends on) first, so that the
// critical path is not left waiting behind short side branches.
//
// # Concurrency
//
// A Graph is not safe for concurrent mutation: [Graph.AddNode] and
// [Graph.AddEdge] must not run at the same time as any other method. Once a
// graph is built, all the other methods only read it and may be called from
// any number of goroutines at once, including several Runs.
//
// Float keys work, but NaN is not supported as a key, because NaN is not
// equal to itself.
package graph
