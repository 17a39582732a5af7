package refs_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
)

func TestCollect(t *testing.T) {
	tests := []struct {
		name string
		spec map[string]any
		want []refs.Ref
	}{
		{name: "nil spec", spec: nil, want: nil},
		{name: "no markers", spec: map[string]any{"a": []any{int64(1), map[string]any{"b": "c"}}}, want: nil},
		{
			name: "top-level field",
			spec: map[string]any{"ip": vmRef("db", "status.ip")},
			want: []refs.Ref{{Path: "spec.ip", Target: vmID("db"), Field: "status.ip"}},
		},
		{
			name: "whole resource",
			spec: map[string]any{"db": vmRef("db", "")},
			want: []refs.Ref{{Path: "spec.db", Target: vmID("db")}},
		},
		{
			name: "nested maps and lists",
			spec: map[string]any{
				"net": map[string]any{"ip": vmRef("db", "status.ip")},
				"nodes": []any{
					map[string]any{"ip": vmRef("cache", "status.ip")},
					[]any{"x", vmRef("db", "status.ips[1]")},
					vmRef("db", ""),
				},
			},
			want: []refs.Ref{
				{Path: "spec.net.ip", Target: vmID("db"), Field: "status.ip"},
				{Path: "spec.nodes[0].ip", Target: vmID("cache"), Field: "status.ip"},
				{Path: "spec.nodes[1][1]", Target: vmID("db"), Field: "status.ips[1]"},
				{Path: "spec.nodes[2]", Target: vmID("db")},
			},
		},
		{
			name: "sorted keys",
			spec: map[string]any{
				"zeta":  vmRef("db", "status.ip"),
				"alpha": vmRef("cache", "status.ip"),
				"mid":   map[string]any{"b": vmRef("db", "spec.memory"), "a": vmRef("db", "spec.cpu.cores")},
			},
			want: []refs.Ref{
				{Path: "spec.alpha", Target: vmID("cache"), Field: "status.ip"},
				{Path: "spec.mid.a", Target: vmID("db"), Field: "spec.cpu.cores"},
				{Path: "spec.mid.b", Target: vmID("db"), Field: "spec.memory"},
				{Path: "spec.zeta", Target: vmID("db"), Field: "status.ip"},
			},
		},
		{
			name: "marker value not searched",
			spec: map[string]any{"x": ref(map[string]any{"apiVersion": vmAPI, "kind": "VirtualMachine", "name": "db"})},
			want: []refs.Ref{{Path: "spec.x", Target: vmID("db")}},
		},
		{
			name: "other api group",
			spec: map[string]any{"token": ref(map[string]any{"apiVersion": "k3s.openctl.io/v1", "kind": "K3sNode", "name": "cp-0", "field": "status.nodeToken"})},
			want: []refs.Ref{{Path: "spec.token", Target: manifest.ID{APIVersion: "k3s.openctl.io/v1", Kind: "K3sNode", Name: "cp-0"}, Field: "status.nodeToken"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := refs.Collect(web(tt.spec))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestCollectDeterministic(t *testing.T) {
	spec := map[string]any{}
	for _, k := range []string{"k", "c", "x", "a", "q", "m", "b", "z", "f", "e", "d", "y"} {
		spec[k] = []any{vmRef("db", "status.ip"), map[string]any{"n": vmRef("cache", ""), "m": vmRef("db", "")}}
	}
	first, err := refs.Collect(web(spec))
	require.NoError(t, err)
	require.Len(t, first, 36)
	assert.Equal(t, "spec.a[0]", first[0].Path)
	assert.Equal(t, "spec.a[1].m", first[1].Path)
	assert.Equal(t, "spec.a[1].n", first[2].Path)
	for range 50 {
		got, err := refs.Collect(web(spec))
		require.NoError(t, err)
		require.Equal(t, first, got)
	}
}

func TestDependencies(t *testing.T) {
	k3s := manifest.ID{APIVersion: "k3s.openctl.io/v1", Kind: "K3sNode", Name: "cp-0"}
	spec := map[string]any{
		"a": vmRef("db", "status.ip"),
		"b": []any{vmRef("cache", "status.ip"), vmRef("db", "")},
		"c": refs.Marker(k3s, "status.nodeToken"),
		"d": vmRef("cache", "metadata.name"),
	}
	got, err := refs.Dependencies(web(spec))
	require.NoError(t, err)
	assert.Equal(t, []manifest.ID{k3s, vmID("cache"), vmID("db")}, got)

	got, err = refs.Dependencies(web(nil))
	require.NoError(t, err)
	assert.Empty(t, got)

	_, err = refs.Dependencies(web(map[string]any{"x": ref(map[string]any{"kind": "VirtualMachine"})}))
	require.ErrorIs(t, err, errcode.Invalid)
}

func TestCollectMalformed(t *testing.T) {
	tests := []struct {
		name    string
		marker  any
		wantMsg string // the full error
	}{
		{
			name:    "value not a map",
			marker:  map[string]any{"$ref": "db"},
			wantMsg: "refs: VirtualMachine/web-01 spec.net.ip: $ref value is a string, want a map of apiVersion, kind, name and optional field",
		},
		{
			name:    "value a list",
			marker:  map[string]any{"$ref": []any{"db"}},
			wantMsg: "refs: VirtualMachine/web-01 spec.net.ip: $ref value is a list, want a map of apiVersion, kind, name and optional field",
		},
		{
			name:    "missing name",
			marker:  ref(map[string]any{"apiVersion": vmAPI, "kind": "VirtualMachine", "field": "status.ip"}),
			wantMsg: "refs: VirtualMachine/web-01 spec.net.ip: $ref missing name",
		},
		{
			name:    "empty kind",
			marker:  ref(map[string]any{"apiVersion": vmAPI, "kind": "", "name": "db"}),
			wantMsg: "refs: VirtualMachine/web-01 spec.net.ip: $ref missing kind",
		},
		{
			name:    "empty map",
			marker:  ref(map[string]any{}),
			wantMsg: "refs: VirtualMachine/web-01 spec.net.ip: $ref missing apiVersion, kind, name",
		},
		{
			name:    "non-string name",
			marker:  ref(map[string]any{"apiVersion": vmAPI, "kind": "VirtualMachine", "name": int64(7)}),
			wantMsg: "refs: VirtualMachine/web-01 spec.net.ip: $ref name is an integer, want a string",
		},
		{
			name:    "non-string field",
			marker:  ref(map[string]any{"apiVersion": vmAPI, "kind": "VirtualMachine", "name": "db", "field": map[string]any{}}),
			wantMsg: "refs: VirtualMachine/web-01 spec.net.ip: $ref field is a map, want a string",
		},
		{
			name:    "unknown keys",
			marker:  ref(map[string]any{"apiVersion": vmAPI, "kind": "VirtualMachine", "name": "db", "path": "status.ip", "Name": "x"}),
			wantMsg: `refs: VirtualMachine/web-01 spec.net.ip: $ref has unknown keys "Name", "path" (allowed: apiVersion, kind, name, field)`,
		},
		{
			name:    "unknown key and non-string value",
			marker:  ref(map[string]any{"apiVersion": vmAPI, "kind": false, "name": "db", "namespace": "x"}),
			wantMsg: `refs: VirtualMachine/web-01 spec.net.ip: $ref has unknown key "namespace" (allowed: apiVersion, kind, name, field)`,
		},
		{
			name:    "other keys beside $ref",
			marker:  map[string]any{"$ref": vmRef("db", "status.ip")["$ref"], "default": "10.0.0.1"},
			wantMsg: `refs: VirtualMachine/web-01 spec.net.ip: $ref marker has other keys "default"; a marker is a map holding only $ref`,
		},
		{
			name:    "empty field",
			marker:  ref(map[string]any{"apiVersion": vmAPI, "kind": "VirtualMachine", "name": "db", "field": ""}),
			wantMsg: "refs: VirtualMachine/web-01 spec.net.ip: $ref field is empty; leave it out to refer to the whole resource",
		},
		{
			name:    "bad apiVersion",
			marker:  ref(map[string]any{"apiVersion": "v1", "kind": "VirtualMachine", "name": "db"}),
			wantMsg: `refs: VirtualMachine/web-01 spec.net.ip: $ref target v1/VirtualMachine/db is not a valid resource ID: manifest: apiVersion "v1" is not of the form <group>/<version> (for example proxmox.openctl.io/v1) (INVALID_REQUEST)`,
		},
		{
			name:    "bad name",
			marker:  vmRef("DB_1", ""),
			wantMsg: `refs: VirtualMachine/web-01 spec.net.ip: $ref target proxmox.openctl.io/v1/VirtualMachine/DB_1 is not a valid resource ID: manifest: name "DB_1" is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', each part starting and ending with a letter or digit) (INVALID_REQUEST)`,
		},
		{
			name:    "bad field path",
			marker:  vmRef("db", "status..ip"),
			wantMsg: `refs: VirtualMachine/web-01 spec.net.ip: $ref field "status..ip" is not a valid field path: manifest: field path "status..ip": empty key (INVALID_REQUEST)`,
		},
		{
			name:    "bad field index",
			marker:  vmRef("db", "status.ips[x]"),
			wantMsg: `refs: VirtualMachine/web-01 spec.net.ip: $ref field "status.ips[x]" is not a valid field path: manifest: field path "status.ips[x]": index "x" is not a non-negative integer (INVALID_REQUEST)`,
		},
		{
			name:    "self reference",
			marker:  vmRef("web-01", "status.phase"),
			wantMsg: "refs: VirtualMachine/web-01 spec.net.ip: $ref to VirtualMachine/web-01 field status.phase: refers to itself",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := map[string]any{"net": map[string]any{"ip": tt.marker}, "ok": vmRef("db", "status.ip")}
			got, err := refs.Collect(web(spec))
			require.Error(t, err)
			assert.ErrorIs(t, err, errcode.Invalid)
			assert.Equal(t, errcode.Invalid, errcode.Of(err))
			assert.EqualError(t, err, tt.wantMsg)
			var e *refs.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, "spec.net.ip", e.Path)
			assert.Equal(t, vmID("web-01"), e.Resource)
			assert.Equal(t, []refs.Ref{{Path: "spec.ok", Target: vmID("db"), Field: "status.ip"}}, got, "well-formed refs are still returned")

			// Resolve rejects the same marker, without fetching anything
			// for it.
			g := newFakeGetter(dbVM())
			_, rerr := refs.Resolve(t.Context(), g, web(spec))
			assert.EqualError(t, rerr, tt.wantMsg)
			assert.ErrorIs(t, rerr, errcode.Invalid)
			assert.Zero(t, g.total(), "the malformed marker sorts first")
		})
	}
}

func TestCollectReportsAllMalformed(t *testing.T) {
	spec := map[string]any{
		"a":    ref(map[string]any{"apiVersion": vmAPI, "kind": "VirtualMachine"}),
		"b":    vmRef("db", "status.ip"),
		"c":    []any{map[string]any{"$ref": 1.5}, vmRef("web-01", "")},
		"d":    vmRef("db", "status.ips[-1]"),
		"e":    vmRef("db", "status.ips[-1]"), // a cached check still reports this path
		"fine": vmRef("cache", ""),
	}
	got, err := refs.Collect(web(spec))
	require.Error(t, err)
	assert.ErrorIs(t, err, errcode.Invalid)

	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok, "several errors are joined")
	var paths []string
	for _, e := range joined.Unwrap() {
		var re *refs.Error
		require.True(t, errors.As(e, &re), "%T is a *refs.Error", e)
		assert.Equal(t, errcode.Invalid, re.Code)
		paths = append(paths, re.Path)
	}
	assert.Equal(t, []string{"spec.a", "spec.c[0]", "spec.c[1]", "spec.d", "spec.e"}, paths)
	assert.Equal(t, []refs.Ref{
		{Path: "spec.b", Target: vmID("db"), Field: "status.ip"},
		{Path: "spec.fine", Target: vmID("cache")},
	}, got)
}

func TestSpecRootMarker(t *testing.T) {
	r := web(vmRef("db", "spec"))
	assert.True(t, refs.Has(r))
	_, err := refs.Collect(r)
	require.ErrorIs(t, err, errcode.Invalid)
	assert.EqualError(t, err, "refs: VirtualMachine/web-01 spec: a $ref marker cannot stand for the whole spec")
	_, err = refs.Resolve(t.Context(), newFakeGetter(dbVM()), r)
	require.ErrorIs(t, err, errcode.Invalid)
}

func TestHasAndIsMarker(t *testing.T) {
	tests := []struct {
		name string
		spec map[string]any
		want bool
	}{
		{name: "nil", spec: nil, want: false},
		{name: "plain", spec: map[string]any{"a": []any{map[string]any{"b": "$ref"}}}, want: false},
		{name: "nested in list", spec: map[string]any{"a": []any{"x", []any{vmRef("db", "")}}}, want: true},
		{name: "nested in map", spec: map[string]any{"a": map[string]any{"b": vmRef("db", "status.ip")}}, want: true},
		{name: "malformed counts", spec: map[string]any{"a": map[string]any{"$ref": "x", "b": 1}}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, refs.Has(web(tt.spec)))
		})
	}
	assert.False(t, refs.Has(nil))
	found, err := refs.Collect(nil)
	assert.NoError(t, err)
	assert.Empty(t, found)

	assert.True(t, refs.IsMarker(vmRef("db", "")))
	assert.True(t, refs.IsMarker(map[string]any{"$ref": nil}))
	assert.False(t, refs.IsMarker(map[string]any{"ref": vmRef("db", "")}))
	assert.False(t, refs.IsMarker("$ref"))
	assert.False(t, refs.IsMarker(nil))
}

func TestMarker(t *testing.T) {
	m := refs.Marker(vmID("db"), "status.ip")
	assert.Equal(t, vmRef("db", "status.ip"), m)
	assert.True(t, refs.IsMarker(m))
	n, err := manifest.Normalize(m)
	require.NoError(t, err)
	assert.Equal(t, m, n, "already normalised")

	got, err := refs.Collect(web(map[string]any{"x": m, "y": refs.Marker(vmID("cache"), "")}))
	require.NoError(t, err)
	assert.Equal(t, []refs.Ref{
		{Path: "spec.x", Target: vmID("db"), Field: "status.ip"},
		{Path: "spec.y", Target: vmID("cache")},
	}, got)
}

func TestRefString(t *testing.T) {
	assert.Equal(t, "spec.ip -> proxmox.openctl.io/v1/VirtualMachine/db field status.ip",
		refs.Ref{Path: "spec.ip", Target: vmID("db"), Field: "status.ip"}.String())
	assert.Equal(t, "spec.vm -> proxmox.openctl.io/v1/VirtualMachine/db",
		refs.Ref{Path: "spec.vm", Target: vmID("db")}.String())
}

func TestErrorString(t *testing.T) {
	cause := errors.New("boom")
	tests := []struct {
		name string
		err  *refs.Error
		want string
	}{
		{
			name: "field not found",
			err:  &refs.Error{Resource: vmID("web-01"), Path: "spec.net.ip", Target: vmID("db"), Field: "status.ip", Code: errcode.NotFound, Msg: "field not found"},
			want: "refs: VirtualMachine/web-01 spec.net.ip: $ref to VirtualMachine/db field status.ip: field not found",
		},
		{
			name: "cause only",
			err:  &refs.Error{Resource: vmID("web-01"), Path: "spec.x", Target: vmID("db"), Code: errcode.Internal, Err: cause},
			want: "refs: VirtualMachine/web-01 spec.x: $ref to VirtualMachine/db: boom",
		},
		{
			name: "message and cause",
			err:  &refs.Error{Resource: vmID("web-01"), Path: "spec.x", Code: errcode.Invalid, Msg: "bad", Err: cause},
			want: "refs: VirtualMachine/web-01 spec.x: bad: boom",
		},
		{
			name: "no resource",
			err:  &refs.Error{Code: errcode.Invalid, Msg: "bad"},
			want: "refs: bad",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.err.Error())
		})
	}

	e := &refs.Error{Code: errcode.NotFound, Msg: "field not found"}
	assert.ErrorIs(t, e, errcode.NotFound)
	assert.NotErrorIs(t, e, errcode.Invalid)
	assert.Equal(t, errcode.NotFound, errcode.Of(e))

	e = &refs.Error{Code: errcode.Transient, Err: cause}
	assert.ErrorIs(t, e, cause)
	assert.ErrorIs(t, e, errcode.Transient)
}
