package graphtest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/graph/graphtest"
)

func TestRandomEdges(t *testing.T) {
	tests := []struct {
		name         string
		nodes, edges int
		want         int
	}{
		{"empty", 0, 10, 0},
		{"one node", 1, 10, 0},
		{"sparse", 100, 300, 300},
		{"capped at complete", 5, 100, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edges := graphtest.RandomEdges(tt.nodes, tt.edges, 7)
			require.Len(t, edges, tt.want)
			seen := map[[2]int]bool{}
			for _, e := range edges {
				assert.Less(t, e[0], e[1], "edges go from lower to higher")
				assert.GreaterOrEqual(t, e[0], 0)
				assert.Less(t, e[1], tt.nodes)
				assert.False(t, seen[e], "duplicate edge %v", e)
				seen[e] = true
			}
			assert.Equal(t, edges, graphtest.RandomEdges(tt.nodes, tt.edges, 7), "same seed, same edges")
		})
	}
}

func TestRandom(t *testing.T) {
	g := graphtest.Random(1000, 3000, 1)
	assert.Equal(t, 1000, g.Len())
	assert.Equal(t, 3000, g.EdgeCount())
	require.NoError(t, g.Validate())
}

func TestLayered(t *testing.T) {
	g := graphtest.Layered(10, 50, 2, 1)
	assert.Equal(t, 500, g.Len())
	assert.Equal(t, 9*50*2, g.EdgeCount())
	waves, err := g.Waves()
	require.NoError(t, err)
	require.Len(t, waves, 10)
	for _, w := range waves {
		assert.Len(t, w, 50)
	}
	assert.Equal(t, 0, graphtest.Layered(3, 4, -1, 1).EdgeCount())
}
