package openctl_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
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
