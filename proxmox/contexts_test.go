package proxmox_test

import (
	"errors"
	"testing"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/secret"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestContextsChooseTheEndpoint: one provider serves two Proxmox clusters;
// spec.context picks one, and Get/Delete find the VM where it lives.
func TestContextsChooseTheEndpoint(t *testing.T) {
	lab := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(fastLatencies))
	prod := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(fastLatencies), proxmoxtest.WithSeed(2))
	ctxOf := func(s *proxmoxtest.Server) proxmox.Context {
		id, sec := s.Token()
		return proxmox.Context{Endpoint: s.URL(), TokenID: id, TokenSecret: secret.New(sec), Fingerprint: s.Fingerprint()}
	}
	p, err := proxmox.New(proxmox.Config{DefaultContext: "lab", Contexts: map[string]proxmox.Context{"lab": ctxOf(lab), "prod": ctxOf(prod)}}, fastOpts...)
	require.NoError(t, err)
	ctx := ctxT(t)

	_, err = p.Apply(ctx, vm("a", nil))
	require.NoError(t, err)
	_, err = p.Apply(ctx, vm("b", map[string]any{"context": "prod"}))
	require.NoError(t, err)
	assert.Contains(t, guests(lab), "a")
	assert.NotContains(t, guests(lab), "b")
	assert.Contains(t, guests(prod), "b")

	// A fresh provider (no memory of earlier applies) still finds b.
	p2, err := proxmox.New(proxmox.Config{DefaultContext: "lab", Contexts: map[string]proxmox.Context{"lab": ctxOf(lab), "prod": ctxOf(prod)}}, fastOpts...)
	require.NoError(t, err)
	got, err := p2.Get(ctx, vmID("b"))
	require.NoError(t, err)
	assert.Equal(t, "prod", got.Spec["context"])
	require.NoError(t, p2.Delete(ctx, vmID("b")))
	assert.Empty(t, guests(prod))

	_, err = p.Apply(ctx, vm("c", map[string]any{"context": "staging"}))
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
	assert.Contains(t, err.Error(), "spec.context")
}

// TestFailedTaskCarriesItsLog: a clone task that fails is reported with its
// exit status and log tail, is not retried as transient, and leaves nothing.
func TestFailedTaskCarriesItsLog(t *testing.T) {
	e := newEnv(t, proxmoxtest.WithFaults(proxmoxtest.Faults{TaskFailureRate: 1}))
	_, err := e.p.Apply(ctxT(t), vm("web-01", nil))
	require.Error(t, err)
	var te *proxmox.TaskError
	require.True(t, errors.As(err, &te), "%T %v", err, err)
	assert.Equal(t, "qmclone", te.Type)
	assert.NotEmpty(t, te.Log)
	assert.Contains(t, err.Error(), "task log: TASK ERROR")
	assert.False(t, errcode.Is(err, errcode.Transient))
	assert.Empty(t, guests(e.srv))
}

// TestBrokenContextDoesNotBreakTheOthers: a context whose token file is
// missing fails only the resources that name it.
func TestBrokenContextDoesNotBreakTheOthers(t *testing.T) {
	lab := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(fastLatencies))
	id, sec := lab.Token()
	p, err := proxmox.New(proxmox.Config{DefaultContext: "lab", Contexts: map[string]proxmox.Context{
		"lab":  {Endpoint: lab.URL(), TokenID: id, TokenSecret: secret.New(sec), Fingerprint: lab.Fingerprint()},
		"prod": {Endpoint: "https://pve.prod:8006", TokenID: id, TokenSecretFile: t.TempDir() + "/missing.token", Fingerprint: lab.Fingerprint()},
	}}, fastOpts...)
	require.NoError(t, err)
	ctx := ctxT(t)
	_, err = p.Apply(ctx, vm("a", nil))
	require.NoError(t, err)
	_, err = p.Apply(ctx, vm("b", map[string]any{"context": "prod"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.token")
	assert.ErrorContains(t, p.Ping(ctx, nil), "missing.token")
	vms, err := p.List(ctx, "VirtualMachine")
	require.NoError(t, err)
	assert.Len(t, vms, 1)
}
