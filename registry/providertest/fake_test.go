package providertest_test

import (
	"testing"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry/providertest"
)

func TestFakeConformance(t *testing.T) {
	f := providertest.NewFake("test", "Thing")
	providertest.RunConformance(t, f, providertest.Options{
		NewResource: func(name string) *manifest.Resource {
			return &manifest.Resource{
				APIVersion: "test.openctl.io/v1", Kind: "Thing",
				Metadata: manifest.Metadata{Name: name},
				Spec:     map[string]any{"size": int64(1), "tags": []any{"a"}},
			}
		},
		Mutate: func(r *manifest.Resource) *manifest.Resource {
			r.Spec["size"] = int64(2)
			return r
		},
	})
	if f.Calls().Apply == 0 {
		t.Fatal("conformance kit made no Apply calls")
	}
}
