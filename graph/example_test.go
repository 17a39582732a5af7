package graph_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/openctl/openctl/graph"
)

// A small deployment: a network, two VMs on it, and a DNS record that needs
// both VMs.
func deployment() *graph.Graph[string] {
	g := graph.New[string]()
	g.AddEdge("network", "vm-a")
	g.AddEdge("network", "vm-b")
	g.AddEdge("vm-a", "dns")
	g.AddEdge("vm-b", "dns")
	return g
}

func ExampleGraph_Run() {
	g := deployment()
	results, err := g.Run(context.Background(), graph.RunOptions[string]{
		Concurrency: 1, // one at a time, so the order is predictable
		OnEvent: func(e graph.Event[string]) {
			fmt.Println(e.Type, e.Node)
		},
	}, func(ctx context.Context, node string) error {
		return nil // create the resource here
	})
	fmt.Println("error:", err, "results:", len(results))
	// Output:
	// started network
	// succeeded network
	// started vm-a
	// succeeded vm-a
	// started vm-b
	// succeeded vm-b
	// started dns
	// succeeded dns
	// error: <nil> results: 4
}

func ExampleGraph_Run_failure() {
	g := deployment()
	g.AddNode("bucket") // independent of the rest
	results, err := g.Run(context.Background(), graph.RunOptions[string]{Concurrency: 4},
		func(ctx context.Context, node string) error {
			if node == "vm-b" {
				return errors.New("quota exceeded")
			}
			return nil
		})
	for _, node := range slices.Sorted(maps.Keys(results)) {
		r := results[node]
		fmt.Printf("%s: %v", node, r.Status)
		if r.Err != nil {
			fmt.Printf(" (%v)", r.Err)
		}
		fmt.Println()
	}
	fmt.Println("error:", err)
	// Output:
	// bucket: succeeded
	// dns: skipped (graph: skipped dns: dependency vm-b failed: quota exceeded)
	// network: succeeded
	// vm-a: succeeded
	// vm-b: failed (quota exceeded)
	// error: quota exceeded
}

func ExampleGraph_Validate() {
	g := graph.New[string]()
	g.AddEdge("a", "b")
	g.AddEdge("b", "c")
	g.AddEdge("c", "a")
	g.AddEdge("x", "x")
	err := g.Validate()
	fmt.Println(err)

	var cycles *graph.CycleError[string]
	if errors.As(err, &cycles) {
		fmt.Println(cycles.Cycles)
	}
	// Output:
	// graph: dependency cycle: a -> b -> c -> a; x -> x
	// [[a b c] [x]]
}

func ExampleGraph_Sort() {
	order, err := deployment().Sort()
	fmt.Println(order, err)
	// Output: [network vm-a vm-b dns] <nil>
}

func ExampleGraph_Waves() {
	waves, err := deployment().Waves()
	fmt.Println(waves, err)
	// Output: [[network] [vm-a vm-b] [dns]] <nil>
}

func ExampleGraph_Reverse() {
	// Delete in the reverse order of creation.
	order, err := deployment().Reverse().Sort()
	fmt.Println(order, err)
	// Output: [dns vm-a vm-b network] <nil>
}

func ExampleGraph_DOT() {
	fmt.Print(deployment().DOT("deployment", nil))
	// Output:
	// digraph "deployment" {
	// 	n0 [label="dns"];
	// 	n1 [label="network"];
	// 	n2 [label="vm-a"];
	// 	n3 [label="vm-b"];
	// 	n1 -> n2;
	// 	n1 -> n3;
	// 	n2 -> n0;
	// 	n3 -> n0;
	// }
}
