package manifest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

type specT struct {
	Count int               `json:"count"`
	Name  string            `json:"name,omitempty"`
	Hosts []hostT           `json:"hosts,omitempty"`
	Extra map[string]hostT  `json:"extra,omitempty"`
	Skip  string            `json:"-"`
	Opt   *struct{ A bool } `json:"opt,omitempty"`
}

type hostT struct {
	Address string `json:"address"`
}

func TestDecodeSpec(t *testing.T) {
	var s specT
	require.NoError(t, manifest.DecodeSpec(map[string]any{"count": int64(3), "hosts": []any{map[string]any{"address": "10.0.0.1"}}}, &s))
	assert.Equal(t, specT{Count: 3, Hosts: []hostT{{Address: "10.0.0.1"}}}, s)

	for _, tt := range []struct {
		name string
		spec map[string]any
		want string
	}{
		{"unknown field", map[string]any{"cuont": 1}, "manifest: spec.cuont: unknown field (known: count, extra, hosts, name, opt)"},
		{"nested unknown", map[string]any{"hosts": []any{map[string]any{"adress": "x"}}}, "manifest: spec.hosts[0].adress: unknown field (known: address)"},
		{"in a map", map[string]any{"extra": map[string]any{"b": map[string]any{"z": 1}}}, "manifest: spec.extra.b.z: unknown field (known: address)"},
		{"json - is not a field", map[string]any{"Skip": "x"}, "manifest: spec.Skip: unknown field"},
		{"wrong type", map[string]any{"count": "three"}, "manifest: spec.count: must be an integer, not string"},
		{"wrong nested type", map[string]any{"hosts": []any{map[string]any{"address": int64(1)}}}, "manifest: spec.hosts.address: must be a string, not number"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s specT
			err := manifest.DecodeSpec(tt.spec, &s)
			require.ErrorIs(t, err, errcode.Invalid)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
