package proxmox

import (
	"errors"
	"fmt"
	"testing"
	"time"

	pve "github.com/luthermonson/go-proxmox"
	"github.com/openctl/openctl/errcode"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReviewChooseNodeSkipsOfflineNodes: nodes: [...] with one node
// offline places the VM on an online one even if the offline node reports
// the most free memory; all offline is TRANSIENT; spec.node offline is
// TRANSIENT; a node not in the cluster is INVALID. (The simulator cannot
// take a node offline, hence a unit test on /cluster/resources entries.)
func TestReviewChooseNodeSkipsOfflineNodes(t *testing.T) {
	p := &Provider{reserved: map[string]int{}}
	c := &conn{name: "sim"}
	rs := []clusterResource{
		{Type: "node", Node: "pve1", Status: "online", MaxMem: 64 << 30, Mem: 60 << 30},
		{Type: "node", Node: "pve2", Status: "offline"}, // PVE reports no memory for offline nodes
		{Type: "node", Node: "pve3", Status: "online", MaxMem: 64 << 30, Mem: 8 << 30},
		{Type: "node", Node: "pve4", Status: "unknown", MaxMem: 512 << 30},
	}
	n, err := p.chooseNode(c, &VMSpec{Nodes: []string{"pve1", "pve2", "pve4"}}, rs)
	require.NoError(t, err)
	assert.Equal(t, "pve1", n)
	n, err = p.chooseNode(c, &VMSpec{Nodes: []string{"pve2", "pve3", "pve1"}}, rs)
	require.NoError(t, err)
	assert.Equal(t, "pve3", n)

	_, err = p.chooseNode(c, &VMSpec{Nodes: []string{"pve2", "pve4"}}, rs)
	assert.True(t, errcode.Is(err, errcode.Transient), "%v", err)
	_, err = p.chooseNode(c, &VMSpec{Node: "pve2"}, rs)
	assert.True(t, errcode.Is(err, errcode.Transient), "%v", err)
	_, err = p.chooseNode(c, &VMSpec{Nodes: []string{"pve1", "pve9"}}, rs)
	assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
	assert.Contains(t, err.Error(), "spec.nodes[1]")
}

// TestReviewNetworkRoundTrip: networks with macAddress (any case), vlan,
// firewall and model plan no change once Proxmox stored what was sent —
// in its own key order (model=MAC first, then the rest sorted, as
// PVE::QemuServer::print_net writes it). The simulator cannot run this
// end to end: it refuses "virtio=<MAC>,..." (it lacks the net format's
// keyAlias, see the review notes).
func TestReviewNetworkRoundTrip(t *testing.T) {
	f, tr := false, true
	s := &VMSpec{Template: &TemplateSpec{Name: "t"}, Networks: []NetworkSpec{
		{Name: "net0", Bridge: "vmbr1", VLAN: 20, Firewall: &tr, MACAddress: "bc:24:11:aa:bb:cc"},
		{Name: "net1", Model: "e1000", Firewall: &f},
		{Name: "net2"},
	}}
	conf := vmConfig{
		"description": description("", s.Template), "name": "vm", "tags": "openctl",
		"net0": "virtio=BC:24:11:11:22:33,bridge=vmbr0,queues=4",
		"net1": "virtio=BC:24:11:44:55:66,bridge=vmbr0,tag=7",
	}
	pl, err := planChanges(s, "vm", "pve1", conf, false, Defaults{})
	require.NoError(t, err)
	require.Len(t, pl.config, 3, "%v", pl.config)
	assert.Equal(t, "virtio=BC:24:11:AA:BB:CC,bridge=vmbr1,tag=20,firewall=1,queues=4", pl.config["net0"])
	assert.Equal(t, "e1000=BC:24:11:44:55:66,bridge=vmbr0,firewall=0", pl.config["net1"])
	assert.Equal(t, "virtio,bridge=vmbr0", pl.config["net2"])
	// Proxmox stores them with keys sorted after the model, and gives a
	// new device a MAC.
	conf["net0"] = "virtio=BC:24:11:AA:BB:CC,bridge=vmbr1,firewall=1,queues=4,tag=20"
	conf["net1"] = "e1000=BC:24:11:44:55:66,bridge=vmbr0,firewall=0"
	conf["net2"] = "virtio=BC:24:11:77:88:99,bridge=vmbr0"
	pl, err = planChanges(s, "vm", "pve1", conf, true, Defaults{})
	require.NoError(t, err)
	assert.Empty(t, pl.config)
	assert.Empty(t, pl.fields)
	assert.Empty(t, pl.restart)
}

// TestReviewTaskErrorCodeReachesTheEngine: a TaskError's code is found by
// errcode.Of — which the engine's retry uses — not only by errors.Is; a
// timed-out task (no underlying error) included. errors.As still reaches
// the go-proxmox error.
func TestReviewTaskErrorCodeReachesTheEngine(t *testing.T) {
	timedOut := fmt.Errorf("proxmox: apply VirtualMachine x: %w", &TaskError{Type: "qmclone", Timeout: time.Minute, code: errcode.Transient})
	assert.Equal(t, errcode.Transient, errcode.Of(timedOut))
	assert.True(t, errcode.Retryable(timedOut))

	tf := &pve.TaskFailedError{ExitStatus: "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout"}
	failed := fmt.Errorf("start: %w", &TaskError{Type: "qmstart", ExitStatus: tf.ExitStatus, code: errcode.Transient, err: tf})
	assert.Equal(t, errcode.Transient, errcode.Of(failed))
	got, ok := errors.AsType[*pve.TaskFailedError](failed)
	require.True(t, ok)
	assert.Same(t, tf, got)

	internal := &TaskError{Type: "qmclone", ExitStatus: "boom", code: errcode.Internal, err: &pve.TaskFailedError{ExitStatus: "boom"}}
	assert.False(t, errcode.Retryable(internal))
}
