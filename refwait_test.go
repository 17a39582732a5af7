package openctl_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
)

// lateFieldProvider's Things declare status.hostKey, which a Thing only
// reports from its readsUntilKey-th read on, as a VM reports its host key
// once its guest agent answers.
type lateFieldProvider struct {
	*testProvider
	declare       []string
	readsUntilKey int64
	blockFrom     int64 // from this read on, Get blocks until ctx ends (0: never)
	reads         atomic.Int64
}

func (p *lateFieldProvider) Kinds() []registry.Kind {
	return []registry.Kind{{Kind: "Thing", Plural: "things", Fields: p.declare}}
}

func (p *lateFieldProvider) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	r, err := p.testProvider.Get(ctx, id)
	if err != nil || id.Name != "vm" {
		return r, err
	}
	n := p.reads.Add(1)
	if p.blockFrom > 0 && n >= p.blockFrom {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if n >= p.readsUntilKey {
		r.Status["hostKey"] = "ssh-ed25519 AAAA"
	}
	return r, nil
}

// TestApplyWaitsForDeclaredField: a $ref to a field the target's kind
// declares but the target does not report yet is waited for, reported as
// waiting; one that never comes fails after the ready timeout; a field of
// a kind that declares none fails at once.
func TestApplyWaitsForDeclaredField(t *testing.T) {
	ctx := t.Context()
	rs := func() []*manifest.Resource {
		return []*manifest.Resource{thing("vm", nil), thing("node", map[string]any{"hostKey": ref("vm", "status.hostKey")})}
	}
	t.Run("appears", func(t *testing.T) {
		p := &lateFieldProvider{testProvider: newTestProvider(), declare: []string{"spec", "status.ip", "status.hostKey"}, readsUntilKey: 3}
		var log eventLog
		e := newEngine(t, p, openctl.WithObserver(log.observe), openctl.WithReadyPolicy(openctl.ReadyPolicy{Timeout: 10 * time.Second, Initial: time.Millisecond, Max: 5 * time.Millisecond}))
		_, err := e.Apply(ctx, rs()...)
		require.NoError(t, err)
		f, err := e.Get(ctx, thingID("node"))
		require.NoError(t, err)
		assert.Equal(t, "ssh-ed25519 AAAA", f.Resource.Spec["hostKey"])
		var waits []string
		for _, ev := range log.events {
			if ev.Type == openctl.EventWaiting && ev.ID == thingID("node") {
				waits = append(waits, ev.Step)
			}
		}
		require.NotEmpty(t, waits)
		for _, w := range waits {
			assert.Equal(t, "waiting for Thing/vm to report status.hostKey", w)
		}
	})
	t.Run("never", func(t *testing.T) {
		p := &lateFieldProvider{testProvider: newTestProvider(), declare: []string{"spec", "status.ip", "status.hostKey"}, readsUntilKey: 1 << 40}
		e := newEngine(t, p, openctl.WithReadyPolicy(openctl.ReadyPolicy{Timeout: 200 * time.Millisecond, Initial: time.Millisecond, Max: 20 * time.Millisecond}))
		start := time.Now()
		_, err := e.Apply(ctx, rs()...)
		require.Error(t, err)
		assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
		assert.True(t, errors.Is(err, refs.ErrFieldNotFound), "%v", err)
		assert.Contains(t, err.Error(), "$ref to Thing/vm field status.hostKey: field not found (waited 200ms for it)")
		assert.Greater(t, p.reads.Load(), int64(2))
	})
	t.Run("deadline during a read", func(t *testing.T) {
		// The wait runs out while the target is being read again: the
		// error names the field the earlier reads found missing, not the
		// interrupted read.
		p := &lateFieldProvider{testProvider: newTestProvider(), declare: []string{"spec", "status.ip", "status.hostKey"}, readsUntilKey: 1 << 40, blockFrom: 3}
		e := newEngine(t, p, openctl.WithReadyPolicy(openctl.ReadyPolicy{Timeout: 200 * time.Millisecond, Initial: time.Millisecond, Max: 20 * time.Millisecond}))
		_, err := e.Apply(ctx, rs()...)
		require.Error(t, err)
		assert.True(t, errors.Is(err, refs.ErrFieldNotFound), "%v", err)
		assert.Contains(t, err.Error(), "$ref to Thing/vm field status.hostKey: field not found (waited 200ms for it)")
	})
	t.Run("undeclared", func(t *testing.T) {
		p := &lateFieldProvider{testProvider: newTestProvider(), readsUntilKey: 3}
		e := newEngine(t, p, openctl.WithReadyPolicy(openctl.ReadyPolicy{Timeout: time.Minute}))
		start := time.Now()
		_, err := e.Apply(ctx, rs()...)
		require.Error(t, err)
		assert.Less(t, time.Since(start), 5*time.Second, "no wait for a kind that declares no fields")
		assert.True(t, errors.Is(err, refs.ErrFieldNotFound), "%v", err)
		assert.NotContains(t, err.Error(), "waited")
	})
}

// TestPlanShowsDeclaredFieldPending: a $ref to a field its target's kind
// declares but does not report at the moment (a VM just started, its
// guest agent not answering yet) is no plan error: the dependent is shown
// pending, as apply waits for the field. A field of a kind that declares
// none is still an error.
func TestPlanShowsDeclaredFieldPending(t *testing.T) {
	ctx := t.Context()
	rs := []*manifest.Resource{thing("vm", nil), thing("node", map[string]any{"hostKey": ref("vm", "status.hostKey")})}
	p := &lateFieldProvider{testProvider: newTestProvider(), declare: []string{"spec", "status.ip", "status.hostKey"}, readsUntilKey: 1}
	e := newEngine(t, p)
	_, err := e.Apply(ctx, rs...)
	require.NoError(t, err)
	plan, err := e.Plan(ctx, rs...)
	require.NoError(t, err)
	assert.False(t, plan.HasChanges())

	p.readsUntilKey = 1 << 40 // the key is gone for now
	plan, err = e.Plan(ctx, rs...)
	require.NoError(t, err)
	require.Len(t, plan.Changes, 2)
	for _, c := range plan.Changes {
		switch c.ID {
		case thingID("vm"):
			assert.Equal(t, openctl.ActionNoOp, c.Action)
		case thingID("node"):
			assert.Equal(t, openctl.ActionUpdate, c.Action)
			assert.Equal(t, []string{"Thing/vm does not report status.hostKey yet: its value is known only after apply, which waits for it"}, c.Reasons)
		}
	}

	undeclared := &lateFieldProvider{testProvider: newTestProvider(), readsUntilKey: 1}
	e = newEngine(t, undeclared)
	_, err = e.Apply(ctx, rs...)
	require.NoError(t, err)
	undeclared.readsUntilKey = 1 << 40
	_, err = e.Plan(ctx, rs...)
	require.Error(t, err, "a kind that declares no fields promises none")
	assert.True(t, errors.Is(err, refs.ErrFieldNotFound), "%v", err)
}

// stalledProvider is a lateFieldProvider whose target says, as
// registry.Producer, that it will not report status.hostKey: it is off.
type stalledProvider struct{ *lateFieldProvider }

func (p stalledProvider) WillReport(live *manifest.Resource, field string) error {
	if live.Metadata.Name == "vm" && field == "status.hostKey" {
		return errcode.New(errcode.Invalid, "Thing vm is off, so it will not report "+field+": turn it on")
	}
	return nil
}

// A $ref wait on a field its target will not report (registry.Producer:
// a VM that is stopped) fails at once, saying why and what to do, never
// after the ready timeout with advice about the field's name.
func TestApplyStopsWaitingForFieldThatWillNotCome(t *testing.T) {
	p := stalledProvider{&lateFieldProvider{testProvider: newTestProvider(), declare: []string{"spec", "status.hostKey"}, readsUntilKey: 1 << 40}}
	e := newEngine(t, p, openctl.WithReadyPolicy(openctl.ReadyPolicy{Timeout: time.Minute, Initial: time.Millisecond, Max: 5 * time.Millisecond}))
	start := time.Now()
	_, err := e.Apply(t.Context(), thing("vm", nil), thing("node", map[string]any{"hostKey": ref("vm", "status.hostKey")}))
	require.Error(t, err)
	assert.Less(t, time.Since(start), 10*time.Second, "no wait for the timeout")
	assert.ErrorContains(t, err, "Thing vm is off, so it will not report status.hostKey: turn it on")
	assert.Equal(t, errcode.Invalid, errcode.Of(err), "%v", err)
	assert.NotContains(t, err.Error(), "waited")
}
