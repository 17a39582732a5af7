package refs_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

const vmAPI = "proxmox.openctl.io/v1"

func vmID(name string) manifest.ID {
	return manifest.ID{APIVersion: vmAPI, Kind: "VirtualMachine", Name: name}
}

// fakeGetter serves copies of a fixed set of resources and counts Gets.
type fakeGetter struct {
	mu    sync.Mutex
	res   map[manifest.ID]*manifest.Resource
	calls map[manifest.ID]int
	err   error // returned by every Get when set
}

func newFakeGetter(rs ...*manifest.Resource) *fakeGetter {
	g := &fakeGetter{res: map[manifest.ID]*manifest.Resource{}, calls: map[manifest.ID]int{}}
	for _, r := range rs {
		g.res[r.ID()] = r
	}
	return g
}

func (g *fakeGetter) Get(_ context.Context, id manifest.ID) (*manifest.Resource, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls[id]++
	if g.err != nil {
		return nil, g.err
	}
	r, ok := g.res[id]
	if !ok {
		return nil, fmt.Errorf("fake: %s: %w", id, errcode.NotFound)
	}
	return r.DeepCopy(), nil
}

func (g *fakeGetter) total() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, c := range g.calls {
		n += c
	}
	return n
}

// dbVM is a live target with outputs in its status.
func dbVM() *manifest.Resource {
	return &manifest.Resource{
		APIVersion: vmAPI,
		Kind:       "VirtualMachine",
		Metadata:   manifest.Metadata{Name: "db", Labels: map[string]string{"tier": "data"}},
		Spec: map[string]any{
			"cpu":    map[string]any{"cores": int64(4)},
			"disks":  []any{map[string]any{"size": "20G"}},
			"memory": int64(8192),
		},
		Status: map[string]any{
			"ip":  "10.0.0.5",
			"ips": []any{"10.0.0.5", "10.0.0.6"},
		},
	}
}

// cacheVM is a second target.
func cacheVM() *manifest.Resource {
	return &manifest.Resource{
		APIVersion: vmAPI,
		Kind:       "VirtualMachine",
		Metadata:   manifest.Metadata{Name: "cache"},
		Status:     map[string]any{"ip": "10.0.0.9"},
	}
}

// web returns the referring resource with the given spec.
func web(spec map[string]any) *manifest.Resource {
	return &manifest.Resource{
		APIVersion: vmAPI,
		Kind:       "VirtualMachine",
		Metadata:   manifest.Metadata{Name: "web-01", Annotations: map[string]string{"note": "x"}},
		Spec:       spec,
		Status:     map[string]any{"phase": "Pending"},
	}
}

// ref is a raw marker for tests that build malformed ones next to good ones.
func ref(fields map[string]any) map[string]any { return map[string]any{"$ref": fields} }

func vmRef(name, field string) map[string]any {
	m := map[string]any{"apiVersion": vmAPI, "kind": "VirtualMachine", "name": name}
	if field != "" {
		m["field"] = field
	}
	return ref(m)
}
