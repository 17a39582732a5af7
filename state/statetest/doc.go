// Package statetest is the conformance kit every state.Store runs:
//
//	func TestConformance(t *testing.T) {
//		statetest.RunConformance(t, func(t *testing.T) state.Store { return newStore(t) })
//	}
package statetest
