// Package bench compares openctl's graph package with gonum on the same
// graphs. It is a separate module so that the main module does not depend
// on gonum.
package bench

import (
	"testing"
	"time"

	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"

	"github.com/openctl/openctl/graph/graphtest"
)

const (
	nodes = 10_000
	edges = 30_000
	seed  = 1
)

// BenchmarkValidateSort sorts a random DAG of 10,000 nodes and 30,000 edges
// topologically, with the cycle check each library performs: Validate then
// Sort for openctl, topo.Sort (Tarjan's algorithm) for gonum. Building the
// graphs is not measured.
func BenchmarkValidateSort(b *testing.B) {
	b.Run("openctl", func(b *testing.B) {
		g := graphtest.Random(nodes, edges, seed)
		b.ReportAllocs()
		for b.Loop() {
			if err := g.Validate(); err != nil {
				b.Fatal(err)
			}
			if _, err := g.Sort(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nodes), "ns/node")
	})
	b.Run("gonum", func(b *testing.B) {
		g := gonumGraph()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := topo.Sort(g); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nodes), "ns/node")
	})
}

// BenchmarkValidateSortRatio runs both sorts on the same graph in every
// iteration and reports how many times longer gonum takes than openctl
// ("gonum/openctl"; above 1 means openctl is faster).
func BenchmarkValidateSortRatio(b *testing.B) {
	ours := graphtest.Random(nodes, edges, seed)
	theirs := gonumGraph()
	var tOurs, tTheirs time.Duration
	for b.Loop() {
		start := time.Now()
		if err := ours.Validate(); err != nil {
			b.Fatal(err)
		}
		if _, err := ours.Sort(); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := topo.Sort(theirs); err != nil {
			b.Fatal(err)
		}
		tOurs += mid.Sub(start)
		tTheirs += time.Since(mid)
	}
	b.ReportMetric(float64(tTheirs)/float64(tOurs), "gonum/openctl")
}

// gonumGraph builds the benchmark graph for gonum.
func gonumGraph() *simple.DirectedGraph {
	g := simple.NewDirectedGraph()
	for v := range nodes {
		g.AddNode(simple.Node(v))
	}
	for _, e := range graphtest.RandomEdges(nodes, edges, seed) {
		g.SetEdge(g.NewEdge(simple.Node(e[0]), simple.Node(e[1])))
	}
	return g
}
