package state_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/state"
)

func ExampleOpenFile() {
	dir, err := os.MkdirTemp("", "openctl-state-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	st, err := state.OpenFile(dir, state.FileOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	unlock, err := st.Lock(ctx, state.DefaultScope, state.NewLockInfo("apply"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer unlock()

	rec := &state.Record{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: "web-01", SpecHash: "h1"}
	stored, err := st.Put(ctx, rec)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("generation", stored.Generation)

	// A second writer that read nothing is stale.
	_, err = st.Put(ctx, rec)
	fmt.Println(errors.Is(err, errcode.Conflict))

	// Another process would find the lock held.
	_, err = st.Lock(ctx, state.DefaultScope, state.NewLockInfo("delete"))
	var le *state.LockedError
	fmt.Println(errors.As(err, &le), le.Holder.Operation, le.Stale)
	// Output:
	// generation 1
	// true
	// true apply false
}
