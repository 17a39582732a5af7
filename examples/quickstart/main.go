// Command quickstart embeds the openctl engine with a small in-memory
// provider. It decodes a handful of manifests whose $refs pass values from
// one resource to another (a database's address into two apps, the apps'
// addresses into a load balancer), applies them — independent resources in
// parallel — while printing progress events, then applies again to show
// that nothing changes, and finally deletes everything in reverse
// dependency order.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
)

const manifests = `
apiVersion: demo.openctl.io/v1
kind: Service
metadata:
  name: db
spec:
  image: postgres:16
---
apiVersion: demo.openctl.io/v1
kind: Service
metadata:
  name: api
spec:
  image: example/api:1.4
  env:
    DATABASE_HOST:
      $ref: {apiVersion: demo.openctl.io/v1, kind: Service, name: db, field: status.address}
---
apiVersion: demo.openctl.io/v1
kind: Service
metadata:
  name: worker
spec:
  image: example/worker:1.4
  env:
    DATABASE_HOST:
      $ref: {apiVersion: demo.openctl.io/v1, kind: Service, name: db, field: status.address}
---
apiVersion: demo.openctl.io/v1
kind: LoadBalancer
metadata:
  name: edge
spec:
  backends:
    - $ref: {apiVersion: demo.openctl.io/v1, kind: Service, name: api, field: status.address}
    - $ref: {apiVersion: demo.openctl.io/v1, kind: Service, name: worker, field: status.address}
`

// demo is an in-memory provider: each resource gets an address when
// applied, after a short delay that stands in for real work.
type demo struct {
	mu    sync.Mutex // guards items
	items map[manifest.ID]*manifest.Resource
}

func (d *demo) Name() string { return "demo" }

func (d *demo) Kinds() []registry.Kind {
	return []registry.Kind{{Kind: "Service", Plural: "services"}, {Kind: "LoadBalancer", Plural: "loadbalancers"}}
}

func (d *demo) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.items[id]
	if !ok {
		return nil, fmt.Errorf("demo: %s: %w", id.Short(), errcode.NotFound)
	}
	return r.DeepCopy(), nil
}

func (d *demo) Apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	registry.CallOf(ctx).ReportStep("provisioning")
	select {
	case <-time.After(300 * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := r.DeepCopy()
	out.Status = map[string]any{"address": r.Metadata.Name + ".demo.internal"}
	d.items[r.ID()] = out
	return out.DeepCopy(), nil
}

func (d *demo) Delete(ctx context.Context, id manifest.ID) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.items, id)
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer) error {
	resources, err := manifest.DecodeBytes([]byte(manifests), "quickstart.yaml")
	if err != nil {
		return err
	}
	start := time.Now()
	e, err := openctl.New(
		openctl.WithProviders(&demo{items: map[manifest.ID]*manifest.Resource{}}),
		openctl.WithConcurrency(4),
		openctl.WithObserver(func(ev openctl.Event) {
			line := fmt.Sprintf("%6.2fs  %-7s %-9s %s", time.Since(start).Seconds(), ev.Op, ev.Type, ev.ID.Short())
			switch {
			case ev.Step != "":
				line += "  " + ev.Step
			case ev.Outcome != "":
				line += "  " + string(ev.Outcome)
			}
			fmt.Fprintln(w, line)
		}),
	)
	if err != nil {
		return err
	}

	plan, err := e.Plan(ctx, resources...)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "plan:")
	for i, wave := range plan.Waves {
		var names []string
		for _, id := range wave {
			names = append(names, id.Short())
		}
		fmt.Fprintf(w, "  wave %d: %s\n", i+1, strings.Join(names, ", "))
	}

	fmt.Fprintln(w, "apply:")
	report, err := e.Apply(ctx, resources...)
	if err != nil {
		return err
	}
	lb, _ := report.Result(manifest.ID{APIVersion: "demo.openctl.io/v1", Kind: "LoadBalancer", Name: "edge"})
	fmt.Fprintf(w, "edge backends (resolved from $refs): %v\n", lb.Resource.Spec["backends"])
	fmt.Fprintf(w, "applied %d resources in %s (4 x 300ms of work, 3 waves)\n", len(report.Results), report.Duration.Round(10*time.Millisecond))

	report, err = e.Apply(ctx, resources...)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "second apply: %d unchanged, no provider writes\n", report.Count(openctl.OutcomeUnchanged))

	fmt.Fprintln(w, "delete:")
	var ids []manifest.ID
	for _, r := range resources {
		ids = append(ids, r.ID())
	}
	_, err = e.Delete(ctx, ids...)
	return err
}
