package openctl_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

// network is a tiny provider for the example: a Subnet gets a CIDR, a Host
// gets an address inside the subnet its spec names.
type network struct {
	mu    sync.Mutex
	items map[manifest.ID]*manifest.Resource
}

func (n *network) Name() string { return "net" }
func (n *network) Kinds() []registry.Kind {
	return []registry.Kind{{Kind: "Subnet", Plural: "subnets"}, {Kind: "Host", Plural: "hosts"}}
}
func (n *network) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r, ok := n.items[id]
	if !ok {
		return nil, fmt.Errorf("net: %s: %w", id.Short(), errcode.NotFound)
	}
	return r.DeepCopy(), nil
}
func (n *network) Apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	out := r.DeepCopy()
	switch r.Kind {
	case "Subnet":
		out.Status = map[string]any{"prefix": r.Spec["prefix"]}
	case "Host":
		out.Status = map[string]any{"address": fmt.Sprintf("%v.%v", r.Spec["prefix"], r.Spec["index"])}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.items == nil {
		n.items = map[manifest.ID]*manifest.Resource{}
	}
	n.items[r.ID()] = out
	return out.DeepCopy(), nil
}
func (n *network) Delete(ctx context.Context, id manifest.ID) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.items, id)
	return nil
}

// Example configures an engine with the options an embedder usually
// sets and applies two manifests, one taking a value from the other.
func Example() {
	ctx := context.Background()
	e, err := openctl.New(
		openctl.WithProviders(&network{}),    // the providers compiled in
		openctl.WithStore(state.NewMemory()), // default; see package state for files and PostgreSQL
		openctl.WithConcurrency(8),           // default: DefaultConcurrency
		openctl.WithLogger(slog.New(slog.DiscardHandler)),
		openctl.WithObserver(func(ev openctl.Event) {
			if ev.Type == openctl.EventSucceeded {
				fmt.Println("event:", ev.ID.Short(), ev.Outcome)
			}
		}),
	)
	if err != nil {
		panic(err)
	}
	defer e.Close()
	// Usually manifest.Load(ctx, []string{"network.yaml"}, manifest.LoadOptions{}).
	resources, err := manifest.DecodeBytes([]byte(`
apiVersion: net.openctl.io/v1
kind: Host
metadata: {name: web}
spec:
  prefix: {$ref: {apiVersion: net.openctl.io/v1, kind: Subnet, name: lan, field: status.prefix}}
  index: 5
---
apiVersion: net.openctl.io/v1
kind: Subnet
metadata: {name: lan}
spec: {prefix: 10.0.7}
`), "network.yaml")
	if err != nil {
		panic(err)
	}
	report, err := e.Apply(ctx, resources...)
	if err != nil {
		panic(err)
	}
	web, _ := report.Result(manifest.ID{APIVersion: "net.openctl.io/v1", Kind: "Host", Name: "web"})
	fmt.Println("web:", web.Resource.Status["address"])
	// Output:
	// event: Subnet/lan created
	// event: Host/web created
	// web: 10.0.7.5
}

func ExampleEngine_Apply() {
	ctx := context.Background()
	e, err := openctl.New(openctl.WithProviders(&network{}), openctl.WithConcurrency(8))
	if err != nil {
		panic(err)
	}
	subnet := &manifest.Resource{
		APIVersion: "net.openctl.io/v1", Kind: "Subnet",
		Metadata: manifest.Metadata{Name: "lan"},
		Spec:     map[string]any{"prefix": "10.0.7"},
	}
	var hosts []*manifest.Resource
	for i := range 3 {
		hosts = append(hosts, &manifest.Resource{
			APIVersion: "net.openctl.io/v1", Kind: "Host",
			Metadata: manifest.Metadata{Name: fmt.Sprintf("host-%d", i)},
			Spec: map[string]any{
				// The host needs the subnet, and takes its prefix from it.
				"prefix": refs.Marker(subnet.ID(), "status.prefix"),
				"index":  int64(10 + i),
			},
		})
	}
	report, err := e.Apply(ctx, append(hosts, subnet)...)
	if err != nil {
		panic(err)
	}
	for _, r := range report.Results {
		fmt.Println(r.ID.Short(), r.Outcome, r.Resource.Status)
	}
	// Applying again changes nothing.
	report, _ = e.Apply(ctx, append(hosts, subnet)...)
	fmt.Println("unchanged:", report.Count(openctl.OutcomeUnchanged))
	// Output:
	// Subnet/lan created map[prefix:10.0.7]
	// Host/host-0 created map[address:10.0.7.10]
	// Host/host-1 created map[address:10.0.7.11]
	// Host/host-2 created map[address:10.0.7.12]
	// unchanged: 4
}

func ExampleEngine_Plan() {
	ctx := context.Background()
	e, _ := openctl.New(openctl.WithProviders(&network{}))
	subnet := &manifest.Resource{APIVersion: "net.openctl.io/v1", Kind: "Subnet", Metadata: manifest.Metadata{Name: "lan"}, Spec: map[string]any{"prefix": "10.0.7"}}
	host := &manifest.Resource{APIVersion: "net.openctl.io/v1", Kind: "Host", Metadata: manifest.Metadata{Name: "web"},
		Spec: map[string]any{"prefix": refs.Marker(subnet.ID(), "status.prefix"), "index": int64(5)}}
	plan, err := e.Plan(ctx, subnet, host)
	if err != nil {
		panic(err)
	}
	for _, c := range plan.Changes {
		fmt.Println(c.ID.Short(), c.Action)
	}
	fmt.Println("waves:", len(plan.Waves))
	// Output:
	// Subnet/lan create
	// Host/web create
	// waves: 2
}

func ExampleEngine_Delete() {
	ctx := context.Background()
	e, _ := openctl.New(openctl.WithProviders(&network{}))
	subnet := &manifest.Resource{APIVersion: "net.openctl.io/v1", Kind: "Subnet", Metadata: manifest.Metadata{Name: "lan"}, Spec: map[string]any{"prefix": "10.0.7"}}
	host := &manifest.Resource{APIVersion: "net.openctl.io/v1", Kind: "Host", Metadata: manifest.Metadata{Name: "web"},
		Spec: map[string]any{"prefix": refs.Marker(subnet.ID(), "status.prefix"), "index": int64(5)}}
	if _, err := e.Apply(ctx, subnet, host); err != nil {
		panic(err)
	}
	// The host is deleted before the subnet it depends on.
	report, err := e.Delete(ctx, subnet.ID(), host.ID())
	if err != nil {
		panic(err)
	}
	for _, r := range report.Results {
		fmt.Println(r.ID.Short(), r.Outcome)
	}
	// Output:
	// Host/web deleted
	// Subnet/lan deleted
}

// ExampleEngine_Validate finds a dependency cycle without touching
// anything.
func ExampleEngine_Validate() {
	ctx := context.Background()
	e, _ := openctl.New(openctl.WithProviders(&network{}))
	a := &manifest.Resource{APIVersion: "net.openctl.io/v1", Kind: "Host", Metadata: manifest.Metadata{Name: "a"},
		Spec: map[string]any{"prefix": refs.Marker(manifest.ID{APIVersion: "net.openctl.io/v1", Kind: "Host", Name: "b"}, "status.address")}}
	b := &manifest.Resource{APIVersion: "net.openctl.io/v1", Kind: "Host", Metadata: manifest.Metadata{Name: "b"},
		Spec: map[string]any{"prefix": refs.Marker(a.ID(), "status.address")}}
	err := e.Validate(ctx, a, b)
	fmt.Println(errcode.Of(err))
	fmt.Println(err)
	// Output:
	// INVALID_REQUEST
	// openctl: the resources depend on each other in a cycle: graph: dependency cycle: net.openctl.io/v1/Host/a -> net.openctl.io/v1/Host/b -> net.openctl.io/v1/Host/a
}

// ExampleEngine_Get reads one resource live and as recorded; one deleted
// outside openctl is Gone, not an error.
func ExampleEngine_Get() {
	ctx := context.Background()
	n := &network{}
	e, _ := openctl.New(openctl.WithProviders(n))
	lan := &manifest.Resource{APIVersion: "net.openctl.io/v1", Kind: "Subnet", Metadata: manifest.Metadata{Name: "lan"}, Spec: map[string]any{"prefix": "10.0.7"}}
	if _, err := e.Apply(ctx, lan); err != nil {
		panic(err)
	}
	found, err := e.Get(ctx, lan.ID())
	if err != nil {
		panic(err)
	}
	fmt.Println(found.Resource.Status, found.Record != nil, found.Gone)

	_ = n.Delete(ctx, lan.ID()) // deleted behind openctl's back
	found, err = e.Get(ctx, lan.ID())
	if err != nil {
		panic(err)
	}
	fmt.Println(found.Resource.Spec, found.Gone)
	// Output:
	// map[prefix:10.0.7] true false
	// map[prefix:10.0.7] true
}

// ExampleEngine_Records lists what the state records, contacting no
// provider.
func ExampleEngine_Records() {
	ctx := context.Background()
	e, _ := openctl.New(openctl.WithProviders(&network{}))
	lan := &manifest.Resource{APIVersion: "net.openctl.io/v1", Kind: "Subnet", Metadata: manifest.Metadata{Name: "lan"}, Spec: map[string]any{"prefix": "10.0.7"}}
	if _, err := e.Apply(ctx, lan); err != nil {
		panic(err)
	}
	recs, err := e.Records(ctx, state.Filter{Kind: "Subnet"})
	if err != nil {
		panic(err)
	}
	for _, r := range recs {
		fmt.Println(r.ID().Short(), r.Generation, r.Status)
	}
	// Output:
	// Subnet/lan 1 map[prefix:10.0.7]
}

// Example_errors checks an error's code with errors.Is and package
// errcode.
func Example_errors() {
	ctx := context.Background()
	e, _ := openctl.New(openctl.WithProviders(&network{}))
	_, err := e.Get(ctx, manifest.ID{APIVersion: "net.openctl.io/v1", Kind: "Subnet", Name: "nope"})
	fmt.Println(errors.Is(err, errcode.NotFound), errcode.Of(err))

	_, err = e.Apply(ctx, &manifest.Resource{APIVersion: "dns.example.com/v1", Kind: "Zone", Metadata: manifest.Metadata{Name: "z"}})
	fmt.Println(errors.Is(err, errcode.Invalid))
	// Output:
	// true NOT_FOUND
	// true
}
