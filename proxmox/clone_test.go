package proxmox

import (
	"testing"

	"github.com/openctl/openctl/errcode"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChooseNodeSkipsOfflineNodes: nodes: [...] with one node
// offline places the VM on an online one even if the offline node reports
// the most free memory; all offline is TRANSIENT; spec.node offline is
// TRANSIENT; a node not in the cluster is INVALID. (The simulator cannot
// take a node offline, hence a unit test on /cluster/resources entries.)
func TestChooseNodeSkipsOfflineNodes(t *testing.T) {
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
