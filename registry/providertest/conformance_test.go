package providertest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/registry/providertest"
)

// Broken providers, each violating one rule of the contract.
type (
	untypedNotFound    struct{ *providertest.Fake }
	deleteMissingFails struct{ *providertest.Fake }
	mutatesInput       struct{ *providertest.Fake }
	dropsSpec          struct{ *providertest.Fake }
	listForgets        struct{ *providertest.Fake }
)

func (p untypedNotFound) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	r, err := p.Fake.Get(ctx, id)
	if err != nil {
		return nil, errors.New("not there") // no errcode.NotFound
	}
	return r, nil
}

func (p deleteMissingFails) Delete(ctx context.Context, id manifest.ID) error {
	if _, err := p.Fake.Get(ctx, id); err != nil {
		return errors.New("no such thing")
	}
	return p.Fake.Delete(ctx, id)
}

func (p mutatesInput) Apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	r.Spec["defaulted"] = true
	return p.Fake.Apply(ctx, r)
}

func (p dropsSpec) Apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	c := r.DeepCopy()
	delete(c.Spec, "size")
	return p.Fake.Apply(ctx, c)
}

func (p listForgets) List(ctx context.Context, kind string) ([]*manifest.Resource, error) {
	return nil, nil
}

func fixture(name string) *manifest.Resource {
	return &manifest.Resource{
		APIVersion: "test.openctl.io/v1", Kind: "Thing",
		Metadata: manifest.Metadata{Name: name},
		Spec:     map[string]any{"size": int64(1), "tags": []any{"a"}},
	}
}

// TestConformanceCatchesBrokenProviders runs the kit against providers that
// break the contract, each in a child test process, and checks that the kit
// fails them with the right complaint.
func TestConformanceCatchesBrokenProviders(t *testing.T) {
	broken := map[string]registry.Provider{
		"untyped-notfound":     untypedNotFound{providertest.NewFake("test", "Thing")},
		"delete-missing-fails": deleteMissingFails{providertest.NewFake("test", "Thing")},
		"mutates-input":        mutatesInput{providertest.NewFake("test", "Thing")},
		"drops-spec":           dropsSpec{providertest.NewFake("test", "Thing")},
		"list-forgets":         listForgets{providertest.NewFake("test", "Thing")},
	}
	if name := os.Getenv("PROVIDERTEST_BROKEN"); name != "" {
		providertest.RunConformance(t, broken[name], providertest.Options{NewResource: fixture})
		return
	}
	for name, want := range map[string]string{
		"untyped-notfound":     "must match errcode.NotFound",
		"delete-missing-fails": "deleting a missing resource is not an error",
		"mutates-input":        "Apply must not modify its argument",
		"drops-spec":           "live spec does not reflect the applied one at spec.size",
		"list-forgets":         "List must contain the applied resource exactly once",
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestConformanceCatchesBrokenProviders$", "-test.v")
			cmd.Env = append(os.Environ(), "PROVIDERTEST_BROKEN="+name)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the kit must fail a provider that breaks the contract:\n%s", out)
			assert.Contains(t, string(out), want)
		})
	}
}
