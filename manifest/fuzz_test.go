package manifest_test

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

// decodeSeeds are valid and malformed manifests for FuzzDecode.
var decodeSeeds = []string{
	// Valid.
	"apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(vmYAML("a"), "\n"), "\n", "\n  ") + "\n",
	"apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: \"\"\nitems: []\n",
	`{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "metadata": {"name": "a"}}]}`,
	// A List's problems.
	"apiVersion: v1\nkind: List\nitems: 3\n",
	"apiVersion: v1\nkind: List\nextra: 1\nitems:\n- {apiVersion: a.openctl.io/v1, kind: K}\n",
	vmHead,
	vmHead + "spec:\n  cores: 2\n  disks:\n    - size: 32G\n  ratio: 0.5\n  on: true\n  none: ~\nstatus:\n  ip: 10.0.0.5\n",
	vmHead + "  namespace: prod\n  labels: {tier: web}\n  annotations:\n    note: |\n      multi\n      line\n---\n---\n" + vmYAML("web-02"),
	vmHead + "spec:\n  base: &b {x: 1, y: [1, 2]}\n  copy: *b\n  merged:\n    <<: [*b, {z: 3}]\n    x: 2\n",
	vmHead + "spec:\n  t: 2001-12-14T21:59:43.10-05:00\n  bin: !!binary aGVsbG8=\n  big: 99999999999999999999\n  hex: 0x1F\n  s: !!str 12\n",
	`{"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "metadata": {"name": "a"}, "spec": {"a": [1, 2.5, "x\/y\ud83d\ude00", null, true]}}`,
	"[\n" + `{"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "metadata": {"name": "a"}},` + "\n" + `{"apiVersion": "proxmox.openctl.io/v1", "kind": "Disk", "metadata": {"name": "b"}}` + "\n]",
	`{"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "metadata": {"name": "a"}}` + "\n" + `{"apiVersion": "k3s.openctl.io/v1", "kind": "Cluster", "metadata": {"name": "b"}, "status": {}}`,
	// Malformed.
	"",
	"---\n",
	vmHead + "specc: 1\n",
	vmHead + "spec:\n  a: [1\n",
	vmHead + "spec:\n  80: x\n  a: 1\n  a: 2\n",
	"apiVersion: v1\nkind: vm\nmetadata:\n  name: Web_01\n  labels: [a]\n",
	vmHead + "spec: &a\n  x: *a\n",
	vmHead + "spec:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n  f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n  g: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n",
	vmHead + "spec:\n  a: .inf\n  b: !!int x\n  c: !custom y\n",
	`{"apiVersion": "proxmox.openctl.io/v1", "kind": 5} {"a": 1e400} 7 [`,
	"[{}, [], \"x\"]",
	"{\"a\": \"\\ud800\"}",
	"a: \x01\n",
	"\xff\xfe",
	"%YAML 1.1\n---\n" + vmHead,
	"? [a]\n: b\n",
}

// maxInput is the input size limit documented for DecodeBytes.
const maxInput = 4 << 20

func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := manifest.DecodeBytes(data, "fuzz.yaml")
		if err != nil {
			if !errors.Is(err, errcode.Invalid) {
				t.Fatalf("error is not errcode.Invalid: %v", err)
			}
			if len(manifest.Errors(err)) == 0 {
				t.Fatalf("error holds no *errcode.InputError: %v", err)
			}
			if rs != nil {
				t.Fatalf("resources returned with an error")
			}
			return
		}
		for i, r := range rs {
			if err := manifest.Validate(r); err != nil {
				t.Fatalf("decoded resource %d does not validate: %v", i, err)
			}
			if r.Source.File != "fuzz.yaml" || r.Source.Line < 1 || r.Source.Index != i {
				t.Fatalf("resource %d has source %+v", i, r.Source)
			}
			// Each spec field is found again, at a place in the input.
			for k := range r.Spec {
				if line, col := r.Source.Field("spec." + k); line < 1 || col < 1 {
					t.Fatalf("resource %d: spec.%s found at %d:%d", i, k, line, col)
				}
			}
		}

		var out bytes.Buffer
		if err := manifest.EncodeYAML(&out, rs...); err != nil {
			t.Fatalf("EncodeYAML: %v", err)
		}
		if out.Len() > maxInput {
			return // aliases expanded past what decoding accepts
		}
		back, err := manifest.DecodeBytes(out.Bytes(), "again.yaml")
		if err != nil {
			t.Fatalf("EncodeYAML output does not decode: %v\n%s", err, out.String())
		}
		compareResources(t, rs, back, true)

		out.Reset()
		if err := manifest.EncodeJSON(&out, rs...); err != nil {
			t.Fatalf("EncodeJSON: %v", err)
		}
		if out.Len() > maxInput {
			return
		}
		back, err = manifest.DecodeBytes(out.Bytes(), "again.json")
		if err != nil {
			t.Fatalf("EncodeJSON output does not decode: %v\n%s", err, out.String())
		}
		compareResources(t, rs, back, allUTF8(rs))

		// The same resources as a List read back as its items.
		for _, l := range []struct {
			name   string
			encode func(io.Writer, ...*manifest.Resource) error
			values bool
		}{{"list.yaml", manifest.EncodeYAMLList, true}, {"list.json", manifest.EncodeJSONList, allUTF8(rs)}} {
			out.Reset()
			if err := l.encode(&out, rs...); err != nil {
				t.Fatalf("%s: %v", l.name, err)
			}
			if out.Len() > maxInput/4 {
				continue // one document: larger than decoding accepts
			}
			back, err = manifest.DecodeBytes(out.Bytes(), l.name)
			if err != nil {
				t.Fatalf("%s output does not decode: %v\n%s", l.name, err, out.String())
			}
			compareResources(t, rs, back, l.values)
		}
	})
}

// compareResources fails unless got has the same IDs and metadata as want
// and, if values is set, spec and status of equal hash.
func compareResources(t *testing.T, want, got []*manifest.Resource, values bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("round trip gave %d resources, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.ID() != g.ID() {
			t.Fatalf("resource %d: round trip gave %v, want %v", i, g.ID(), w.ID())
		}
		if !values {
			continue
		}
		if w.Metadata.Namespace != g.Metadata.Namespace ||
			manifest.Hash(w.Metadata.Labels) != manifest.Hash(g.Metadata.Labels) ||
			manifest.Hash(w.Metadata.Annotations) != manifest.Hash(g.Metadata.Annotations) {
			t.Fatalf("resource %d: metadata %#v became %#v", i, w.Metadata, g.Metadata)
		}
		if manifest.Hash(w.Spec) != manifest.Hash(g.Spec) || manifest.Hash(w.Status) != manifest.Hash(g.Status) {
			t.Fatalf("resource %d: spec/status %#v / %#v became %#v / %#v", i, w.Spec, w.Status, g.Spec, g.Status)
		}
	}
}

// allUTF8 reports whether every string in the resources is valid UTF-8
// (JSON replaces bad bytes, so only then does a JSON round trip preserve
// values).
func allUTF8(rs []*manifest.Resource) bool {
	var ok func(v any) bool
	ok = func(v any) bool {
		switch x := v.(type) {
		case string:
			return utf8.ValidString(x)
		case []any:
			for _, e := range x {
				if !ok(e) {
					return false
				}
			}
		case map[string]any:
			for k, e := range x {
				if !utf8.ValidString(k) || !ok(e) {
					return false
				}
			}
		}
		return true
	}
	for _, r := range rs {
		for k, v := range r.Metadata.Labels {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return false
			}
		}
		for k, v := range r.Metadata.Annotations {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return false
			}
		}
		if !ok(r.Spec) || !ok(r.Status) {
			return false
		}
	}
	return true
}

func FuzzField(f *testing.F) {
	for _, p := range []string{
		"status.ip", "spec.cores", "spec.disks[0].size", "spec.disks[0].tags[1]", "spec.grid[0][1]",
		"spec.memory", "spec.disks[9]", "spec.cores.count", "spec[0]", "", ".", "..", "[", "]", "[0]",
		"spec.disks[", "spec.disks[0", "spec.disks[]", "spec.disks[-1]", "spec.disks[+1]", "spec.disks[1e3]",
		"spec.disks[99999999999999999999]", "spec.[0]", "spec.disks[0]x", "a.b.c.d.e", "spec.empty.x", "é.ü[0]",
	} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, path string) {
		obj := testObject()
		v, found, err := manifest.Field(obj, path)
		if err != nil {
			if !errors.Is(err, errcode.Invalid) {
				t.Fatalf("Field(%q) error is not Invalid: %v", path, err)
			}
			if found || v != nil {
				t.Fatalf("Field(%q) returned a value with an error", path)
			}
			if !strings.Contains(err.Error(), path) && !strings.Contains(err.Error(), strconv.Quote(path)) {
				t.Fatalf("Field(%q) error does not name the path: %v", path, err)
			}
		} else if !found && v != nil {
			t.Fatalf("Field(%q) returned a value but not found", path)
		}

		// What SetField sets can be read back.
		obj = testObject()
		serr := manifest.SetField(obj, path, "marker")
		if serr != nil {
			if !errors.Is(serr, errcode.Invalid) {
				t.Fatalf("SetField(%q) error is not Invalid: %v", path, serr)
			}
			return
		}
		got, found, err := manifest.Field(obj, path)
		if err != nil || !found || got != "marker" {
			t.Fatalf("after SetField(%q), Field = %v, %v, %v", path, got, found, err)
		}
	})
}
