package plugin_test

import (
	"testing"

	"github.com/openctl/openctl/plugin"
)

// FuzzDecodeResponse checks that the response decoder never panics and
// that what it accepts has a valid status.
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range []string{
		`{"status":"success","resource":{"apiVersion":"a.openctl.io/v1","kind":"K","metadata":{"name":"n"},"status":{"x":1}},"message":"ok"}`,
		`{"status":"success","resources":[{"apiVersion":"a/v1","kind":"K","metadata":{"name":"n"}}]}`,
		`{"status":"error","error":{"code":"NOT_FOUND","message":"m","details":"d"}}`,
		`{"status":"success","dispatchRequests":[{"id":"1","provider":"p","action":"create","resourceType":"K","manifest":{"apiVersion":"p.openctl.io/v1","kind":"K","metadata":{"name":"n"}},"waitFor":{"field":"status.state","value":"running","timeout":"5m"}}],"continuation":{"token":"t"}}`,
		`{"status":"success","stateUpdate":{"operation":"save","provider":"k3s","name":"c","state":{"children":[{"provider":"proxmox","kind":"VirtualMachine","name":"v"}]}}}`,
		`{"status":"success"} {"status":"success"}`,
		`{"status":"ok"}`,
		`null`,
		``,
		`{"status":"error"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := plugin.DecodeResponse(data)
		if err != nil {
			return
		}
		if r.Status != "success" && r.Status != "error" {
			t.Fatalf("accepted status %q", r.Status)
		}
		if r.Status == "error" && (r.Error == nil || r.Error.Code == "") {
			t.Fatal("accepted an error response without a code")
		}
	})
}

// FuzzDecodeCapabilities checks the capabilities decoder never panics.
func FuzzDecodeCapabilities(f *testing.F) {
	f.Add([]byte(capsJSON))
	f.Add([]byte(`{"providerName":"x","protocolVersion":"2.0","resources":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := plugin.DecodeCapabilities(data)
		if err == nil && len(c.Resources) == 0 {
			t.Fatal("accepted capabilities without resources")
		}
	})
}
