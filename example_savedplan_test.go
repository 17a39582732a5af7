package openctl_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

// The review workflow: plan and save, someone reviews the saved plan,
// then exactly that plan is applied. A plan whose world moved in between
// is refused, nothing changed.
func ExampleEngine_SavePlan() {
	ctx := context.Background()
	// Saved plans are sealed and signed with the state store's key: the
	// store needs its passphrase (OPENCTL_STATE_PASSPHRASE for a file store).
	store := state.NewMemory(state.MemoryPassphrase(func() (secret.Secret, error) {
		return secret.New("correct horse battery staple"), nil
	}))
	e, _ := openctl.New(openctl.WithProviders(&network{}), openctl.WithStore(store))
	subnet := &manifest.Resource{APIVersion: "net.openctl.io/v1", Kind: "Subnet", Metadata: manifest.Metadata{Name: "lan"}, Spec: map[string]any{"prefix": "10.0.7"}}

	plan, err := e.Plan(ctx, subnet)
	if err != nil {
		panic(err)
	}
	var file bytes.Buffer // a file, an artifact of the CI job
	if err := e.SavePlan(ctx, plan, &file); err != nil {
		panic(err)
	}
	data := file.Bytes()

	// Later, after the review: load it and apply it, no manifest needed.
	sp, err := e.LoadPlan(ctx, bytes.NewReader(data))
	if err != nil {
		panic(err)
	}
	for _, c := range sp.Plan().Changes {
		fmt.Println("reviewed:", c.ID.Short(), c.Action)
	}
	report, err := e.ApplyPlan(ctx, sp, openctl.ApplyPlanOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println("applied:", report.Count(openctl.OutcomeCreated), "created")

	// The same plan again: the subnet exists now, so it is refused.
	sp, _ = e.LoadPlan(ctx, bytes.NewReader(data))
	_, err = e.ApplyPlan(ctx, sp, openctl.ApplyPlanOptions{})
	var refused *openctl.PlanRefusedError
	if errors.As(err, &refused) {
		fmt.Println(refused.ID.Short(), "refused:", errors.Is(err, openctl.ErrPlanStale))
	}
	// Output:
	// reviewed: Subnet/lan create
	// applied: 1 created
	// Subnet/lan refused: true
}

// Drift compares live resources with the state: here a subnet changed
// behind openctl's back.
func ExampleEngine_Drift() {
	ctx := context.Background()
	n := &network{}
	e, _ := openctl.New(openctl.WithProviders(n))
	subnet := &manifest.Resource{APIVersion: "net.openctl.io/v1", Kind: "Subnet", Metadata: manifest.Metadata{Name: "lan"}, Spec: map[string]any{"prefix": "10.0.7"}}
	if _, err := e.Apply(ctx, subnet); err != nil {
		panic(err)
	}
	edited := subnet.DeepCopy()
	edited.Spec["prefix"] = "10.0.8"
	_, _ = n.Apply(ctx, edited) // someone else's change

	drift, err := e.Drift(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("drift:", drift.HasChanges())
	for _, c := range drift.Changes {
		fmt.Println(c.ID.Short(), c.Action, c.Reasons)
		for _, f := range c.Fields {
			fmt.Println(" ", f.Path, f.Old, "→", f.New)
		}
	}
	// Output:
	// drift: true
	// Subnet/lan update [changed outside openctl]
	//   spec.prefix 10.0.7 → 10.0.8
}
