package k3s_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
)

func decodeOne(t *testing.T, yaml string) *manifest.Resource {
	t.Helper()
	rs, err := manifest.DecodeBytes([]byte(yaml), "cluster.yaml")
	require.NoError(t, err)
	require.Len(t, rs, 1)
	return rs[0]
}

func newOffline(t *testing.T) *k3s.Provider {
	t.Helper()
	p, err := k3s.New(k3s.Config{BinaryDir: t.TempDir(), Offline: true})
	require.NoError(t, err)
	return p
}

const hostsCluster = `apiVersion: k3s.openctl.io/v1
kind: Cluster
metadata:
  name: lab
spec:
  k3s:
    version: v1.37.2+k3s1
    clusterCIDR: 10.42.0.0/16
    disable: [traefik]
  ssh:
    user: ubuntu
  vip:
    address: 10.0.0.100
  upgrade: {concurrency: 2}
  hosts:
    - {name: a1, address: 10.0.0.21, role: agent}
    - {name: s1, address: 10.0.0.11, role: server}
    - {name: s2, address: 10.0.0.12, role: server}
    - {name: s3, address: 10.0.0.13, role: server}
    - {name: a2, address: 10.0.0.22, role: agent}
`

func TestPlanHosts(t *testing.T) {
	p := newOffline(t)
	children, err := p.Plan(t.Context(), decodeOne(t, hostsCluster))
	require.NoError(t, err)
	var names []string
	byName := map[string]*manifest.Resource{}
	for _, c := range children {
		assert.Equal(t, k3s.KindNode, c.Kind)
		names = append(names, c.Metadata.Name)
		byName[c.Metadata.Name] = c
		require.NoError(t, p.Validate(t.Context(), c), "a planned node passes validation")
	}
	assert.Equal(t, []string{"s1", "s2", "s3", "a1", "a2"}, names, "servers first, in the order written")

	deps := func(name string) []string {
		ids, err := refs.Dependencies(byName[name])
		require.NoError(t, err)
		var out []string
		for _, id := range ids {
			out = append(out, id.Name)
		}
		return out
	}
	assert.Empty(t, deps("s1"), "the first server depends on nothing")
	assert.Equal(t, true, byName["s1"].Spec["init"])
	assert.Equal(t, []string{"s1"}, deps("s2"), "the second server joins the first")
	assert.Equal(t, []string{"s1", "s2"}, deps("s3"), "the third joins the first after the second: one learner at a time")
	assert.Equal(t, []string{"s1", "s3"}, deps("a1"), "agents join after the last server")
	assert.Equal(t, []string{"s1", "s3"}, deps("a2"))

	// Critical values are the cluster's, on every server; the VIP is in
	// every server's certificate.
	for _, n := range []string{"s1", "s2", "s3"} {
		k := byName[n].Spec["k3s"].(map[string]any)
		assert.Equal(t, "10.42.0.0/16", k["clusterCIDR"])
		assert.Equal(t, []any{"traefik"}, k["disable"])
		assert.Equal(t, map[string]any{"address": "10.0.0.100", "interface": ""}, byName[n].Spec["vip"])
	}
	assert.Nil(t, byName["a1"].Spec["vip"])
	assert.Equal(t, "lab", byName["a1"].Spec["cluster"])
	// Agents carry the upgrade concurrency; servers always go one at a time.
	assert.Equal(t, map[string]any{"concurrency": int64(2)}, byName["a2"].Spec["upgrade"])
	assert.Nil(t, byName["s2"].Spec["upgrade"])
}

const proxmoxCluster = `apiVersion: k3s.openctl.io/v1
kind: Cluster
metadata:
  name: dev
spec:
  compute:
    provider: proxmox
    image: {template: ubuntu-24.04-cloud}
    default: {cpus: 2, memoryMB: 4096, diskGB: 20}
    nodes: [pve1, pve2, pve3]
  nodes:
    controlPlane: {count: 3}
    workers:
      - {name: worker, count: 2, size: {cpus: 4, memoryMB: 8192}}
  network:
    staticIPs: {startIP: 192.168.1.50, gateway: 192.168.1.1, netmask: 255.255.255.0}
  k3s: {version: v1.37.2+k3s1}
  ssh:
    user: ubuntu
    publicKeys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOpenctlExampleKeyReplaceWithYourOwn0000 me"]
`

func TestPlanProxmox(t *testing.T) {
	p := newOffline(t)
	children, err := p.Plan(t.Context(), decodeOne(t, proxmoxCluster))
	require.NoError(t, err)
	vms := map[string]*manifest.Resource{}
	nodes := map[string]*manifest.Resource{}
	for _, c := range children {
		switch c.Kind {
		case "VirtualMachine":
			vms[c.Metadata.Name] = c
		case k3s.KindNode:
			nodes[c.Metadata.Name] = c
		}
	}
	require.Len(t, vms, 5)
	require.Len(t, nodes, 5)
	// Control planes spread over the Proxmox nodes, one each.
	assert.Equal(t, "pve1", vms["dev-cp-0"].Spec["node"])
	assert.Equal(t, "pve2", vms["dev-cp-1"].Spec["node"])
	assert.Equal(t, "pve3", vms["dev-cp-2"].Spec["node"])
	assert.Equal(t, []any{"pve1", "pve2", "pve3"}, vms["dev-worker-0"].Spec["nodes"])
	// Sizes: the default, a pool's over it.
	assert.Equal(t, map[string]any{"cores": int64(2)}, vms["dev-cp-0"].Spec["cpu"])
	assert.Equal(t, map[string]any{"size": int64(8192)}, vms["dev-worker-1"].Spec["memory"])
	assert.Equal(t, []any{map[string]any{"name": "scsi0", "size": "20G"}}, vms["dev-worker-1"].Spec["disks"])
	// Static addresses in order, the cloud-init user and keys.
	ci := vms["dev-cp-0"].Spec["cloudInit"].(map[string]any)
	assert.Equal(t, "ubuntu", ci["user"])
	assert.Equal(t, map[string]any{"net0": map[string]any{"ip": "192.168.1.50/24", "gateway": "192.168.1.1"}}, ci["ipConfig"])
	ci = vms["dev-worker-1"].Spec["cloudInit"].(map[string]any)
	assert.Equal(t, map[string]any{"net0": map[string]any{"ip": "192.168.1.54/24", "gateway": "192.168.1.1"}}, ci["ipConfig"])
	// Each node takes its VM's address and host key.
	ids, err := refs.Dependencies(nodes["dev-cp-0"])
	require.NoError(t, err)
	assert.Equal(t, []manifest.ID{{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: "dev-cp-0"}}, ids)
	assert.Equal(t, refs.Marker(manifest.ID{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: "dev-cp-0"}, "status.sshHostKey"), nodes["dev-cp-0"].Spec["sshHostKey"])
}

func TestClusterSpecErrors(t *testing.T) {
	p := newOffline(t)
	for _, tt := range []struct {
		name, edit, want string
	}{
		// Each at its field's line and column (spec.hosts is on line 15,
		// the added host on 21).
		{"even servers", "    - {name: s4, address: 10.0.0.14, role: server}\n", "cluster.yaml:15:3: spec.hosts: 4 servers: etcd needs a majority"},
		{"bad role", "    - {name: x, address: 10.0.0.30, role: master}\n", `cluster.yaml:21:37: spec.hosts[5].role: must be server or agent, got "master"`},
		{"duplicate", "    - {name: a1, address: 10.0.0.31, role: agent}\n", "cluster.yaml:21:8: spec.hosts[5].name: a1 is listed twice"},
		{"bad host key", "    - {name: a3, address: 10.0.0.32, role: agent, sshHostKey: nonsense}\n", "cluster.yaml:21:51: spec.hosts[5].sshHostKey"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Validate(t.Context(), decodeOne(t, hostsCluster+tt.edit))
			require.ErrorIs(t, err, errcode.Invalid)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	for _, tt := range []struct{ name, from, to, want string }{
		{"version", "v1.37.2+k3s1", "v1.37", `spec.k3s.version: must be a k3s release such as v1.37.2+k3s1, got "v1.37"`},
		{"unknown field", "  ssh:\n", "  shh: {}\n  ssh:\n", "spec.shh: unknown field"},
		{"disable", "[traefik]", "[trafik]", `spec.k3s.disable[0]: must be one of`},
		{"vip", "10.0.0.100", "vip.lab", `spec.vip.address: not an IP address: "vip.lab"`},
		{"install method", "[traefik]\n", "[traefik]\n    install: {method: curl}\n", `spec.k3s.install.method: must be "upload" or "script", got "curl"`},
		{"install script over http", "[traefik]\n", "[traefik]\n    install: {method: script, scriptURL: 'http://get.k3s.io'}\n", `spec.k3s.install.scriptURL: must be an https:// URL (the script runs as root on the node), got "http://get.k3s.io"`},
		{"upgrade concurrency", "concurrency: 2", "concurrency: -1", `spec.upgrade.concurrency: want how many agents to upgrade at once, 1 to 100 (0: 1), got -1`},
		{"script URL for an upload", "[traefik]\n", "[traefik]\n    install: {scriptURL: 'https://get.k3s.io'}\n", `spec.k3s.install.scriptURL: only for method "script"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Validate(t.Context(), decodeOne(t, strings.Replace(hostsCluster, tt.from, tt.to, 1)))
			require.ErrorIs(t, err, errcode.Invalid)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	err := p.Validate(t.Context(), decodeOne(t, strings.Replace(proxmoxCluster, "count: 3", "count: 2", 1)))
	require.ErrorIs(t, err, errcode.Invalid)
	assert.Contains(t, err.Error(), "spec.nodes.controlPlane.count: 2 servers")

	// The VIP is an address no machine has.
	err = p.Validate(t.Context(), decodeOne(t, strings.Replace(hostsCluster, "address: 10.0.0.100", "address: 10.0.0.12", 1)))
	require.ErrorIs(t, err, errcode.Invalid)
	assert.Contains(t, err.Error(), "spec.vip.address: 10.0.0.12 is also the address of spec.hosts[2] (s2): the VIP must be an address no machine has")
	withVIP := strings.Replace(proxmoxCluster, "  k3s: {", "  vip: {address: 192.168.1.52}\n  k3s: {", 1)
	err = p.Validate(t.Context(), decodeOne(t, withVIP))
	require.ErrorIs(t, err, errcode.Invalid)
	assert.Contains(t, err.Error(), "spec.vip.address: 192.168.1.52 is also the static address of machine 3 (control planes first, from spec.network.staticIPs.startIP 192.168.1.50)")
	require.NoError(t, p.Validate(t.Context(), decodeOne(t, strings.Replace(withVIP, "192.168.1.52}", "192.168.1.49}", 1))))

	// Static addresses stay inside the subnet, off its broadcast and
	// network addresses and the gateway's.
	for _, tt := range []struct{ name, staticIPs, want string }{
		{"broadcast", "{startIP: 192.168.1.252, gateway: 192.168.1.1, netmask: 255.255.255.0}", "machine 4 of them (control planes first) would get 192.168.1.255, the subnet's broadcast address"},
		{"past the subnet", "{startIP: 192.168.1.252, gateway: 192.168.1.1, netmask: /23}", "machine 4 of them (control planes first) would get 192.168.1.255, the subnet's broadcast address"},
		{"outside a /31", "{startIP: 192.168.1.1, gateway: 192.168.1.0, netmask: /31}", "machine 2 of them (control planes first) would get 192.168.1.2, outside the subnet 192.168.1.0/31"},
		{"gateway", "{startIP: 192.168.1.250, gateway: 192.168.1.252, netmask: '24'}", "machine 3 of them (control planes first) would get 192.168.1.252, the gateway's address"},
		{"network address", "{startIP: 192.168.1.0, gateway: 192.168.1.1, netmask: '24'}", "machine 1 of them (control planes first) would get 192.168.1.0, the subnet's network address"},
		{"gateway elsewhere", "{startIP: 192.168.1.50, gateway: 192.168.2.1, netmask: '24'}", "spec.network.staticIPs.gateway: 192.168.2.1 is outside the subnet 192.168.1.0/24"},
		{"netmask", "{startIP: 192.168.1.50, gateway: 192.168.1.1, netmask: 255.0.255.0}", "spec.network.staticIPs.netmask: not a contiguous netmask"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := strings.Replace(proxmoxCluster, "{startIP: 192.168.1.50, gateway: 192.168.1.1, netmask: 255.255.255.0}", tt.staticIPs, 1)
			err := p.Validate(t.Context(), decodeOne(t, c))
			require.ErrorIs(t, err, errcode.Invalid)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	// The last address before the broadcast is fine.
	require.NoError(t, p.Validate(t.Context(), decodeOne(t, strings.Replace(proxmoxCluster, "startIP: 192.168.1.50", "startIP: 192.168.1.250", 1))))

	// A Cluster expands within the limit of one manifest, refused before
	// anything is expanded.
	var pools strings.Builder
	for i := range 60 {
		fmt.Fprintf(&pools, "      - {name: pool%d, count: 100}\n", i)
	}
	big := strings.Replace(proxmoxCluster, "      - {name: worker, count: 2, size: {cpus: 4, memoryMB: 8192}}\n", pools.String(), 1)
	big = strings.Replace(big, "  network:\n    staticIPs: {startIP: 192.168.1.50, gateway: 192.168.1.1, netmask: 255.255.255.0}\n", "", 1)
	err = p.Validate(t.Context(), decodeOne(t, big))
	require.ErrorIs(t, err, errcode.Invalid)
	assert.Contains(t, err.Error(), "spec.nodes: 6003 machines expand to 12007 resources (a VM and a Node each, and the Cluster); at most 10000, the limit of one manifest")
}

func TestNodeSpecErrors(t *testing.T) {
	p := newOffline(t)
	node := `apiVersion: k3s.openctl.io/v1
kind: Node
metadata: {name: extra}
spec:
  role: agent
  address: 10.0.0.40
  server: https://10.0.0.11:6443
  agentToken: K10abc::node:pw
  k3s: {version: v1.37.2+k3s1}
  ssh: {user: ubuntu}
`
	require.NoError(t, p.Validate(t.Context(), decodeOne(t, node)))
	for _, tt := range []struct{ name, from, to, want string }{
		{"http", "https://10.0.0.11:6443", "http://10.0.0.11:6443", "spec.server: must be an https:// URL"},
		{"agent init", "role: agent", "role: agent\n  init: true", "spec.init: only a server can start a cluster"},
		{"joining server without full token", "role: agent", "role: server\n  token: short", "spec.token: a joining server needs the cluster's full token"},
		{"openctl's own flag", "ssh:", "extraArgs: [--token=x]\n  ssh:", "spec.extraArgs[0]: --token is set by openctl from the spec"},
		{"taint", "ssh:", "taints: [dedicated]\n  ssh:", "spec.taints[0]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Validate(t.Context(), decodeOne(t, strings.Replace(node, tt.from, tt.to, 1)))
			require.ErrorIs(t, err, errcode.Invalid)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// Plan refuses a node's version change as apply does: a downgrade and a
// skipped minor are errors with apply's message, not in-place updates.
func TestDiffRefusesWhatApplyRefuses(t *testing.T) {
	p := newOffline(t)
	node := func(version string) *manifest.Resource {
		return &manifest.Resource{APIVersion: k3s.APIVersion, Kind: k3s.KindNode, Metadata: manifest.Metadata{Name: "s1"},
			Spec: map[string]any{"k3s": map[string]any{"version": version}}}
	}
	live := node("v1.37.2+k3s1")
	live.Status = map[string]any{"version": "v1.37.2+k3s1", "phase": k3s.PhaseReady}
	for _, tt := range []struct{ want, err string }{
		{"v1.36.9+k3s1", "k3s: node s1 runs v1.37.2+k3s1: v1.36.9+k3s1 would be a downgrade, which k3s does not support"},
		{"v1.37.1+k3s1", "k3s: node s1 runs v1.37.2+k3s1: v1.37.1+k3s1 would be a downgrade, which k3s does not support"},
		{"v1.39.0+k3s1", "k3s: node s1 runs v1.37.2+k3s1: v1.39.0+k3s1 skips a minor version; upgrade to v1.38 first"},
	} {
		_, err := p.Diff(t.Context(), node(tt.want), live)
		require.ErrorIs(t, err, errcode.Invalid, tt.want)
		assert.Contains(t, err.Error(), tt.err)
	}
	d, err := p.Diff(t.Context(), node("v1.38.1+k3s1"), live)
	require.NoError(t, err)
	assert.Equal(t, registry.DiffUpdate, d.Action)
	d, err = p.Diff(t.Context(), node("v1.37.2+k3s1"), live)
	require.NoError(t, err)
	assert.Equal(t, registry.DiffNone, d.Action)
}
