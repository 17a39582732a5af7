package apischema_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/internal/testenv"
	"github.com/openctl/openctl/proxmox/proxmoxtest/internal/apischema"
)

// defaultSchemaPath is the Proxmox VE 9 API viewer data, kept outside the
// repository (AGPL reference data) in the openctl shared/ directory next
// to the checkout; CI checks it out at the same place. The environment
// variable OPENCTL_PROXMOX_APIDOC names another copy (or, to check how
// the tests behave without it, a file that does not exist).
const defaultSchemaPath = "../../../../../shared/proxmox-api/apidoc.js.gz"

func schemaPath() string {
	if p := os.Getenv("OPENCTL_PROXMOX_APIDOC"); p != "" {
		return p
	}
	return defaultSchemaPath
}

var loadOnce = sync.OnceValues(func() (*apischema.Schema, error) { return apischema.Load(schemaPath()) })

// load returns the schema, or ends the test through testenv.Unavailable
// (a skip, a failure under CI=true) when the file is missing.
func load(t testing.TB) *apischema.Schema {
	t.Helper()
	p := schemaPath()
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		testenv.Unavailable(t, "the Proxmox VE API schema %s is missing: it is not part of the repository but comes from the openctl shared/ directory (shared/proxmox-api/apidoc.js.gz beside the checkout); put it there or set OPENCTL_PROXMOX_APIDOC to its path", p)
	}
	s, err := loadOnce()
	require.NoError(t, err, "reading the Proxmox VE API schema %s", p)
	return s
}

func TestLoad(t *testing.T) {
	s := load(t)
	ops := s.Operations()
	// The README of the data states 646 method+path operations.
	assert.Len(t, ops, 646)
	seen := map[string]bool{}
	for _, o := range ops {
		seen[o.String()] = true
	}
	for _, want := range []string{
		"GET /version",
		"GET /cluster/nextid",
		"POST /nodes/{node}/qemu/{vmid}/clone",
		"PUT /nodes/{node}/qemu/{vmid}/resize",
		"DELETE /nodes/{node}/qemu/{vmid}",
		"GET /nodes/{node}/tasks/{upid}/status",
		"GET /cluster/ha/rules",
	} {
		assert.True(t, seen[want], want)
	}
	op, ok := s.Operation("POST", "/nodes/{node}/qemu/{vmid}/clone")
	require.True(t, ok)
	assert.Equal(t, []string{"newid", "node", "vmid"}, op.Required())
	assert.False(t, op.AdditionalProperties)
	assert.True(t, op.AllowToken)
	assert.Contains(t, op.Permissions.Description, "VM.Clone")
	vmid := op.Parameters["vmid"]
	require.NotNil(t, vmid.Minimum)
	assert.Equal(t, 100.0, *vmid.Minimum)
	assert.Equal(t, "pve-vmid", vmid.Format)
	t.Logf("%d operations; %d patterns not checked (Go regexp cannot compile them): %v",
		len(ops), len(s.UncheckedPatterns), s.UncheckedPatterns)
}

func TestLoadErrors(t *testing.T) {
	_, err := apischema.Load(filepath.Join(t.TempDir(), "missing.js.gz"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	for name, data := range map[string]string{
		"not json": "const apiSchema = nonsense;",
		"empty":    "const apiSchema = [];",
		"bad path": `const apiSchema = [{"path": "x", "info": {"GET": {}}}];`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := apischema.Parse([]byte(data))
			assert.ErrorIs(t, err, apischema.ErrFormat)
		})
	}

	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(`const apiSchema = [{"path": "/version", "info": {"GET": {"parameters": {"additionalProperties": 0}}}}];` + "\nlet x = 1;\n"))
	require.NoError(t, zw.Close())
	p := filepath.Join(t.TempDir(), "apidoc.js.gz")
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o600))
	s, err := apischema.Load(p)
	require.NoError(t, err)
	assert.Equal(t, []apischema.OpRef{{Method: "GET", Path: "/version"}}, s.Operations())
}

func TestLookup(t *testing.T) {
	s := load(t)
	tests := []struct {
		method, path string
		template     string
		params       map[string]string
	}{
		{"GET", "/nodes/pve1/qemu/100/config", "/nodes/{node}/qemu/{vmid}/config", map[string]string{"node": "pve1", "vmid": "100"}},
		{"get", "/api2/json/nodes/pve1/qemu/100/config/", "/nodes/{node}/qemu/{vmid}/config", map[string]string{"node": "pve1", "vmid": "100"}},
		{"GET", "/nodes/{node}/qemu/{vmid}/config", "/nodes/{node}/qemu/{vmid}/config", map[string]string{"node": "{node}", "vmid": "{vmid}"}},
		{"GET", "/nodes/pve2/tasks/UPID:pve2:0000A1B2:00C0FFEE:65000000:qmclone:9000:root@pam!t:/status", "/nodes/{node}/tasks/{upid}/status", map[string]string{"node": "pve2", "upid": "UPID:pve2:0000A1B2:00C0FFEE:65000000:qmclone:9000:root@pam!t:"}},
		{"POST", "/nodes/pve1/qemu/9000/status/start", "/nodes/{node}/qemu/{vmid}/status/start", map[string]string{"node": "pve1", "vmid": "9000"}},
		{"GET", "/cluster/nextid", "/cluster/nextid", map[string]string{}},
		{"GET", "/version", "/version", map[string]string{}},
		// Literal segments win over parameters at the same depth.
		{"GET", "/nodes/pve1/qemu/100/agent/network-get-interfaces", "/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces", map[string]string{"node": "pve1", "vmid": "100"}},
		{"GET", "/nodes/pve1/storage/local/status", "/nodes/{node}/storage/{storage}/status", map[string]string{"node": "pve1", "storage": "local"}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			op, ok := s.Lookup(tt.method, tt.path)
			require.True(t, ok)
			assert.Equal(t, tt.template, op.Path)
			assert.Equal(t, tt.params, op.PathParams)
		})
	}
	for _, miss := range [][2]string{
		{"GET", "/nodes/pve1/qemu/100/nonexistent"},
		{"PATCH", "/version"},
		{"DELETE", "/version"},
		{"GET", "/nodes//qemu"},
	} {
		_, ok := s.Lookup(miss[0], miss[1])
		assert.False(t, ok, miss)
	}
	// The template lookup does not bind path parameters.
	op, ok := s.Operation("GET", "/version")
	require.True(t, ok)
	assert.Nil(t, op.PathParams)
}

func TestValidate(t *testing.T) {
	s := load(t)
	const netModels = "e1000, e1000-82540em, e1000-82544gc, e1000-82545em, e1000e, i82551, i82557b, " +
		"i82559er, ne2k_isa, ne2k_pci, pcnet, rtl8139, virtio, vmxnet3"
	tests := []struct {
		name         string
		method, path string
		params       map[string]string
		want         map[string]string
	}{
		{
			name: "clone ok", method: "POST", path: "/nodes/pve1/qemu/9000/clone",
			params: map[string]string{"newid": "101", "full": "1", "name": "web-1", "target": "pve2", "storage": "local-lvm"},
		},
		{
			name: "clone without newid", method: "POST", path: "/nodes/pve1/qemu/9000/clone",
			params: map[string]string{},
			want:   map[string]string{"newid": apischema.MsgMissing},
		},
		{
			name: "vmid not an integer", method: "POST", path: "/nodes/pve1/qemu/abc/clone",
			params: map[string]string{"newid": "101"},
			want:   map[string]string{"vmid": "type check ('integer') failed - got 'abc'"},
		},
		{
			name: "newid below range", method: "POST", path: "/nodes/pve1/qemu/9000/clone",
			params: map[string]string{"newid": "99"},
			want:   map[string]string{"newid": "invalid format - value does not look like a valid VM ID\n"},
		},
		{
			name: "newid above range", method: "POST", path: "/nodes/pve1/qemu/9000/clone",
			params: map[string]string{"newid": "1000000000"},
			want:   map[string]string{"newid": "invalid format - value does not look like a valid VM ID\n"},
		},
		{
			name: "boolean is 0 or 1 only", method: "POST", path: "/nodes/pve1/qemu/9000/clone",
			params: map[string]string{"newid": "101", "full": "true"},
			want:   map[string]string{"full": "type check ('boolean') failed - got 'true'"},
		},
		{
			name: "enum", method: "POST", path: "/nodes/pve1/qemu/9000/clone",
			params: map[string]string{"newid": "101", "format": "vdi"},
			want:   map[string]string{"format": "value 'vdi' does not have a value in the enumeration 'raw, qcow2, vmdk'"},
		},
		{
			name: "bad node name and dns name", method: "POST", path: "/nodes/pve_1/qemu/9000/clone",
			params: map[string]string{"newid": "101", "name": "web_1"},
			want: map[string]string{
				"node": "invalid format - value does not look like a valid node name\n",
				"name": "invalid format - value does not look like a valid DNS name\n",
			},
		},
		{
			name: "unknown parameter", method: "POST", path: "/nodes/pve1/qemu/9000/clone",
			params: map[string]string{"newid": "101", "bogus": "1"},
			want:   map[string]string{"bogus": apischema.MsgNotDefined},
		},
		{
			name: "resize pattern", method: "PUT", path: "/nodes/pve1/qemu/100/resize",
			params: map[string]string{"disk": "scsi0", "size": "5 GB"},
			want:   map[string]string{"size": "value does not match the regex pattern"},
		},
		{
			name: "resize ok", method: "PUT", path: "/nodes/pve1/qemu/100/resize",
			params: map[string]string{"disk": "scsi0", "size": "+5G"},
		},
		{
			name: "resize disk enum and missing size", method: "PUT", path: "/nodes/pve1/qemu/100/resize",
			params: map[string]string{"disk": "scsi99"},
			want: map[string]string{
				"disk": "value 'scsi99' does not have a value in the enumeration '" + enumOf(t, s, "PUT", "/nodes/{node}/qemu/{vmid}/resize", "disk") + "'",
				"size": apischema.MsgMissing,
			},
		},
		{
			name: "task log minimum", method: "GET", path: "/nodes/pve1/tasks/UPID:x/log",
			params: map[string]string{"start": "-1", "limit": "x"},
			want: map[string]string{
				"start": "value must have a minimum value of 0",
				"limit": "type check ('integer') failed - got 'x'",
			},
		},
		{
			name: "nextid vmid optional", method: "GET", path: "/cluster/nextid",
		},
		{
			name: "config ok with indexed and property strings", method: "POST", path: "/nodes/pve1/qemu/100/config",
			params: map[string]string{
				"net0":      "virtio=BC:24:11:00:00:01,bridge=vmbr0,firewall=1",
				"net1":      "virtio,bridge=vmbr0,trunks=10;20-30",
				"ipconfig0": "ip=10.0.0.5/24,gw=10.0.0.1",
				"ipconfig1": "ip=dhcp,ip6=auto",
				"ipconfig2": "ip6=fd00::5/64,gw6=fd00::1",
				"tags":      "web;db_1;a.b",
				"startup":   "order=1,up=30",
				"memory":    "2048",
				"agent":     "enabled=1",
				"cores":     "2",
				"sshkeys":   "ssh-ed25519%20AAAA%20me%40host",
				"delete":    "ide0,tags",
				"scsi0":     "local-lvm:vm-100-disk-0,size=10G",
				"ide2":      "local-lvm:cloudinit,media=cdrom",
			},
		},
		{
			name: "config bad property strings", method: "POST", path: "/nodes/pve1/qemu/100/config",
			params: map[string]string{
				"net1":      "bridge=vmbr0",
				"net2":      "rtl9999,bridge=vmbr0",
				"net3":      "virtio,bridge=vmbr0,tag=5000",
				"net4":      "model=virtio,vlan=5",
				"memory":    "8",
				"ipconfig0": "ip=10.0.0.5,gw=10.0.0.1",
				"ipconfig1": "ip=dhcp,ip6=auto,gw=10.0.0.1,foo=1",
				"tags":      "web;db;bad tag!",
				"agent":     "enabled=maybe",
				"sshkeys":   "ssh-ed25519 AAAA",
				"delete":    "1abc",
				"cores":     "0",
				"onboot":    "yes",
			},
			want: map[string]string{
				"net1":      "invalid format - format error\nnet1.model: " + apischema.MsgMissing + "\n",
				"net2":      "invalid format - format error\nnet2.model: value 'rtl9999' does not have a value in the enumeration '" + netModels + "'\n",
				"net3":      "invalid format - format error\nnet3.tag: value must have a maximum value of 4094\n",
				"net4":      "invalid format - invalid key in comma-separated list property: vlan\n",
				"memory":    "invalid format - format error\nmemory.current: value must have a minimum value of 16\n",
				"ipconfig0": "invalid format - format error\nipconfig0.ip: invalid format - value does not look like a valid ipv4 network configuration\n\n",
				"ipconfig1": "invalid format - invalid key in comma-separated list property: foo\n",
				"tags":      "invalid format - invalid characters in tag\n",
				"agent":     "invalid format - format error\nagent.enabled: type check ('boolean') failed - got 'maybe'\n",
				"sshkeys":   "invalid format - invalid urlencoded string: ssh-ed25519 AAAA\n",
				"delete":    "invalid format - invalid configuration ID '1abc'\n",
				"cores":     "value must have a minimum value of 1",
				"onboot":    "type check ('boolean') failed - got 'yes'",
			},
		},
		{
			name: "list formats", method: "GET", path: "/nodes/pve1/tasks",
			params: map[string]string{"statusfilter": "ok,error;warning", "vmid": "100", "errors": "0"},
		},
		{
			name: "list format element", method: "GET", path: "/nodes/pve1/tasks",
			params: map[string]string{"statusfilter": "ok,bogus"},
			want:   map[string]string{"statusfilter": "invalid format - invalid status 'bogus'\n"},
		},
		{
			name: "address list checks each element", method: "PUT", path: "/nodes/pve1/qemu/100/config",
			params: map[string]string{"nameserver": "1.1.1.1 dns.example bad!", "searchdomain": "example.com"},
			want:   map[string]string{"nameserver": "invalid format - value does not look like a valid address: bad!\n"},
		},
		{
			name: "requires", method: "POST", path: "/nodes/pve1/qemu/100/config",
			params: map[string]string{"force": "1"},
			want:   map[string]string{"delete": "missing property - 'force' requires this property"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op, ok := s.Lookup(tt.method, tt.path)
			require.True(t, ok)
			got := op.Validate(tt.params)
			if tt.want == nil {
				assert.Nil(t, got)
				return
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestProperty(t *testing.T) {
	s := load(t)
	op, ok := s.Operation("POST", "/nodes/{node}/qemu/{vmid}/config")
	require.True(t, ok)
	for name, want := range map[string]string{"net0": "net[n]", "net31": "net[n]", "scsi10": "scsi[n]", "cores": "cores", "tpmstate0": "tpmstate0"} {
		p := op.Property(name)
		require.NotNil(t, p, name)
		assert.Equal(t, want, p.Name)
	}
	for _, name := range []string{"net", "0", "netx", "bogus1"} {
		assert.Nil(t, op.Property(name), name)
	}
}

func enumOf(t *testing.T, s *apischema.Schema, method, path, param string) string {
	t.Helper()
	op, ok := s.Operation(method, path)
	require.True(t, ok)
	return strings.Join(op.Parameters[param].Enum, ", ")
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`const apiSchema = [{"path": "/version", "info": {"GET": {}}}];`))
	f.Add([]byte(`[{"path": "/a", "children": [{"path": "/a/{b}", "info": {"PUT": {"parameters": {"properties": {"b": {"type": "integer", "minimum": "1", "format": {"k": {"type": "boolean", "default_key": 1}}}}}}}}]}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := apischema.Parse(data)
		if err != nil {
			if !errors.Is(err, apischema.ErrFormat) {
				t.Fatalf("error not wrapping ErrFormat: %v", err)
			}
			return
		}
		for _, o := range s.Operations() {
			op, ok := s.Lookup(o.Method, o.Path)
			if !ok {
				t.Fatalf("%s not found by Lookup", o)
			}
			_ = op.Validate(map[string]string{"b": "x", "k": "1,2,=,a=b"})
		}
	})
}

func FuzzValidate(f *testing.F) {
	s := load(f)
	ops := s.Operations()
	f.Add(uint16(0), "net0", "virtio=BC:24:11:00:00:01,bridge=vmbr0")
	f.Add(uint16(1), "memory", "current=2048")
	f.Add(uint16(2), "delete", "a,b;c d\x00e")
	f.Add(uint16(3), "ipconfig0", "ip=dhcp,gw=1.2.3.4,ip6=auto")
	f.Fuzz(func(t *testing.T, i uint16, k, v string) {
		ref := ops[int(i)%len(ops)]
		op, ok := s.Operation(ref.Method, ref.Path)
		if !ok {
			t.Fatalf("%s missing", ref)
		}
		for name := range op.Parameters {
			_ = op.Validate(map[string]string{k: v, strings.Replace(name, "[n]", "1", 1): v})
		}
	})
}
