package registry_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/registry/providertest"
)

// actioner is a Fake that offers actions.
type actioner struct {
	*providertest.Fake
	specs []registry.ActionSpec
}

var _ registry.Actioner = (*actioner)(nil)

func (a *actioner) Actions() []registry.ActionSpec { return a.specs }

func (a *actioner) Do(_ context.Context, req registry.ActionRequest) (*registry.ActionResult, error) {
	return &registry.ActionResult{Message: fmt.Sprintf("%s %s", req.ID.Name, req.Action)}, nil
}

func testSpec() registry.ActionSpec {
	return registry.ActionSpec{
		Name: "restart",
		Kind: "Thing",
		Args: []registry.ArgSpec{
			{Name: "target", Type: registry.ArgString, Required: true},
			{Name: "count", Type: registry.ArgInt, Default: 3},
			{Name: "force", Type: registry.ArgBool},
			{Name: "timeout", Type: registry.ArgDuration, Default: "30s"},
			{Name: "mode", Type: registry.ArgString, Default: "soft"},
		},
	}
}

func TestCheckArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    map[string]any
		want    map[string]any
		wantErr string
	}{
		{
			name: "defaults filled",
			args: map[string]any{"target": "web"},
			want: map[string]any{"target": "web", "count": int64(3), "timeout": 30 * time.Second, "mode": "soft"},
		},
		{
			name: "nil value takes the default",
			args: map[string]any{"target": "web", "count": nil},
			want: map[string]any{"target": "web", "count": int64(3), "timeout": 30 * time.Second, "mode": "soft"},
		},
		{
			name: "strings converted",
			args: map[string]any{"target": "web", "count": " 7 ", "force": "true", "timeout": "1m30s", "mode": "hard"},
			want: map[string]any{"target": "web", "count": int64(7), "force": true, "timeout": 90 * time.Second, "mode": "hard"},
		},
		{
			name: "negative int and short bool",
			args: map[string]any{"target": "web", "count": "-2", "force": "f"},
			want: map[string]any{"target": "web", "count": int64(-2), "force": false, "timeout": 30 * time.Second, "mode": "soft"},
		},
		{
			name: "already typed",
			args: map[string]any{"target": "", "count": 9, "force": false, "timeout": time.Minute},
			want: map[string]any{"target": "", "count": int64(9), "force": false, "timeout": time.Minute, "mode": "soft"},
		},
		{
			name: "int64",
			args: map[string]any{"target": "web", "count": int64(1) << 40},
			want: map[string]any{"target": "web", "count": int64(1) << 40, "timeout": 30 * time.Second, "mode": "soft"},
		},
		{name: "required missing", args: map[string]any{"count": 1}, wantErr: `registry: action restart: argument "target" is required`},
		{name: "required nil", args: map[string]any{"target": nil}, wantErr: `argument "target" is required`},
		{name: "nil args", args: nil, wantErr: `argument "target" is required`},
		{name: "unknown argument", args: map[string]any{"target": "web", "verbose": true}, wantErr: `registry: action restart: unknown argument "verbose"`},
		{name: "unknown nil argument", args: map[string]any{"target": "web", "zzz": nil}, wantErr: `unknown argument "zzz"`},
		{name: "first unknown argument sorted", args: map[string]any{"target": "web", "b": 1, "a": 1}, wantErr: `unknown argument "a"`},
		{name: "bad int", args: map[string]any{"target": "web", "count": "many"}, wantErr: `argument "count": "many" is not an integer`},
		{name: "int overflow", args: map[string]any{"target": "web", "count": "99999999999999999999"}, wantErr: `argument "count": "99999999999999999999" is not an integer`},
		{name: "float for int", args: map[string]any{"target": "web", "count": 1.5}, wantErr: `argument "count": want an integer, got float64`},
		{name: "bad bool", args: map[string]any{"target": "web", "force": "maybe"}, wantErr: `argument "force": "maybe" is not a bool`},
		{name: "int for bool", args: map[string]any{"target": "web", "force": 1}, wantErr: `argument "force": want a bool, got int`},
		{name: "bad duration", args: map[string]any{"target": "web", "timeout": "soon"}, wantErr: `argument "timeout": "soon" is not a duration`},
		{name: "unitless duration", args: map[string]any{"target": "web", "timeout": "30"}, wantErr: `argument "timeout": "30" is not a duration`},
		{name: "int for duration", args: map[string]any{"target": "web", "timeout": 30}, wantErr: `argument "timeout": want a duration, got int`},
		{name: "int for string", args: map[string]any{"target": 5}, wantErr: `argument "target": want a string, got int`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := testSpec().CheckArgs(tt.args)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, errcode.Invalid)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestCheckArgsSpecs(t *testing.T) {
	t.Run("no args", func(t *testing.T) {
		got, err := registry.ActionSpec{Name: "start"}.CheckArgs(nil)
		require.NoError(t, err)
		assert.Empty(t, got)
	})
	t.Run("bad default", func(t *testing.T) {
		s := registry.ActionSpec{Name: "wait", Args: []registry.ArgSpec{{Name: "for", Type: registry.ArgDuration, Default: "forever"}}}
		_, err := s.CheckArgs(nil)
		assert.ErrorIs(t, err, errcode.Invalid)
		assert.Contains(t, err.Error(), `argument "for": "forever" is not a duration`)
	})
	t.Run("unknown type", func(t *testing.T) {
		s := registry.ActionSpec{Name: "scale", Args: []registry.ArgSpec{{Name: "factor", Type: "float"}}}
		_, err := s.CheckArgs(map[string]any{"factor": "1.5"})
		assert.ErrorIs(t, err, errcode.Invalid)
		assert.Contains(t, err.Error(), `argument "factor": unknown argument type "float"`)
	})
	t.Run("input not modified", func(t *testing.T) {
		in := map[string]any{"target": "web", "count": "4"}
		_, err := testSpec().CheckArgs(in)
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"target": "web", "count": "4"}, in)
	})
}

func TestFindAction(t *testing.T) {
	p := &actioner{
		Fake: providertest.NewFake("alpha", "Thing", "Other"),
		specs: []registry.ActionSpec{
			{Name: "stop", Kind: "Thing"},
			{Name: "start", Kind: "Thing", Short: "start a thing"},
			{Name: "reboot", Kind: "Other"},
			{Name: "logs", Kind: "Thing"},
		},
	}

	t.Run("found", func(t *testing.T) {
		a, spec, err := registry.FindAction(p, "Thing", "start")
		require.NoError(t, err)
		assert.Same(t, p, a)
		assert.Equal(t, registry.ActionSpec{Name: "start", Kind: "Thing", Short: "start a thing"}, spec)

		res, err := a.Do(t.Context(), registry.ActionRequest{Action: spec.Name, ID: id("alpha", "Thing", "web")})
		require.NoError(t, err)
		assert.Equal(t, "web start", res.Message)
	})

	tests := []struct {
		name      string
		p         registry.Provider
		kind, act string
		wantErr   string
	}{
		{name: "no Actioner", p: providertest.NewFake("plain", "Thing"), kind: "Thing", act: "start", wantErr: `registry: provider "plain" offers no actions`},
		{name: "unknown action", p: p, kind: "Thing", act: "explode", wantErr: `registry: alpha Thing has no action "explode" (actions: logs, start, stop)`},
		{name: "action of another kind", p: p, kind: "Thing", act: "reboot", wantErr: `has no action "reboot" (actions: logs, start, stop)`},
		{name: "kind without actions", p: p, kind: "Widget", act: "start", wantErr: `registry: alpha Widget has no action "start"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, spec, err := registry.FindAction(tt.p, tt.kind, tt.act)
			require.Error(t, err)
			assert.ErrorIs(t, err, errcode.Invalid)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Nil(t, a)
			assert.Zero(t, spec)
		})
	}
}

func TestReportStep(t *testing.T) {
	t.Run("reporter receives steps", func(t *testing.T) {
		var steps []string
		ctx := registry.WithCall(t.Context(), registry.Call{Step: func(s string) { steps = append(steps, s) }})
		registry.CallOf(ctx).ReportStep("cloning")
		registry.CallOf(ctx).ReportStep("waiting for guest agent")
		assert.Equal(t, []string{"cloning", "waiting for guest agent"}, steps)
	})
	t.Run("derived contexts carry the reporter", func(t *testing.T) {
		var steps []string
		ctx := registry.WithCall(t.Context(), registry.Call{Step: func(s string) { steps = append(steps, s) }})
		child, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		registry.CallOf(child).ReportStep("booting")
		assert.Equal(t, []string{"booting"}, steps)
	})
	t.Run("inner reporter wins", func(t *testing.T) {
		var outer, inner []string
		ctx := registry.WithCall(t.Context(), registry.Call{Step: func(s string) { outer = append(outer, s) }})
		ctx = registry.WithCall(ctx, registry.Call{Step: func(s string) { inner = append(inner, s) }})
		registry.CallOf(ctx).ReportStep("x")
		assert.Empty(t, outer)
		assert.Equal(t, []string{"x"}, inner)
	})
	t.Run("no reporter is a no-op", func(t *testing.T) {
		assert.NotPanics(t, func() { registry.CallOf(t.Context()).ReportStep("cloning") })
	})
	t.Run("nil reporter is a no-op", func(t *testing.T) {
		ctx := registry.WithCall(t.Context(), registry.Call{})
		assert.NotPanics(t, func() { registry.CallOf(ctx).ReportStep("cloning") })
	})
	t.Run("concurrent reports", func(t *testing.T) {
		var mu sync.Mutex
		n := 0
		ctx := registry.WithCall(t.Context(), registry.Call{Step: func(string) { mu.Lock(); n++; mu.Unlock() }})
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() { registry.CallOf(ctx).ReportStep("step") })
		}
		wg.Wait()
		assert.Equal(t, 8, n)
	})
}
