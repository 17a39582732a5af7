package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/postgres"
)

// Open a store from $OPENCTL_STATE_DSN and take the default lock; a held
// lock names its holder. (Not run: it needs a database.)
func ExampleOpen() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, "", postgres.Options{})
	if err != nil {
		fmt.Println(err) // postgres: cannot connect to the state database db.example:5432/openctl: ...
		return
	}
	defer st.Close()

	unlock, err := st.Lock(ctx, state.DefaultScope, state.NewLockInfo("apply"))
	var locked *state.LockedError
	if errors.As(err, &locked) {
		fmt.Printf("busy: %s on %s is running %s\n", locked.Holder.Who, locked.Holder.Host, locked.Holder.Operation)
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer unlock()
	// ... Get, Put (compare-and-swap on Generation), List, Delete.
}
