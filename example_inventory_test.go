package openctl_test

import (
	"context"
	"os"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

// sealedNetwork is the example's network provider with a secret spec
// field: a Subnet's spec.password.
type sealedNetwork struct{ *network }

func (n sealedNetwork) Kinds() []registry.Kind {
	return []registry.Kind{{Kind: "Subnet", Plural: "subnets", SecretFields: []string{"spec.password"}}}
}

// ExampleEngine_Inventory_fromState reads what the state records of a kind as
// resources — spec as applied, status of the last apply, secret spec
// fields as [redacted] — without contacting the provider: what
// "openctl get subnets --from-state -o yaml" prints, and what applied
// again keeps the sealed secret.
func ExampleEngine_Inventory_fromState() {
	ctx := context.Background()
	store := state.NewMemory(state.MemoryPassphrase(func() (secret.Secret, error) {
		return secret.New("correct horse battery staple"), nil
	}))
	e, _ := openctl.New(openctl.WithProviders(sealedNetwork{&network{}}), openctl.WithStore(store))
	lan := &manifest.Resource{APIVersion: "net.openctl.io/v1", Kind: "Subnet", Metadata: manifest.Metadata{Name: "lan"},
		Spec: map[string]any{"prefix": "10.0.7", "password": "hunter2"}}
	if _, err := e.Apply(ctx, lan); err != nil {
		panic(err)
	}
	inv, err := e.Inventory(ctx, "net.openctl.io/v1", "Subnet", openctl.InventoryOptions{Names: []string{"lan"}, FromState: true, WithSecrets: true})
	if err != nil {
		panic(err)
	}
	_ = manifest.EncodeYAML(os.Stdout, inv.Resources...)
	// Output:
	// apiVersion: net.openctl.io/v1
	// kind: Subnet
	// metadata:
	//   name: lan
	// spec:
	//   password: "[redacted]"
	//   prefix: 10.0.7
	// status:
	//   prefix: 10.0.7
}
