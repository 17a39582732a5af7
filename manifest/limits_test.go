package manifest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

// TestDecodeLimits: inputs beyond the limits are rejected with an error
// naming file, line and field (issue 12: 999,000 tags passed).
func TestDecodeLimits(t *testing.T) {
	list := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("t,", n), ",") + "]" }
	bigMap := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			fmt.Fprintf(&b, "k%d: 1,", i)
		}
		return strings.TrimSuffix(b.String(), ",") + "}"
	}
	docs := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "---\napiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata: {name: vm-%d}\n", i)
		}
		return b.String()
	}
	jsonDocs := func(n int) string {
		var b strings.Builder
		b.WriteString("[")
		for i := range n {
			if i > 0 {
				b.WriteString(",\n")
			}
			fmt.Fprintf(&b, `{"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "metadata": {"name": "vm-%d"}}`, i)
		}
		return b.String() + "]"
	}
	tests := []struct {
		name  string
		in    string
		line  int
		field string
		msg   string
	}{
		{"issue 12: 999,000 tags", vmHead + "spec:\n  tags: " + list(999_000) + "\n", 1, "", "document is larger than 1 MiB"},
		{"a list of 10,001", vmHead + "spec:\n  tags: " + list(10_001) + "\n", 6, "spec.tags", "list has 10001 items; at most 10000 are allowed"},
		{"a list in a list", vmHead + "spec:\n  disks:\n    - " + list(10_001) + "\n", 7, "spec.disks[0]", "list has 10001 items"},
		{"a map of 10,001", vmHead + "spec:\n  m: " + bigMap(10_001) + "\n", 6, "spec.m", "map has 10001 keys; at most 10000 are allowed"},
		{"a long string", vmHead + "spec:\n  userData: " + strings.Repeat("x", 256<<10+1) + "\n", 6, "spec.userData", "string is 262145 bytes long; at most 262144 (256 KiB)"},
		{"a long key", vmHead + "spec:\n  ? " + strings.Repeat("k", 4<<10+1) + "\n  : 1\n", 6, "spec", "bytes long; at most 4096 are allowed"},
		{"a long label", vmHead[:strings.Index(vmHead, "metadata")] + "metadata:\n  name: a\n  labels: {a: " + strings.Repeat("x", 256<<10+1) + "}\n", 5, "metadata.labels.a", "string is 262145 bytes long"},
		{"129 levels", vmHead + "spec:\n  a: " + strings.Repeat("[", 127) + strings.Repeat("]", 127) + "\n", 6, "spec.a" + strings.Repeat("[0]", 126), "nested more than 128 levels"},
		{"through an alias", vmHead + "spec:\n  a: &a " + list(6_000) + "\n  b: [*a, *a]\n  c: &c {k: 1}\n  d: *c\n", 0, "", ""},
		{"a long string through an alias", "x: &x " + strings.Repeat("y", 256<<10+1) + "\n", 1, "x", "string is 262145 bytes long"},
		{"10,001 documents", docs(10_001), 40_002, "", "more than 10000 documents in one input"},
		{"10,001 JSON values", jsonDocs(10_001), 10_001, "", "more than 10000 documents in one input"},
		{"a JSON value over 1 MiB", `{"spec": {"a": "` + strings.Repeat("x", 1<<20) + `"}}`, 1, "", "value is larger than 1 MiB"},
		{"a document over 1 MiB after a small one", docs(1) + "---\n" + vmHead + "spec:\n  a: |\n" + strings.Repeat("    0123456789\n", 80_000), 5, "", "document is larger than 1 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := manifest.DecodeBytes([]byte(tt.in), "big.yaml")
			if tt.msg == "" {
				require.NoError(t, err)
				require.Len(t, rs, 1)
				return
			}
			require.Error(t, err)
			assert.Nil(t, rs)
			assert.ErrorIs(t, err, errcode.Invalid)
			errs := manifest.Errors(err)
			require.NotEmpty(t, errs)
			e := errs[0]
			assert.Equal(t, "big.yaml", e.File)
			assert.Equal(t, tt.line, e.Line, e.Error())
			assert.Equal(t, tt.field, e.Field)
			assert.Contains(t, e.Msg, tt.msg)
		})
	}
}

// TestDecodeLimitsAccept: values at the limits decode.
func TestDecodeLimitsAccept(t *testing.T) {
	in := vmHead + "spec:\n  tags: [" + strings.TrimSuffix(strings.Repeat("t,", 10_000), ",") + "]\n  s: " +
		strings.Repeat("x", 256<<10) + "\n  deep: " + strings.Repeat("[", 126) + strings.Repeat("]", 126) + "\n"
	rs, err := manifest.DecodeBytes([]byte(in), "ok.yaml")
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Len(t, rs[0].Spec["tags"], 10_000)
}

// TestLoadResourceLimit: more than 10,000 resources in one Load is an
// error naming the file that crossed the limit.
func TestLoadResourceLimit(t *testing.T) {
	dir := t.TempDir()
	for f, n := range map[string]int{"a.yaml": 6000, "b.yaml": 4001} {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "---\napiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata: {name: %s-%d}\n", f[:1], i)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(b.String()), 0o600))
	}
	rs, err := manifest.Load(t.Context(), []string{dir}, manifest.LoadOptions{})
	require.Error(t, err)
	assert.Nil(t, rs)
	assert.Contains(t, err.Error(), "b.yaml: more than 10000 resources in all")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(vmHead), 0o600))
	rs, err = manifest.Load(t.Context(), []string{dir}, manifest.LoadOptions{})
	require.NoError(t, err)
	assert.Len(t, rs, 6001)
}

// TestValidateLimits: Validate applies decoding's limits to resources
// built in code.
func TestValidateLimits(t *testing.T) {
	tags := make([]any, 10_001)
	for i := range tags {
		tags[i] = "t"
	}
	for _, tt := range []struct {
		name, field, msg string
		spec             map[string]any
	}{
		{"list", "spec.tags", "list has 10001 items", map[string]any{"tags": tags}},
		{"string", "spec.s", "string is 262145 bytes long", map[string]any{"s": strings.Repeat("x", 256<<10+1)}},
		{"key", "spec", "bytes long; at most 4096", map[string]any{strings.Repeat("k", 4097): "x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := validVM()
			r.Spec = tt.spec
			errs := manifest.Errors(manifest.Validate(r))
			require.Len(t, errs, 1)
			assert.Equal(t, tt.field, errs[0].Field)
			assert.Contains(t, errs[0].Msg, tt.msg)
		})
	}
}
