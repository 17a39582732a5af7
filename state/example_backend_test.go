package state_test

import (
	"context"
	"fmt"
	"os"

	"github.com/openctl/openctl/state"
)

// Open a store named by a DSN. A program registers the backends it wants —
// here the file store's; a program that also links state/postgres adds
// postgres.Backend{} — and opens whatever DSN its user gives.
func ExampleBackends() {
	dir, err := os.MkdirTemp("", "openctl-state-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	var stores state.Backends
	if err := stores.Register(state.FileBackend{}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(stores.Schemes())

	st, err := stores.Open(ctx, "file:"+dir, state.OpenOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	rec := &state.Record{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: "web-01", SpecHash: "h1"}
	if _, err := st.Put(ctx, rec); err != nil {
		fmt.Println(err)
		return
	}
	got, err := st.Get(ctx, rec.ID())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got.Name, got.Generation)

	// No backend serves this scheme; the password never shows.
	_, err = stores.Open(ctx, "mysql://root:hunter2@db/openctl", state.OpenOptions{})
	fmt.Println(err)
	// Output:
	// [file]
	// web-01 1
	// state: no backend for the "mysql" scheme of "mysql://root:xxxxx@db/openctl"; registered: file (INVALID_REQUEST)
}

func ExampleMaskDSN() {
	fmt.Println(state.MaskDSN("postgres://ci:hunter2@db.example:5432/openctl?sslmode=require"))
	fmt.Println(state.MaskDSN("host=db.example dbname=openctl user=ci password=hunter2"))
	// Output:
	// postgres://ci:xxxxx@db.example:5432/openctl?sslmode=require
	// host=db.example dbname=openctl user=ci password=xxxxx
}
