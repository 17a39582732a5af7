package plugin_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/plugin"
	"github.com/openctl/openctl/registry"
)

const actionCaps = `{"providerName":"fake","protocolVersion":"1.0","resources":[{"kind":"Thing","actions":["get"]}],
"subcommands":[{"name":"wait","short":"Wait","action":"wait-for","flags":[
{"name":"for","type":"duration","default":"30s"},{"name":"n","type":"int","default":"2"},{"name":"loud","type":"bool"},{"name":"why","type":"string","required":true}]}]}`

func TestActions(t *testing.T) {
	seen := filepath.Join(t.TempDir(), "request.json")
	path := script(t, t.TempDir(), "fake", echoCaps(actionCaps), `cat >`+seen+`; echo '{"status":"success","message":"waited"}'`)
	p, err := plugin.Load(t.Context(), path, plugin.Options{})
	require.NoError(t, err)
	prov := plugin.New(p, nil, plugin.Options{})

	specs := prov.Actions()
	require.Len(t, specs, 1)
	s := specs[0]
	assert.Equal(t, "wait", s.Name)
	assert.Equal(t, "Thing", s.Kind, "the plugin's first kind by default")
	types := map[string]registry.ArgType{}
	for _, a := range s.Args {
		types[a.Name] = a.Type
	}
	assert.Equal(t, map[string]registry.ArgType{"for": registry.ArgDuration, "n": registry.ArgInt, "loud": registry.ArgBool, "why": registry.ArgString}, types)

	args, err := s.CheckArgs(map[string]any{"why": "because", "loud": "true"})
	require.NoError(t, err, "defaults and strings are converted to the declared types")
	res, err := prov.Do(t.Context(), registry.ActionRequest{Action: "wait", ID: thing, Args: args})
	require.NoError(t, err)
	assert.Equal(t, "waited", res.Message)

	data, err := os.ReadFile(seen)
	require.NoError(t, err)
	var req map[string]any
	require.NoError(t, json.Unmarshal(data, &req))
	assert.Equal(t, "wait-for", req["action"], "the subcommand's action goes on the wire")
	assert.Equal(t, "a", req["resourceName"])
	assert.Equal(t, map[string]any{"for": "30s", "n": float64(2), "loud": true, "why": "because"}, req["args"],
		"numbers and booleans as JSON's, a duration as Go writes it")

	_, err = prov.Do(t.Context(), registry.ActionRequest{Action: "nope", ID: thing})
	assert.ErrorIs(t, err, errcode.Invalid)
}

func TestCapabilitiesFlagTypes(t *testing.T) {
	_, err := plugin.DecodeCapabilities([]byte(strings.Replace(actionCaps, `"type":"duration"`, `"type":"float"`, 1)))
	require.ErrorIs(t, err, plugin.ErrProtocol)
	assert.Contains(t, err.Error(), `flag "for" of type "float"`)
}
