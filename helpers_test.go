package openctl_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/registry/providertest"
)

const testAV = "test.openctl.io/v1"

// testProvider is a Fake whose Group kind is a composite: a Group with
// spec.count: n plans n Things named <group>-<i>; every Thing after the
// first takes status.ip from the first through a $ref.
type testProvider struct {
	*providertest.Fake
	diff func(desired, live *manifest.Resource) registry.Diff
}

func newTestProvider() *testProvider {
	f := providertest.NewFake("test", "Thing", "Group")
	f.StatusFunc = func(r *manifest.Resource) map[string]any {
		return map[string]any{"ip": "ip-of-" + r.Metadata.Name, "token": "secret-of-" + r.Metadata.Name}
	}
	return &testProvider{Fake: f}
}

func (p *testProvider) Kinds() []registry.Kind {
	return []registry.Kind{
		{Kind: "Thing", Plural: "things", SecretFields: []string{"status.token", "spec.auth.password"}},
		{Kind: "Group", Plural: "groups", Composite: true},
	}
}

func (p *testProvider) Plan(ctx context.Context, r *manifest.Resource) ([]*manifest.Resource, error) {
	n, _ := r.Spec["count"].(int64)
	var out []*manifest.Resource
	for i := range n {
		c := thing(fmt.Sprintf("%s-%d", r.Metadata.Name, i), map[string]any{"index": i})
		if i > 0 {
			c.Spec["peer"] = refs.Marker(manifest.ID{APIVersion: testAV, Kind: "Thing", Name: r.Metadata.Name + "-0"}, "status.ip")
		}
		out = append(out, c)
	}
	return out, nil
}

// differProvider exposes the optional interface only when a test wants
// it.
type differProvider struct{ *testProvider }

func (p differProvider) Diff(ctx context.Context, desired, live *manifest.Resource) (registry.Diff, error) {
	return p.diff(desired, live), nil
}

func thing(name string, spec map[string]any) *manifest.Resource {
	if spec == nil {
		spec = map[string]any{}
	}
	return &manifest.Resource{APIVersion: testAV, Kind: "Thing", Metadata: manifest.Metadata{Name: name}, Spec: spec}
}

func thingID(name string) manifest.ID {
	return manifest.ID{APIVersion: testAV, Kind: "Thing", Name: name}
}

func ref(name, field string) map[string]any { return refs.Marker(thingID(name), field) }

func newEngine(t testing.TB, p registry.Provider, opts ...openctl.Option) *openctl.Engine {
	t.Helper()
	opts = append([]openctl.Option{openctl.WithProviders(p), openctl.WithRetry(backoff.Policy{Initial: 1e6, Max: 5e6})}, opts...)
	e, err := openctl.New(opts...)
	require.NoError(t, err)
	return e
}

// eventLog records events for assertions.
type eventLog struct {
	mu     sync.Mutex
	events []openctl.Event
}

func (l *eventLog) observe(ev openctl.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

func (l *eventLog) of(id manifest.ID) []openctl.EventType {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []openctl.EventType
	for _, ev := range l.events {
		if ev.ID == id {
			out = append(out, ev.Type)
		}
	}
	return out
}
