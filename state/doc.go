// Package state defines how openctl remembers what it created: a [Record]
// per resource (the spec as written, the hash of the spec last applied, the
// last status, owner and children, secret values, a generation and a
// lineage) kept in a [Store].
//
// The engine reads a record to decide whether an Apply would change
// anything (equal spec hashes and a live resource mean no provider call),
// to find a composite's children and a child's owner at delete time, and to
// order deletes by the $ref dependencies recorded in the spec.
//
// Store is a small contract: Get, Put (compare-and-swap on Generation, so a
// stale writer gets errcode.Conflict instead of overwriting), Delete, List
// and Lock (an exclusive lock per scope that reports its holder). This
// package ships [Memory], an in-memory store; persistent stores live in
// their own packages and run the same conformance kit,
// statetest.RunConformance.
//
//	st := state.NewMemory()
//	unlock, err := st.Lock(ctx, state.DefaultScope, state.NewLockInfo("apply"))
//	if err != nil { ... } // *state.LockedError names the holder
//	defer unlock()
package state
