package state_test

import (
	"testing"

	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/statetest"
)

func TestMemoryConformance(t *testing.T) {
	statetest.RunConformance(t, func(t *testing.T) state.Store { return state.NewMemory() })
}
