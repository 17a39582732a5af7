package graph_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/openctl/openctl/graph"
	"github.com/openctl/openctl/graph/graphtest"
)

const (
	benchNodes = 10_000
	benchEdges = 30_000
	benchSeed  = 1
)

// reportPerNode reports the time per node of the benchmark so far.
func reportPerNode(b *testing.B, nodes int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nodes), "ns/node")
}

// BenchmarkGraphRun measures the scheduling overhead of Run: a no-op
// function on a random DAG of 10,000 nodes and 30,000 edges.
func BenchmarkGraphRun(b *testing.B) {
	g := graphtest.Random(benchNodes, benchEdges, benchSeed)
	nop := func(context.Context, int) error { return nil }
	for _, limit := range []int{1, 2, 4, 16} {
		b.Run(fmt.Sprint("concurrency=", limit), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Run(context.Background(), graph.RunOptions[int]{Concurrency: limit}, nop); err != nil {
					b.Fatal(err)
				}
			}
			reportPerNode(b, benchNodes)
		})
	}
}

// BenchmarkGraphValidateSort measures Validate followed by Sort on the same
// graph as BenchmarkGraphRun.
func BenchmarkGraphValidateSort(b *testing.B) {
	g := graphtest.Random(benchNodes, benchEdges, benchSeed)
	b.ReportAllocs()
	for b.Loop() {
		if err := g.Validate(); err != nil {
			b.Fatal(err)
		}
		if _, err := g.Sort(); err != nil {
			b.Fatal(err)
		}
	}
	reportPerNode(b, benchNodes)
}

// BenchmarkGraphBuild measures building the benchmark graph with AddNode
// and AddEdge.
func BenchmarkGraphBuild(b *testing.B) {
	edges := graphtest.RandomEdges(benchNodes, benchEdges, benchSeed)
	b.ReportAllocs()
	for b.Loop() {
		g := graph.New[int]()
		for v := range benchNodes {
			g.AddNode(v)
		}
		for _, e := range edges {
			g.AddEdge(e[0], e[1])
		}
	}
	reportPerNode(b, benchNodes)
}

// BenchmarkGraphRunLayered reports how far the makespan of Run is above the
// lower bound max(critical path, total work / concurrency) on layered
// graphs with 1 ms of work per node.
func BenchmarkGraphRunLayered(b *testing.B) {
	const work = time.Millisecond
	g := graphtest.Layered(10, 50, 2, 1)
	for _, limit := range []int{4, 16} {
		b.Run(fmt.Sprint("concurrency=", limit), func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				results, err := g.Run(context.Background(), graph.RunOptions[int]{Concurrency: limit},
					func(context.Context, int) error {
						time.Sleep(work)
						return nil
					})
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range results {
					total += r.Duration
				}
			}
			bound := max(10*total/time.Duration(g.Len()), total/time.Duration(limit))
			b.ReportMetric(float64(b.Elapsed())/float64(bound), "makespan/bound")
		})
	}
}
