package manifest_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

// vmHead is the start of a valid VirtualMachine manifest (4 lines).
const vmHead = "apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata:\n  name: web-01\n"

func decode(t *testing.T, in string) []*manifest.Resource {
	t.Helper()
	rs, err := manifest.DecodeBytes([]byte(in), "test.yaml")
	require.NoError(t, err)
	return rs
}

func ids(rs []*manifest.Resource) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID().String()
	}
	return out
}

func TestDecodeMultiDocumentYAML(t *testing.T) {
	in := `# leading comment
---
apiVersion: proxmox.openctl.io/v1
kind: VirtualMachine
metadata:
  name: web-01
  namespace: prod
  labels:
    tier: web
  annotations:
    note: "hello"
spec:
  cores: 2
  memory: 4096
  ratio: 1.5
  on: true
  nothing: null
  disks:
    - size: 32G
      storage: local-lvm
---
---
# an empty document above and a comment-only one here
---
apiVersion: k3s.openctl.io/v1beta1
kind: Cluster
metadata:
  name: prod
status:
  ready: false
`
	rs := decode(t, in)
	require.Len(t, rs, 2)
	assert.Equal(t, []string{"proxmox.openctl.io/v1/VirtualMachine/web-01", "k3s.openctl.io/v1beta1/Cluster/prod"}, ids(rs))

	vm := rs[0]
	assert.Equal(t, at("test.yaml", 3, 0), at(vm.Source.File, vm.Source.Line, vm.Source.Index))
	assert.Equal(t, "prod", vm.Metadata.Namespace)
	assert.Equal(t, map[string]string{"tier": "web"}, vm.Metadata.Labels)
	assert.Equal(t, map[string]string{"note": "hello"}, vm.Metadata.Annotations)
	assert.Equal(t, map[string]any{
		"cores":   int64(2),
		"memory":  int64(4096),
		"ratio":   1.5,
		"on":      true,
		"nothing": nil,
		"disks":   []any{map[string]any{"size": "32G", "storage": "local-lvm"}},
	}, vm.Spec)
	assert.Nil(t, vm.Status)

	cl := rs[1]
	assert.Equal(t, at("test.yaml", 25, 1), at(cl.Source.File, cl.Source.Line, cl.Source.Index))
	assert.Nil(t, cl.Spec)
	assert.Equal(t, map[string]any{"ready": false}, cl.Status)
}

func TestDecodeEmptyInputs(t *testing.T) {
	for _, in := range []string{"", "\n\n", "---\n", "---\n---\n", "# just a comment\n", "---\n# c\n---\n\n", "  \t\n"} {
		t.Run(fmt.Sprintf("%q", in), func(t *testing.T) {
			rs, err := manifest.DecodeBytes([]byte(in), "empty.yaml")
			require.NoError(t, err)
			assert.Empty(t, rs)
		})
	}
}

func TestDecodeJSON(t *testing.T) {
	obj := func(name string) string {
		return `{"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "metadata": {"name": "` + name + `"}, "spec": {"cores": 2}}`
	}
	tests := []struct {
		name      string
		in        string
		wantNames []string
		wantLines []int
	}{
		{"object", obj("a"), []string{"a"}, []int{1}},
		{"indented object", "\n\n  " + obj("a") + "\n", []string{"a"}, []int{3}},
		{"multi-line object", "{\n  \"apiVersion\": \"proxmox.openctl.io/v1\",\n  \"kind\": \"VirtualMachine\",\n  \"metadata\": {\"name\": \"a\"},\n  \"spec\": {\"cores\": 2}\n}\n", []string{"a"}, []int{1}},
		{"array", "[\n  " + obj("a") + ",\n\n  " + obj("b") + "\n]\n", []string{"a", "b"}, []int{2, 4}},
		{"array on one line", "[" + obj("a") + "," + obj("b") + "]", []string{"a", "b"}, []int{1, 1}},
		{"stream", obj("a") + "\n" + obj("b") + "\n\n\n" + obj("c"), []string{"a", "b", "c"}, []int{1, 2, 5}},
		{"stream of arrays and objects", "[" + obj("a") + "]\n" + obj("b") + "\n[\n" + obj("c") + "]", []string{"a", "b", "c"}, []int{1, 2, 4}},
		{"empty array", "[]", nil, nil},
		{"byte order mark", "\xef\xbb\xbf" + obj("a"), []string{"a"}, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := manifest.DecodeBytes([]byte(tt.in), "in.json")
			require.NoError(t, err)
			var names []string
			var lines []int
			for i, r := range rs {
				names = append(names, r.Metadata.Name)
				lines = append(lines, r.Source.Line)
				assert.Equal(t, i, r.Source.Index)
				assert.Equal(t, "in.json", r.Source.File)
				assert.Equal(t, map[string]any{"cores": int64(2)}, r.Spec)
			}
			assert.Equal(t, tt.wantNames, names)
			assert.Equal(t, tt.wantLines, lines)
		})
	}
}

func TestDecodeJSONStrings(t *testing.T) {
	// JSON that YAML would read differently or reject: the \/ escape,
	// surrogate pairs, a lone surrogate, characters YAML forbids or treats
	// as line breaks.
	in := `{"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "metadata": {"name": "a"},
"spec": {"slash": "a\/b", "emoji": "\ud83d\ude00", "lone": "x\udc00y", "del": "a` + "\x7f" + `b", "nel": "a` + "\u0085" + `b", "ls": "a` + "\u2028" + `b", "esc": "t\tq\"\\", "bad": "a` + "\xff" + `b"}}`
	rs := decode(t, in)
	require.Len(t, rs, 1)
	assert.Equal(t, map[string]any{
		"slash": "a/b",
		"emoji": "😀",
		"lone":  "x\uFFFDy",
		"del":   "a\x7fb",
		"nel":   "a\u0085b",
		"ls":    "a\u2028b",
		"esc":   "t\tq\"\\",
		"bad":   "a\uFFFDb",
	}, rs[0].Spec)
}

func TestDecodeScalars(t *testing.T) {
	tests := []struct {
		yaml string
		want any
	}{
		{"1", int64(1)},
		{"-42", int64(-42)},
		{"0x1F", int64(31)},
		{"0o17", int64(15)},
		{"1_000", int64(1000)},
		{"9223372036854775807", int64(9223372036854775807)},
		{"99999999999999999999", 99999999999999999999.0},
		{"!!int 18446744073709551616", 18446744073709551616.0},
		{"1.5", 1.5},
		{"1.0", 1.0},
		{"1e3", 1000.0},
		{"-0.25", -0.25},
		{"!!float 2", 2.0},
		{"true", true},
		{"false", false},
		{"!!bool yes", true},
		{"null", nil},
		{"~", nil},
		{"", nil},
		{"hello", "hello"},
		{"'123'", "123"},
		{"yes", "yes"}, // YAML 1.2: a string
		{"2001-12-14", "2001-12-14"},
		{"2001-12-14T21:59:43.10-05:00", "2001-12-14T21:59:43.10-05:00"},
		{"!!binary aGVsbG8=", "hello"},
		{"1e400", "1e400"}, // not a YAML float: a string
		{"<<", "<<"},
		{"!!str 12", "12"},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			rs := decode(t, vmHead+"spec:\n  v: "+tt.yaml+"\n")
			require.Len(t, rs, 1)
			assert.Equal(t, tt.want, rs[0].Spec["v"])
			assert.IsType(t, tt.want, rs[0].Spec["v"])
		})
	}
}

func TestDecodeJSONNumbers(t *testing.T) {
	in := `{"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "metadata": {"name": "a"},
 "spec": {"i": 7, "neg": -7, "f": 7.5, "whole": 7.0, "exp": 1e3, "big": 123456789012345678901234567890, "zero": -0}}`
	rs := decode(t, in)
	require.Len(t, rs, 1)
	assert.Equal(t, map[string]any{
		"i": int64(7), "neg": int64(-7), "f": 7.5, "whole": 7.0, "exp": 1000.0,
		"big": 123456789012345678901234567890.0, "zero": int64(0),
	}, rs[0].Spec)
}

func TestDecodeAliasesAndMerge(t *testing.T) {
	in := vmHead + `spec:
  defaults: &defaults
    cores: 2
    memory: 1024
  extra: &extra
    memory: 2048
    balloon: true
  disk: &disk {size: 32G}
  disks: [*disk, *disk]
  node:
    <<: [*defaults, *extra]
    cores: 4
  single:
    <<: *extra
`
	rs := decode(t, in)
	spec := rs[0].Spec
	assert.Equal(t, []any{map[string]any{"size": "32G"}, map[string]any{"size": "32G"}}, spec["disks"])
	// Own keys win, then earlier merged maps.
	assert.Equal(t, map[string]any{"cores": int64(4), "memory": int64(1024), "balloon": true}, spec["node"])
	assert.Equal(t, map[string]any{"memory": int64(2048), "balloon": true}, spec["single"])
	// Expanded aliases are independent values.
	spec["disks"].([]any)[0].(map[string]any)["size"] = "1G"
	assert.Equal(t, "32G", spec["disks"].([]any)[1].(map[string]any)["size"])
}

func TestDecodeMergeAtTopLevel(t *testing.T) {
	in := `apiVersion: proxmox.openctl.io/v1
kind: VirtualMachine
metadata:
  <<: {name: web-01, labels: {tier: web}}
  namespace: prod
`
	rs := decode(t, in)
	assert.Equal(t, "web-01", rs[0].Metadata.Name)
	assert.Equal(t, "prod", rs[0].Metadata.Namespace)
	assert.Equal(t, map[string]string{"tier": "web"}, rs[0].Metadata.Labels)
}

// wantErr is one expected *errcode.InputError.
type wantErr struct {
	line, col int // col 0: not checked
	field     string
	msg       string // substring of Msg
}

func checkErrors(t *testing.T, err error, want []wantErr) {
	t.Helper()
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Invalid), "errors.Is(err, errcode.Invalid)")
	assert.Equal(t, errcode.Invalid, errcode.Of(err))
	got := manifest.Errors(err)
	var gotS, wantS []string
	for _, e := range got {
		gotS = append(gotS, fmt.Sprintf("%d:%d %s: %s", e.Line, e.Column, e.Field, e.Msg))
	}
	for _, w := range want {
		wantS = append(wantS, fmt.Sprintf("%d:%d %s: %s", w.line, w.col, w.field, w.msg))
	}
	require.Len(t, got, len(want), "got:\n%s\nwant:\n%s", strings.Join(gotS, "\n"), strings.Join(wantS, "\n"))
	for i, w := range want {
		e := got[i]
		assert.Equal(t, w.line, e.Line, "line of %s", gotS[i])
		if w.col != 0 {
			assert.Equal(t, w.col, e.Column, "column of %s", gotS[i])
		}
		assert.Equal(t, w.field, e.Field, "field of %s", gotS[i])
		assert.Contains(t, e.Msg, w.msg, "message of %s", gotS[i])
		assert.Equal(t, "test.yaml", e.File)
	}
}

func TestDecodeStrictness(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []wantErr
	}{
		{"malformed YAML", vmHead + "spec:\n  a: 1\n b: 2\n", []wantErr{{7, 0, "", "invalid YAML: did not find expected key"}}},
		{"unclosed flow list", vmHead + "spec:\n  cpu: [1, 2\n  mem: 2\n", []wantErr{{6, 0, "", "invalid YAML: did not find expected ',' or ']'"}}},
		{"bad escape", vmHead + "spec:\n  a: \"\\q\"\n", []wantErr{{6, 0, "", "found unknown escape character"}}},
		{"tab indentation", "apiVersion: x\n\tkind: y\n", []wantErr{{2, 0, "", "tab character"}}},
		{"control character", vmHead + "spec:\n  a: \x01\n", []wantErr{{6, 6, "", "control characters are not allowed"}}},
		{"not UTF-8", vmHead + "spec:\n  a: \xff\n", []wantErr{{6, 6, "", "invalid leading UTF-8 octet"}}},
		{"unknown anchor", vmHead + "spec:\n  a: *nope\n", []wantErr{{6, 6, "", "unknown anchor 'nope'"}}},
		{"unknown top-level field", vmHead + "specc:\n  a: 1\n", []wantErr{{5, 1, "specc", `unknown field "specc"`}}},
		{"unknown metadata field", vmHead + "  uid: x\n", []wantErr{{5, 3, "metadata.uid", `unknown field "uid"`}}},
		{"missing everything", "spec: {}\n", []wantErr{
			{1, 1, "apiVersion", "missing required field apiVersion"},
			{1, 1, "kind", "missing required field kind"},
			{1, 1, "metadata", "missing required field metadata"},
		}},
		{"missing name", "apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata:\n  namespace: x\n", []wantErr{{4, 3, "metadata.name", "missing required field metadata.name"}}},
		{"bad name", "apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata:\n  name: Web_01\n", []wantErr{{4, 9, "metadata.name", `name "Web_01" is not a DNS-1123 subdomain`}}},
		{"empty name", "apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata:\n  name: ''\n", []wantErr{{4, 9, "metadata.name", "name is empty"}}},
		{"long name", "apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata:\n  name: " + strings.Repeat("a", 64) + "\n", []wantErr{{4, 9, "metadata.name", "longer than 63"}}},
		{"bad namespace", vmHead + "  namespace: Prod\n", []wantErr{{5, 14, "metadata.namespace", `namespace "Prod" is not a DNS-1123 label`}}},
		{"bad apiVersion", "apiVersion: v1\nkind: VirtualMachine\nmetadata:\n  name: a\n", []wantErr{{1, 13, "apiVersion", `apiVersion "v1" is not of the form <group>/<version>`}}},
		{"bad kind", "apiVersion: proxmox.openctl.io/v1\nkind: virtual-machine\nmetadata:\n  name: a\n", []wantErr{{2, 7, "kind", `kind "virtual-machine" is not a valid kind`}}},
		{"apiVersion not a string", "apiVersion: [a]\nkind: VirtualMachine\nmetadata:\n  name: a\n", []wantErr{{1, 13, "apiVersion", "want a string, got a list"}}},
		{"kind a number", "apiVersion: proxmox.openctl.io/v1\nkind: 5\nmetadata:\n  name: a\n", []wantErr{{2, 7, "kind", "want a string, got an integer"}}},
		{"name a map", "apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata:\n  name: {a: 1}\n", []wantErr{{4, 9, "metadata.name", "want a string, got a map"}}},
		{"metadata not a map", "apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata: web-01\n", []wantErr{{3, 11, "metadata", "want a map, got a string"}}},
		{"metadata null", "apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata:\n", []wantErr{{3, 10, "metadata", "want a map, got null"}}},
		{"labels a list", vmHead + "  labels: [a, b]\n", []wantErr{{5, 11, "metadata.labels", "want a map of strings, got a list"}}},
		{"label values not strings", vmHead + "  labels:\n    a: 1\n    b: [x]\n    c:\n    d: true\n", []wantErr{
			{6, 8, "metadata.labels.a", "want a string, got an integer"},
			{7, 8, "metadata.labels.b", "want a string, got a list"},
			{8, 7, "metadata.labels.c", "want a string, got null"},
			{9, 8, "metadata.labels.d", "want a string, got a bool"},
		}},
		{"empty label key", vmHead + "  labels:\n    '': x\n", []wantErr{{6, 5, "metadata.labels", "label key is empty"}}},
		{"empty annotation key", vmHead + "  annotations:\n    \"\": x\n", []wantErr{{6, 5, "metadata.annotations", "annotation key is empty"}}},
		{"spec a list", vmHead + "spec: [1]\n", []wantErr{{5, 7, "spec", "want a map, got a list"}}},
		{"status a string", vmHead + "status: up\n", []wantErr{{5, 9, "status", "want a map, got a string"}}},
		{"duplicate top-level key", vmHead + "kind: Other\n", []wantErr{{5, 1, "kind", `duplicate key "kind" (first at line 2)`}}},
		{"duplicate key in spec", vmHead + "spec:\n  disks:\n    - size: 1\n      size: 2\n", []wantErr{{8, 7, "spec.disks[0].size", `duplicate key "size" (first at line 7)`}}},
		{"duplicate merge key", vmHead + "spec:\n  a: &a {x: 1}\n  b:\n    <<: *a\n    <<: *a\n", []wantErr{{9, 5, "spec.b", "duplicate merge key <<"}}},
		{"merge of a scalar", vmHead + "spec:\n  b:\n    <<: 5\n", []wantErr{{7, 9, "spec.b", "merge key << wants a map or a list of maps, got an integer"}}},
		{"non-string keys", vmHead + "spec:\n  80: http\n  true: 1\n  ? [a]\n  : b\n  ~: 1\n", []wantErr{
			{6, 3, "spec", `map key 80 is an integer, want a string (quote it: "80")`},
			{7, 3, "spec", "map key true is a bool"},
			{8, 5, "spec", "map key is a list, want a string"},
			{10, 3, "spec", "map key ~ is null"},
		}},
		{"non-string top-level key", "1: x\n" + vmHead, []wantErr{{1, 1, "", "map key 1 is an integer"}}},
		{"document a list", "- a\n- b\n", []wantErr{{1, 1, "", "want a map, got a list"}}},
		{"document a scalar", "---\nhello\n", []wantErr{{2, 1, "", "want a map, got a string"}}},
		{"explicit null document", "null\n", []wantErr{{1, 1, "", "want a map, got null"}}},
		{"infinity", vmHead + "spec:\n  a: .inf\n", []wantErr{{6, 6, "spec.a", ".inf is not a finite number"}}},
		{"NaN", vmHead + "spec:\n  a: [.NaN]\n", []wantErr{{6, 7, "spec.a[0]", "not a finite number"}}},
		{"bad explicit int", vmHead + "spec:\n  a: !!int 1.5\n", []wantErr{{6, 6, "spec.a", `cannot read "1.5" as an integer`}}},
		{"huge explicit int", vmHead + "spec:\n  a: !!int " + strings.Repeat("9", 400) + "\n", []wantErr{{6, 6, "spec.a", "out of range"}}},
		{"bad explicit float", vmHead + "spec:\n  a: !!float x\n", []wantErr{{6, 6, "spec.a", `cannot read "x" as a number`}}},
		{"float out of range", vmHead + "spec:\n  a: !!float 1e400\n", []wantErr{{6, 6, "spec.a", "out of range"}}},
		{"bad explicit bool", vmHead + "spec:\n  a: !!bool maybe\n", []wantErr{{6, 6, "spec.a", `cannot read "maybe" as a bool`}}},
		{"bad binary", vmHead + "spec:\n  a: !!binary '*'\n", []wantErr{{6, 6, "spec.a", "not valid base64"}}},
		{"custom tag", vmHead + "spec:\n  a: !secret x\n", []wantErr{{6, 6, "spec.a", "unsupported tag !secret"}}},
		{"set tag", vmHead + "spec:\n  a: !!set {x}\n", []wantErr{{6, 6, "spec.a", "unsupported tag !!set on a map"}}},
		{"recursive alias", vmHead + "spec: &a\n  x: *a\n", []wantErr{{6, 6, "spec.x", "alias *a refers to a node that contains it"}}},
		{"several documents", vmHead + "specc: 1\n---\n" + vmHead + "---\nkind: 5\n", []wantErr{
			{5, 1, "specc", "unknown field"},
			{12, 1, "apiVersion", "missing required field apiVersion"},
			{12, 1, "metadata", "missing required field metadata"},
			{12, 7, "kind", "want a string, got an integer"},
		}},
		{"JSON syntax error", "{\"a\": 1,\n \"b\": x}", []wantErr{{2, 7, "", "invalid JSON: invalid character 'x'"}}},
		{"JSON truncated", "[{\"apiVersion\": \"proxmox.openctl.io/v1\"", []wantErr{{1, 40, "", "invalid JSON: unexpected end of input"}}},
		{"JSON number out of range", "{\"apiVersion\": \"proxmox.openctl.io/v1\", \"kind\": \"VirtualMachine\", \"metadata\": {\"name\": \"a\"},\n \"spec\": {\"a\": [1,\n  1e400]}}", []wantErr{{3, 3, "spec.a[1]", "number 1e400 is out of range"}}},
		{"JSON array element errors", "[\n {\"apiVersion\": \"proxmox.openctl.io/v1\", \"kind\": \"VirtualMachine\", \"metadata\": {\"name\": \"a\", \"x\": 1}},\n 7]", []wantErr{
			{2, 94, "metadata.x", `unknown field "x"`},
			{3, 2, "", "want a map, got an integer"},
		}},
		{"JSON duplicate key", "\n{\"apiVersion\": \"proxmox.openctl.io/v1\", \"kind\": \"VirtualMachine\", \"metadata\": {\"name\": \"a\"}, \"kind\": \"X\"}", []wantErr{{2, 94, "kind", `duplicate key "kind" (first at line 2)`}}},
		{"JSON stream error in second value", "{\"apiVersion\": \"proxmox.openctl.io/v1\", \"kind\": \"VirtualMachine\", \"metadata\": {\"name\": \"a\"}}\n\n  {\"apiVersion\": \"proxmox.openctl.io/v1\", \"kind\": \"VirtualMachine\", \"metadata\": {\"name\": \"B\"}}", []wantErr{{3, 90, "metadata.name", `name "B" is not a DNS-1123 subdomain`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := manifest.DecodeBytes([]byte(tt.in), "test.yaml")
			assert.Nil(t, rs)
			checkErrors(t, err, tt.want)
		})
	}
}

func TestDecodeAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 12; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	tests := []struct {
		name string
		in   string
		want string // or "expands to more than" for deep alias chains, which are also huge
	}{
		{"billion laughs", vmHead + "spec:\n" + indent(b.String()), "expands to more than 1000000 values"},
		{"merge bomb", vmHead + "spec:\n" + indent(mergeBomb()), "expands to more than 1000000 values"},
		{"deep alias chain", vmHead + "spec:\n" + indent(aliasChain(200)), "nested more than 128 levels"},
		{"alias deepens nesting", vmHead + "spec:\n  a: &a " + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + "\n  b: " + strings.Repeat("[", 2000) + "*a" + strings.Repeat("]", 2000) + "\n", "nested more than 128 levels"},
		{"deep nesting", vmHead + "spec:\n  a: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n", "exceeded max depth"},
		{"JSON deep nesting", "{\"spec\": " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "}", "exceeded max depth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := manifest.DecodeBytes([]byte(tt.in), "bomb.yaml")
			require.Error(t, err)
			assert.ErrorIs(t, err, errcode.Invalid)
			if !strings.Contains(err.Error(), "expands to more than") {
				assert.Contains(t, err.Error(), tt.want)
			}
			assert.Less(t, time.Since(start), 5*time.Second)
		})
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}

// mergeBomb builds maps that each merge the previous one ten times.
func mergeBomb() string {
	var b strings.Builder
	b.WriteString("m0: &m0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10}\n")
	for i := 1; i < 12; i++ {
		fmt.Fprintf(&b, "m%d: &m%d\n  <<: [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*m%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// aliasChain builds n anchors, each a list holding the previous one.
func aliasChain(n int) string {
	var b strings.Builder
	b.WriteString("c0: &c0 [x]\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "c%d: &c%d [*c%d]\n", i, i, i-1)
	}
	return b.String()
}

func TestDecodeTooLarge(t *testing.T) {
	in := vmHead + "spec:\n  a: " + strings.Repeat("x", 5<<20) + "\n"
	_, err := manifest.DecodeBytes([]byte(in), "big.yaml")
	checkFile := manifest.Errors(err)
	require.Len(t, checkFile, 1)
	assert.Contains(t, checkFile[0].Msg, "larger than 4 MiB")
	_, err = manifest.Decode(strings.NewReader(in), "big.yaml")
	assert.ErrorIs(t, err, errcode.Invalid)
}

func TestDecodeErrorCap(t *testing.T) {
	var b strings.Builder
	b.WriteString(vmHead + "spec:\n")
	for i := 0; i < 80; i++ {
		fmt.Fprintf(&b, "  %d: x\n", i)
	}
	_, err := manifest.DecodeBytes([]byte(b.String()), "many.yaml")
	es := manifest.Errors(err)
	require.Len(t, es, 51)
	assert.Equal(t, 6, es[0].Line)
	assert.Equal(t, 55, es[49].Line)
	assert.Equal(t, "... and 30 more errors", es[50].Msg)
	assert.ErrorIs(t, es[50], errcode.Invalid)
}

func TestDecodeReader(t *testing.T) {
	rs, err := manifest.Decode(strings.NewReader(vmHead), "<stdin>")
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, "<stdin>", rs[0].Source.File)

	_, err = manifest.Decode(iotestErrReader{}, "broken")
	require.Error(t, err)
	assert.ErrorIs(t, err, errTestRead)
	assert.Contains(t, err.Error(), "broken: cannot read")
}

var errTestRead = errors.New("read failed")

type iotestErrReader struct{}

func (iotestErrReader) Read([]byte) (int, error) { return 0, errTestRead }

func TestErrorsJoinedSorted(t *testing.T) {
	in := vmHead + "zzz: 1\naaa: 2\n"
	_, err := manifest.DecodeBytes([]byte(in), "f.yaml")
	assert.Equal(t, "f.yaml:5:1: zzz: unknown field \"zzz\" (want apiVersion, kind, metadata, spec or status)\n"+
		"f.yaml:6:1: aaa: unknown field \"aaa\" (want apiVersion, kind, metadata, spec or status)", err.Error())
	var e *errcode.InputError
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "zzz", e.Field)
	assert.Nil(t, manifest.Errors(nil))
	assert.Nil(t, manifest.Errors(errors.New("other")))
	assert.Len(t, manifest.Errors(fmt.Errorf("wrapped: %w", err)), 2)
}

// at is a Source's file, line and index, to compare: a decoded Source also
// holds its input.
func at(file string, line, index int) string { return fmt.Sprintf("%s:%d #%d", file, line, index) }
