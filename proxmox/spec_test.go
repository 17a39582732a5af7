package proxmox_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/proxmox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const goodVM = `apiVersion: proxmox.openctl.io/v1
kind: VirtualMachine
metadata:
  name: web-01
spec:
  nodes: [pve1, pve2]
  template: {name: ubuntu-24.04-cloud, linked: true}
  cpu: {cores: 4, sockets: 1, type: host}
  memory: {size: 8192}
  disks: [{name: scsi0, size: 20G}]
  networks: [{name: net0, bridge: vmbr0, model: virtio, vlan: 10, firewall: true}]
  cloudInit:
    user: ubuntu
    password: s3cret
    sshKeys: ["ssh-ed25519 AAAAC3Nza test"]
    nameservers: [1.1.1.1]
    searchDomain: lab
    ipConfig: {net0: {ip: 10.0.0.5/24, gateway: 10.0.0.1, ip6: auto}}
  agent: {enabled: true}
  tags: [web, prod]
  onBoot: true
  state: running
  restartPolicy: ifRequired
`

func decodeVM(t *testing.T, doc string) (*proxmox.VMSpec, error) {
	t.Helper()
	rs, err := manifest.DecodeBytes([]byte(doc), "vms.yaml")
	require.NoError(t, err)
	return proxmox.DecodeVMSpec(rs[0])
}

func TestDecodeVMSpec(t *testing.T) {
	s, err := decodeVM(t, goodVM)
	require.NoError(t, err)
	assert.Equal(t, []string{"pve1", "pve2"}, s.Nodes)
	assert.True(t, s.Template.Linked)
	assert.Equal(t, 8192, s.Memory.Size)
	assert.Equal(t, 10, s.Networks[0].VLAN)
	assert.Equal(t, "10.0.0.5/24", s.CloudInit.IPConfig["net0"].IP)
}

// TestDecodeVMSpecErrors: every bad field is named with its path, the file
// and line, and is INVALID_REQUEST.
func TestDecodeVMSpecErrors(t *testing.T) {
	for _, tc := range []struct{ name, spec, want string }{
		{"unknown", "template: {name: t}\ncpus: 2", "spec.cpus: unknown field"},
		{"nested unknown", "template: {name: t}\ncpu: {core: 2}", "spec.cpu.core: unknown field"},
		{"type", "template: {name: t}\ncpu: {cores: two}", "spec.cpu.cores: must be an integer"},
		{"no template", "node: pve1", "spec.template: required"},
		{"both", "template: {name: t, vmid: 9000}", "set name or vmid, not both"},
		{"node and nodes", "template: {name: t}\nnode: a\nnodes: [b]", "spec.nodes: set node or nodes"},
		{"cores", "template: {name: t}\ncpu: {cores: 0}\n", ""},
		{"cores range", "template: {name: t}\ncpu: {cores: 5000}", "spec.cpu.cores: must be in 1..1024"},
		{"memory", "template: {name: t}\nmemory: {size: 8}", "spec.memory.size"},
		{"disk name", "template: {name: t}\ndisks: [{name: hda, size: 1G}]", "spec.disks[0].name"},
		{"disk size", "template: {name: t}\ndisks: [{name: scsi0, size: big}]", "spec.disks[0].size"},
		{"dup disk", "template: {name: t}\ndisks: [{name: scsi0, size: 1G}, {name: scsi0, size: 2G}]", "listed twice"},
		{"net model", "template: {name: t}\nnetworks: [{name: net0, model: ne2k}]", "spec.networks[0].model"},
		{"vlan", "template: {name: t}\nnetworks: [{name: net0, vlan: 5000}]", "spec.networks[0].vlan"},
		{"mac", "template: {name: t}\nnetworks: [{name: net0, macAddress: zz}]", "spec.networks[0].macAddress"},
		{"ip", "template: {name: t}\ncloudInit: {ipConfig: {net0: {ip: 10.0.0.5}}}", "spec.cloudInit.ipConfig.net0.ip"},
		{"ipv6 in ip", "template: {name: t}\ncloudInit: {ipConfig: {net0: {ip: '2001:db8::5/64'}}}", "IPv6 goes in ip6"},
		{"gw without ip", "template: {name: t}\ncloudInit: {ipConfig: {net0: {ip: dhcp, gateway: 10.0.0.1}}}", "needs a static ip"},
		{"ipconfig key", "template: {name: t}\ncloudInit: {ipConfig: {eth0: {ip: dhcp}}}", "spec.cloudInit.ipConfig.eth0"},
		{"ssh key", "template: {name: t}\ncloudInit: {sshKeys: [hello]}", "spec.cloudInit.sshKeys[0]"},
		{"nameserver", "template: {name: t}\ncloudInit: {nameservers: [dns.google]}", "spec.cloudInit.nameservers[0]"},
		{"tag", "template: {name: t}\ntags: [Web Server]", "spec.tags[0]"},
		{"state", "template: {name: t}\nstate: paused", "spec.state"},
		{"restart", "template: {name: t}\nrestartPolicy: always", "spec.restartPolicy"},
		{"replace", "template: {name: t}\nreplacePolicy: yes-please", "spec.replacePolicy"},
		{"linked storage", "template: {name: t, linked: true}\nstorage: local-lvm", "spec.storage"},
		{"linked full", "template: {name: t, linked: true, full: true}", "spec.template.linked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata: {name: x}\nspec:\n"
			for _, l := range splitLines(tc.spec) {
				doc += "  " + l + "\n"
			}
			_, err := decodeVM(t, doc)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
			// The error is at its field's line: the line of the spec key
			// it is under (the test's flow style puts nested fields on
			// that line), or spec's for a field not written.
			es := manifest.Errors(err)
			require.Len(t, es, 1, "%v", err)
			want := 4
			top, _, _ := strings.Cut(strings.TrimPrefix(es[0].Field, "spec."), ".")
			top, _, _ = strings.Cut(top, "[")
			for i, l := range strings.Split(doc, "\n") {
				if strings.HasPrefix(l, "  "+top+":") {
					want = i + 1
					break
				}
			}
			assert.Equal(t, "vms.yaml", es[0].File)
			assert.Equal(t, want, es[0].Line, "%v", err)
		})
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// FuzzDecodeVMSpec: decoding never panics, and what it accepts validates
// again after an encode/decode round trip.
func FuzzDecodeVMSpec(f *testing.F) {
	f.Add(goodVM)
	f.Add("apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata: {name: x}\nspec: {template: {vmid: 9000}, disks: [{name: virtio3, size: 1.5T}]}\n")
	f.Add("apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata: {name: x}\nspec: {template: {name: t}, cloudInit: {ipConfig: {net0: {ip6: '::1/128'}}}}\n")
	f.Add("apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata: {name: x}\nspec: {template: [1], cpu: 3}\n")
	f.Fuzz(func(t *testing.T, doc string) {
		rs, err := manifest.DecodeBytes([]byte(doc), "f.yaml")
		if err != nil || len(rs) != 1 {
			return
		}
		s, err := proxmox.DecodeVMSpec(rs[0])
		if err != nil {
			require.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
			return
		}
		require.NotNil(t, s.Template)
		var buf bytes.Buffer
		require.NoError(t, manifest.EncodeYAML(&buf, rs...))
		again, err := manifest.DecodeBytes(buf.Bytes(), "again.yaml")
		require.NoError(t, err)
		_, err = proxmox.DecodeVMSpec(again[0])
		require.NoError(t, err)
	})
}

// TestTagLimits: a tag list no one writes on purpose (the issue's
// 999,000 tags) is refused naming the field, as is an overlong tag.
func TestTagLimits(t *testing.T) {
	p := newEnv(t).p
	many := make([]any, 65)
	for i := range many {
		many[i] = fmt.Sprintf("t%d", i)
	}
	err := p.Validate(t.Context(), vm("web-01", map[string]any{"tags": many}))
	require.ErrorIs(t, err, errcode.Invalid)
	assert.ErrorContains(t, err, "spec.tags: at most 64 tags, got 65")

	err = p.Validate(t.Context(), vm("web-01", map[string]any{"tags": []any{strings.Repeat("a", 129)}}))
	require.ErrorIs(t, err, errcode.Invalid)
	assert.ErrorContains(t, err, "spec.tags[0]: a tag is at most 128 characters, got 129")

	require.NoError(t, p.Validate(t.Context(), vm("web-01", map[string]any{"tags": many[:64]})))
}
