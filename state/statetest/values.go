package statetest

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/state"
)

// TrickyStrings are strings a store must keep byte for byte: whitespace
// and line breaks alone or around text, words YAML 1.1 or 1.2 reads as
// something else, numbers in disguise, quotes and indicators, control
// characters, bytes that are not UTF-8, and Unicode (line separators, a
// byte order mark, private use, astral planes).
var TrickyStrings = []string{
	"", " ", "  ", "\t", "\n", "\n\n", "\n\n\n", " \n", "\n ", "\r", "\r\n", "\n\r",
	"a\n", "a\n\n", "\na", "\n a", "\n\na", " a", "a ", " a ", "  lead\ntrail  ",
	"line1\nline2", "line1\n\nline2\n", "  indented\nnot", "a\tb", "a \nb", "a\n b",
	"yes", "no", "Yes", "NO", "y", "n", "on", "off", "true", "false", "True", "FALSE",
	"null", "Null", "NULL", "~", "0x10", "0o17", "010", "0b101", "1e3", "1E3", "-1e-3",
	".inf", "-.inf", "+.inf", ".Inf", ".nan", ".NaN", "1_000", "12:30:45", "190:20:30",
	"2001-12-14t21:59:43.10-05:00", "2002-12-14", "+1", "-0", "0", "1.0", "3.", ".5",
	"<<", "=", "-", "--", "---", "...", "? x", ": x", "- x", "#", "# c", "a #b", "a: b",
	"'", "\"", "''", "\"\"", "\\", "\\n", "|", "|-", ">", ">-", "&a", "*a", "!tag", "!!str",
	"%YAML", "@", "`", "{", "}", "[", "]", "{a: b}", "[a, b]", ",",
	"\x00", "a\x00b", "\x01", "\x1b[31m", "\x7f", "\u0085", "\u00a0", "\u2028", "\u2029", "\ufeff", "\ufeffx",
	"\xff", "a\xc3", "\xed\xa0\x80", "\ue000", "\ue000bAAAA", "\ue000f-0",
	"é", "日本語", "𝄞", "🙂 smile", "\u200b", "ß\nü\n",
}

// TrickyValues returns spec or status values a store must keep exactly:
// the TrickyStrings as values, keys, list items and nested deep, extreme
// int64 and float64 values, and empty maps and lists.
func TrickyValues() map[string]any {
	strs := make([]any, len(TrickyStrings))
	keyed := make(map[string]any, len(TrickyStrings))
	for i, s := range TrickyStrings {
		strs[i] = s
		keyed[s] = int64(i)
	}
	return map[string]any{
		"strings": strs,
		"keys":    keyed,
		"ints": []any{int64(0), int64(-1), int64(1), int64(math.MaxInt64), int64(math.MinInt64),
			int64(1 << 53), int64(1<<53 + 1), int64(-(1<<53 + 1)), int64(9007199254740993)},
		"floats": []any{0.0, math.Copysign(0, -1), 1.0, -1.0, 0.1, 1e21, 1e22, -1e300, math.MaxFloat64, -math.MaxFloat64,
			math.SmallestNonzeroFloat64, 5e-324, 1e-7, 123456789.123456789, 2.5e15, 9007199254740993.0,
			float64(math.MaxInt64), -float64(math.MaxInt64), 3.0e-5},
		"bools":  []any{true, false},
		"nulls":  []any{nil, map[string]any{"n": nil}},
		"empty":  map[string]any{"map": map[string]any{}, "list": []any{}, "string": ""},
		"nested": map[string]any{"a": []any{map[string]any{"b": []any{[]any{"\n", map[string]any{"\n": "\n\n"}}}}}},
	}
}

// ValueID is the ID under which RoundTrip stores name.
func ValueID(name string) manifest.ID {
	return manifest.ID{APIVersion: "test.openctl.io/v1", Kind: "Value", Name: name}
}

// RoundTrip stores a record whose spec and status are v (normalised) in
// s, reads it back with Get and List, and checks that both hold exactly
// the values written. name must be unused in s.
func RoundTrip(ctx context.Context, t testing.TB, s state.Store, name string, v map[string]any) {
	t.Helper()
	want, err := manifest.NormalizeMap(v)
	require.NoError(t, err)
	id := ValueID(name)
	in := &state.Record{
		APIVersion: id.APIVersion, Kind: id.Kind, Name: id.Name,
		Spec: want, Status: want, SpecHash: "h",
	}
	_, err = s.Put(ctx, in)
	require.NoError(t, err)
	got, err := s.Get(ctx, in.ID())
	require.NoError(t, err)
	same(t, want, got.Spec, "spec")
	same(t, want, got.Status, "status")
	all, err := s.List(ctx, state.Filter{Kind: "Value"})
	require.NoError(t, err)
	for _, r := range all {
		if r.Name == name {
			same(t, want, r.Spec, "listed spec")
			return
		}
	}
	t.Errorf("List does not return %s", name)
}

// same compares two normalised values exactly: types, and floats by their
// bits (so that -0 and 0 differ).
func same(t testing.TB, want, got any, path string) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !assert.Truef(t, ok, "%s: got %T (%#v), want a map", path, got, got) {
			return
		}
		assert.Lenf(t, g, len(w), "%s: keys", path)
		for k, e := range w {
			ge, ok := g[k]
			if !assert.Truef(t, ok, "%s: key %q lost", path, k) {
				continue
			}
			same(t, e, ge, fmt.Sprintf("%s[%q]", path, k))
		}
	case []any:
		g, ok := got.([]any)
		if !assert.Truef(t, ok, "%s: got %T (%#v), want a list", path, got, got) {
			return
		}
		if !assert.Lenf(t, g, len(w), "%s: items", path) {
			return
		}
		for i := range w {
			same(t, w[i], g[i], fmt.Sprintf("%s[%d]", path, i))
		}
	case float64:
		g, ok := got.(float64)
		if assert.Truef(t, ok, "%s: got %T (%#v), want float64 %v", path, got, got, w) {
			assert.Equalf(t, math.Float64bits(w), math.Float64bits(g), "%s: got %v, want %v", path, g, w)
		}
	default:
		assert.Equalf(t, want, got, "%s: got %#v, want %#v", path, got, want)
	}
}
