package graph_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/openctl/openctl/graph"
)

func TestZZHang(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for it := 0; it < 200000; it++ {
		data := make([]byte, rng.IntN(40))
		for i := range data {
			data[i] = byte(rng.IntN(256))
		}
		done := make(chan struct{})
		stage := "build"
		go func() {
			select {
			case <-done:
			case <-time.After(3 * time.Second):
				fmt.Printf("HANG at %s on %v\n", stage, data)
				os.Exit(1)
			}
		}()
		g := graph.New[int]()
		for i := 0; i+1 < len(data); i += 2 {
			g.AddEdge(int(data[i]%16), int(data[i+1]%16))
		}
		stage = "validate"
		err := g.Validate()
		if err != nil {
			stage = "error"
			_ = err.Error()
		}
		stage = "sort"
		g.Sort()
		g.Waves()
		stage = "run"
		g.Run(context.Background(), graph.RunOptions[int]{Concurrency: 3, OnEvent: func(graph.Event[int]) {}}, func(context.Context, int) error { return nil })
		close(done)
	}
}
