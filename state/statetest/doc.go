// Package statetest is the conformance kit every state.Store runs:
//
//	func TestConformance(t *testing.T) {
//		statetest.RunConformance(t, func(t *testing.T) state.Store { return newStore(t) })
//	}
//
// A store that implements state.RawStore (it can export and import its
// sealed state, so that state.Copy can move it) runs RunRawConformance
// too, with stores that share a passphrase:
//
//	func TestRawConformance(t *testing.T) {
//		statetest.RunRawConformance(t, func(t *testing.T) state.RawStore { return newStore(t) })
//	}
package statetest
