package refs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
)

func TestResolve(t *testing.T) {
	dbObj := dbVM().Object()
	tests := []struct {
		name string
		spec map[string]any
		want map[string]any
	}{
		{name: "nil spec", spec: nil, want: nil},
		{name: "no markers", spec: map[string]any{"a": []any{int64(1)}}, want: map[string]any{"a": []any{int64(1)}}},
		{
			name: "status field",
			spec: map[string]any{"net": map[string]any{"ip": vmRef("db", "status.ip"), "mask": int64(24)}},
			want: map[string]any{"net": map[string]any{"ip": "10.0.0.5", "mask": int64(24)}},
		},
		{
			name: "spec field and list index",
			spec: map[string]any{
				"cores":  vmRef("db", "spec.cpu.cores"),
				"second": vmRef("db", "status.ips[1]"),
				"disk":   vmRef("db", "spec.disks[0]"),
				"name":   vmRef("db", "metadata.name"),
				"tier":   vmRef("db", "metadata.labels.tier"),
			},
			want: map[string]any{
				"cores":  int64(4),
				"second": "10.0.0.6",
				"disk":   map[string]any{"size": "20G"},
				"name":   "db",
				"tier":   "data",
			},
		},
		{
			name: "whole resource",
			spec: map[string]any{"vm": vmRef("db", "")},
			want: map[string]any{"vm": dbObj},
		},
		{
			name: "markers in lists",
			spec: map[string]any{"upstreams": []any{
				vmRef("db", "status.ip"),
				map[string]any{"host": vmRef("cache", "status.ip"), "port": int64(6379)},
				[]any{vmRef("cache", "metadata.name")},
			}},
			want: map[string]any{"upstreams": []any{
				"10.0.0.5",
				map[string]any{"host": "10.0.0.9", "port": int64(6379)},
				[]any{"cache"},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := web(tt.spec)
			before := r.DeepCopy()
			got, err := refs.Resolve(t.Context(), newFakeGetter(dbVM(), cacheVM()), r)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Spec)
			assert.False(t, refs.Has(got))
			assert.Equal(t, before, r, "the original is untouched")

			// Everything but the spec is an equal copy.
			want := before.DeepCopy()
			want.Spec = tt.want
			assert.Equal(t, want, got)
			assert.NotSame(t, r, got)
		})
	}
}

func TestResolveReturnsDeepCopy(t *testing.T) {
	r := web(map[string]any{"list": []any{map[string]any{"k": "v"}}})
	got, err := refs.Resolve(t.Context(), newFakeGetter(), r)
	require.NoError(t, err)
	got.Spec["list"].([]any)[0].(map[string]any)["k"] = "changed"
	got.Status["phase"] = "changed"
	got.Metadata.Annotations["note"] = "changed"
	assert.Equal(t, web(map[string]any{"list": []any{map[string]any{"k": "v"}}}), r)
}

func TestResolveValuesNotShared(t *testing.T) {
	spec := map[string]any{
		"a":     vmRef("db", ""),
		"b":     vmRef("db", ""),
		"disk1": vmRef("db", "spec.disks"),
		"disk2": vmRef("db", "spec.disks"),
	}
	got, err := refs.Resolve(t.Context(), newFakeGetter(dbVM()), web(spec))
	require.NoError(t, err)

	a := got.Spec["a"].(map[string]any)
	a["status"].(map[string]any)["ip"] = "changed"
	a["metadata"].(map[string]any)["name"] = "changed"
	b := got.Spec["b"].(map[string]any)
	assert.Equal(t, "10.0.0.5", b["status"].(map[string]any)["ip"])
	assert.Equal(t, "db", b["metadata"].(map[string]any)["name"])

	got.Spec["disk1"].([]any)[0].(map[string]any)["size"] = "1T"
	assert.Equal(t, "20G", got.Spec["disk2"].([]any)[0].(map[string]any)["size"])
}

func TestResolveErrors(t *testing.T) {
	transient := fmt.Errorf("proxmox: api timeout: %w", errcode.Transient)
	tests := []struct {
		name     string
		spec     map[string]any
		getErr   error
		wantCode errcode.Code
		wantMsg  string
		wantErr  error // also matched by errors.Is, when set
	}{
		{
			name:     "target not found",
			spec:     map[string]any{"net": map[string]any{"ip": vmRef("ghost", "status.ip")}},
			wantCode: errcode.NotFound,
			wantMsg:  "refs: VirtualMachine/web-01 spec.net.ip: $ref to VirtualMachine/ghost field status.ip: fake: proxmox.openctl.io/v1/VirtualMachine/ghost: NOT_FOUND",
		},
		{
			name:     "field not found",
			spec:     map[string]any{"net": map[string]any{"ip": vmRef("cache", "status.ips[0]")}},
			wantCode: errcode.NotFound,
			wantMsg:  "refs: VirtualMachine/web-01 spec.net.ip: $ref to VirtualMachine/cache field status.ips[0]: field not found",
		},
		{
			name:     "index past the end",
			spec:     map[string]any{"x": []any{vmRef("db", "status.ips[2]")}},
			wantCode: errcode.NotFound,
			wantMsg:  "refs: VirtualMachine/web-01 spec.x[0]: $ref to VirtualMachine/db field status.ips[2]: field not found",
		},
		{
			name:     "field of the wrong type",
			spec:     map[string]any{"x": vmRef("db", "status.ip.v4")},
			wantCode: errcode.Invalid,
			wantMsg:  "refs: VirtualMachine/web-01 spec.x: $ref to VirtualMachine/db field status.ip.v4: manifest: field status.ip.v4: status.ip is a string, not a map (INVALID_REQUEST)",
		},
		{
			name:     "getter error keeps its code",
			spec:     map[string]any{"x": vmRef("db", "status.ip")},
			getErr:   transient,
			wantCode: errcode.Transient,
			wantMsg:  "refs: VirtualMachine/web-01 spec.x: $ref to VirtualMachine/db field status.ip: proxmox: api timeout: TRANSIENT",
			wantErr:  transient,
		},
		{
			name:     "getter error without a code",
			spec:     map[string]any{"x": vmRef("db", "")},
			getErr:   errors.New("socket closed"),
			wantCode: errcode.Internal,
			wantMsg:  "refs: VirtualMachine/web-01 spec.x: $ref to VirtualMachine/db: socket closed",
		},
		{
			name:     "self reference",
			spec:     map[string]any{"x": vmRef("web-01", "")},
			wantCode: errcode.Invalid,
			wantMsg:  "refs: VirtualMachine/web-01 spec.x: $ref to VirtualMachine/web-01: refers to itself",
		},
		{
			name:     "first failure in order",
			spec:     map[string]any{"b": vmRef("db", "status.nope"), "a": []any{vmRef("cache", "status.ip"), vmRef("gone", "")}},
			wantCode: errcode.NotFound,
			wantMsg:  "refs: VirtualMachine/web-01 spec.a[1]: $ref to VirtualMachine/gone: fake: proxmox.openctl.io/v1/VirtualMachine/gone: NOT_FOUND",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newFakeGetter(dbVM(), cacheVM())
			g.err = tt.getErr
			got, err := refs.Resolve(t.Context(), g, web(tt.spec))
			require.Error(t, err)
			assert.Nil(t, got)
			assert.EqualError(t, err, tt.wantMsg)
			assert.ErrorIs(t, err, tt.wantCode)
			assert.Equal(t, tt.wantCode, errcode.Of(err))
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
			}
			var e *refs.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, vmID("web-01"), e.Resource)
		})
	}
}

func TestResolveGetterReturnsNil(t *testing.T) {
	g := refs.GetterFunc(func(context.Context, manifest.ID) (*manifest.Resource, error) { return nil, nil })
	_, err := refs.Resolve(t.Context(), g, web(map[string]any{"x": vmRef("db", "")}))
	require.ErrorIs(t, err, errcode.Internal)

	_, err = refs.Resolve(t.Context(), nil, web(map[string]any{"x": vmRef("db", "")}))
	require.ErrorIs(t, err, errcode.Internal)

	_, err = refs.Resolve(t.Context(), g, nil)
	require.ErrorIs(t, err, errcode.Invalid)
}

func TestResolveOneGetPerTarget(t *testing.T) {
	targets := []string{"db", "cache", "db", "cache", "cache"} // repeated on purpose
	items := make([]any, 0, 1000)
	for i := range 1000 {
		name := targets[i%len(targets)]
		field := []string{"status.ip", "", "metadata.name"}[i%3]
		items = append(items, map[string]any{"i": int64(i), "v": vmRef(name, field)})
	}
	g := newFakeGetter(dbVM(), cacheVM())
	got, err := refs.Resolve(t.Context(), g, web(map[string]any{"items": items}))
	require.NoError(t, err)
	assert.Equal(t, map[manifest.ID]int{vmID("db"): 1, vmID("cache"): 1}, g.calls)
	assert.Len(t, got.Spec["items"], 1000)
	assert.Equal(t, "10.0.0.5", got.Spec["items"].([]any)[0].(map[string]any)["v"])
	assert.Equal(t, "db", got.Spec["items"].([]any)[2].(map[string]any)["v"])

	// A second call fetches again: nothing is cached across calls.
	_, err = refs.Resolve(t.Context(), g, web(map[string]any{"items": items}))
	require.NoError(t, err)
	assert.Equal(t, 4, g.total())
}

func TestResolveContext(t *testing.T) {
	spec := map[string]any{"a": vmRef("cache", "status.ip"), "b": vmRef("db", "status.ip")}

	t.Run("cancelled before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		g := newFakeGetter(dbVM(), cacheVM())
		_, err := refs.Resolve(ctx, g, web(spec))
		require.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, g.total())
		var e *refs.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "spec.a", e.Path)
	})

	t.Run("cancelled between gets", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		inner := newFakeGetter(dbVM(), cacheVM())
		g := refs.GetterFunc(func(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
			defer cancel()
			return inner.Get(ctx, id)
		})
		_, err := refs.Resolve(ctx, g, web(spec))
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 1, inner.total())
		var e *refs.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "spec.b", e.Path)
		assert.Equal(t, vmID("db"), e.Target)
	})

	t.Run("deadline is transient", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 0)
		defer cancel()
		<-ctx.Done()
		_, err := refs.Resolve(ctx, newFakeGetter(dbVM(), cacheVM()), web(spec))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.True(t, errcode.Retryable(err))
	})
}

func TestResolveValuesNotRescanned(t *testing.T) {
	tricky := &manifest.Resource{
		APIVersion: vmAPI,
		Kind:       "VirtualMachine",
		Metadata:   manifest.Metadata{Name: "tricky"},
		Status: map[string]any{
			// Data that looks like a marker, including a malformed one and
			// one to a target that does not exist.
			"template": vmRef("ghost", "status.ip"),
			"broken":   map[string]any{"$ref": "nope"},
		},
	}
	g := newFakeGetter(tricky)
	got, err := refs.Resolve(t.Context(), g, web(map[string]any{
		"t": vmRef("tricky", "status.template"),
		"w": vmRef("tricky", ""),
	}))
	require.NoError(t, err)
	assert.Equal(t, vmRef("ghost", "status.ip"), got.Spec["t"])
	assert.Equal(t, map[string]any{"$ref": "nope"}, got.Spec["w"].(map[string]any)["status"].(map[string]any)["broken"])
	assert.Equal(t, map[manifest.ID]int{vmID("tricky"): 1}, g.calls)
	assert.True(t, refs.Has(got), "the data now reads as markers")
}

func TestGetterFunc(t *testing.T) {
	var seen manifest.ID
	g := refs.GetterFunc(func(_ context.Context, id manifest.ID) (*manifest.Resource, error) {
		seen = id
		return dbVM(), nil
	})
	r, err := g.Get(t.Context(), vmID("db"))
	require.NoError(t, err)
	assert.Equal(t, vmID("db"), seen)
	assert.Equal(t, "db", r.Metadata.Name)
}
