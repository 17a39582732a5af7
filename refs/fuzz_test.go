package refs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
)

func FuzzResolve(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"a": 1, "b": [true, null, "x", 2.5]}`,
		`{"ip": {"$ref": {"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "name": "db", "field": "status.ip"}}}`,
		`{"vm": {"$ref": {"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "name": "db"}}}`,
		`{"n": [[{"$ref": {"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "name": "cache", "field": "status.ip"}}], {"x": {"$ref": {"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "name": "db", "field": "status.ips[1]"}}}]}`,
		`{"x": {"$ref": {"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "name": "db", "field": "spec.cpu.cores"}}, "y": {"$ref": {"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "name": "db", "field": "status.ip.v4"}}}`,
		`{"x": {"$ref": {"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "name": "ghost"}}}`,
		`{"x": {"$ref": {"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "name": "web-01"}}}`,
		`{"x": {"$ref": "db"}, "y": {"$ref": {"kind": 1}}, "z": {"$ref": {}, "other": 1}}`,
		`{"x": {"$ref": {"apiVersion": "v1", "kind": "vm", "name": "DB", "field": "a..b[x]"}}}`,
		`{"x": {"$ref": {"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "name": "db", "field": ""}}}`,
		`{"$ref": {"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "name": "db", "field": "spec"}}`,
		`{"l": [{"$ref": {"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "name": "db", "field": "status.ips[0]"}}, {"$ref": {"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "name": "db", "field": "status.ips[9]"}}]}`,
	} {
		f.Add([]byte(seed))
	}
	g := newFakeGetter(dbVM(), cacheVM())
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return
		}
		n, err := manifest.Normalize(v)
		if err != nil {
			return
		}
		spec, ok := n.(map[string]any)
		if !ok {
			return
		}
		r := web(spec)
		before := r.DeepCopy()

		found, cerr := refs.Collect(r)
		for _, e := range flatten(cerr) {
			var re *refs.Error
			require.True(t, errors.As(e, &re), "Collect error %T is a *refs.Error: %v", e, e)
			require.Equal(t, re, e, "each joined error is itself a *refs.Error")
		}
		if !refs.Has(r) {
			require.NoError(t, cerr)
			require.Empty(t, found)
		}
		deps, derr := refs.Dependencies(r)
		if cerr == nil {
			require.NoError(t, derr)
			require.LessOrEqual(t, len(deps), len(found))
		}

		got, rerr := refs.Resolve(t.Context(), g, r)
		assert.Equal(t, before, r, "Resolve leaves its input untouched")
		if rerr != nil {
			var re *refs.Error
			require.True(t, errors.As(rerr, &re), "Resolve error %T is a *refs.Error: %v", rerr, rerr)
			return
		}
		require.NoError(t, cerr, "Resolve succeeded, so every marker is well formed")
		require.False(t, refs.Has(got), "no markers left")
		if len(found) == 0 {
			require.Equal(t, before, got)
		}
	})
}

// flatten lists the errors errors.Join joined, or err alone.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
