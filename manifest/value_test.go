package manifest_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

type (
	myInt    int
	myFloat  float32
	myString string
	myBool   bool
	myMap    map[string]int
	mySlice  []uint8
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"nil", nil, nil},
		{"string", "s", "s"},
		{"bool", true, true},
		{"int", 1, int64(1)},
		{"int8", int8(-8), int64(-8)},
		{"int16", int16(16), int64(16)},
		{"int32", int32(-32), int64(-32)},
		{"int64", int64(64), int64(64)},
		{"uint", uint(1), int64(1)},
		{"uint8", uint8(8), int64(8)},
		{"uint16", uint16(16), int64(16)},
		{"uint32", uint32(32), int64(32)},
		{"uint64", uint64(64), int64(64)},
		{"uint64 max", uint64(math.MaxUint64), float64(math.MaxUint64)},
		{"float32", float32(1.5), 1.5},
		{"float64", 2.25, 2.25},
		{"json int", json.Number("12"), int64(12)},
		{"json float", json.Number("1.5"), 1.5},
		{"named int", myInt(3), int64(3)},
		{"named float", myFloat(0.5), 0.5},
		{"named string", myString("x"), "x"},
		{"named bool", myBool(true), true},
		{"typed map", map[string]int{"a": 1}, map[string]any{"a": int64(1)}},
		{"named map", myMap{"b": 2}, map[string]any{"b": int64(2)}},
		{"string slice", []string{"a", "b"}, []any{"a", "b"}},
		{"byte slice", mySlice{1, 2}, []any{int64(1), int64(2)}},
		{"array", [2]int{1, 2}, []any{int64(1), int64(2)}},
		{"any map", map[any]any{"k": []any{uint(1)}}, map[string]any{"k": []any{int64(1)}}},
		{"nested", map[string]any{"a": []map[string]float32{{"x": 1}}}, map[string]any{"a": []any{map[string]any{"x": 1.0}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := manifest.Normalize(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNormalizeErrors(t *testing.T) {
	loop := map[string]any{}
	loop["self"] = loop
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"NaN", map[string]any{"a": math.NaN()}, "manifest: a: want a finite number"},
		{"infinity", []any{1, math.Inf(-1)}, "manifest: [1]: want a finite number"},
		{"float32 infinity", float32(math.Inf(1)), "manifest: (root): want a finite number"},
		{"struct", map[string]any{"a": struct{}{}}, "manifest: a: want a string, number, bool, list or map, got struct {}"},
		{"pointer", []any{new(int)}, "got *int"},
		{"channel", map[string]any{"c": make(chan int)}, "got chan int"},
		{"int map key", map[int]string{1: "a"}, "want a map with string keys"},
		{"non-string any key", map[any]any{1: "a"}, "map key 1 is a int, want a string"},
		{"bad json number", json.Number("x"), "want a number"},
		{"deep path", map[string]any{"a": []any{map[string]any{"b": func() {}}}}, "manifest: a[0].b: want"},
		{"self-containing", loop, "nested more than 10000 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := manifest.Normalize(tt.in)
			require.Error(t, err)
			assert.ErrorIs(t, err, errcode.Invalid)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestNormalizeMap(t *testing.T) {
	m, err := manifest.NormalizeMap(nil)
	require.NoError(t, err)
	assert.Nil(t, m)
	m, err = manifest.NormalizeMap(map[string]any{"a": 1})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a": int64(1)}, m)
	_, err = manifest.NormalizeMap(map[string]any{"a": math.NaN()})
	assert.Error(t, err)
}

func TestTypeName(t *testing.T) {
	for v, want := range map[any]string{nil: "null", "s": "string", true: "bool", int64(1): "integer", 1.5: "number", 1: "int"} {
		assert.Equal(t, want, manifest.TypeName(v))
	}
	assert.Equal(t, "map", manifest.TypeName(map[string]any{}))
	assert.Equal(t, "list", manifest.TypeName([]any{}))
}

func TestJoinPath(t *testing.T) {
	assert.Equal(t, "cpu", manifest.JoinPath("", "cpu"))
	assert.Equal(t, "spec.cpu", manifest.JoinPath("spec", "cpu"))
	assert.Equal(t, "spec.disks[0]", manifest.JoinIndex("spec.disks", 0))
	assert.Equal(t, "[3]", manifest.JoinIndex("", 3))
}

func testObject() map[string]any {
	return map[string]any{
		"spec": map[string]any{
			"cores": int64(2),
			"disks": []any{
				map[string]any{"size": "32G", "tags": []any{"a", "b"}},
				"not-a-map",
			},
			"empty": nil,
			"grid":  []any{[]any{int64(1), int64(2)}},
		},
		"status": map[string]any{"ip": "10.0.0.5"},
	}
}

func TestField(t *testing.T) {
	tests := []struct {
		path      string
		want      any
		wantFound bool
		wantErr   string
	}{
		{"status.ip", "10.0.0.5", true, ""},
		{"spec.cores", int64(2), true, ""},
		{"spec.disks[0].size", "32G", true, ""},
		{"spec.disks[0].tags[1]", "b", true, ""},
		{"spec.grid[0][1]", int64(2), true, ""},
		{"spec.disks", testObject()["spec"].(map[string]any)["disks"], true, ""},
		{"spec.empty", nil, true, ""},
		// Missing is not an error.
		{"spec.memory", nil, false, ""},
		{"nothing.at.all", nil, false, ""},
		{"spec.disks[5]", nil, false, ""},
		{"spec.disks[0].tags[9]", nil, false, ""},
		{"spec.disks[0].missing.deeper", nil, false, ""},
		// The wrong type is.
		{"spec.cores.count", nil, false, "manifest: field spec.cores.count: spec.cores is an integer, not a map"},
		{"spec.disks.size", nil, false, "manifest: field spec.disks.size: spec.disks is a list, not a map"},
		{"spec.disks[1].size", nil, false, "spec.disks[1] is a string, not a map"},
		{"spec[0]", nil, false, "manifest: field spec[0]: spec is a map, not a list"},
		{"spec.empty.x", nil, false, "spec.empty is null, not a map"},
		{"status.ip[0]", nil, false, "status.ip is a string, not a list"},
		// Malformed paths.
		{"", nil, false, "empty field path"},
		{"spec..cores", nil, false, `field path "spec..cores": empty key`},
		{".spec", nil, false, "empty key"},
		{"spec.", nil, false, "empty key"},
		{"[0]", nil, false, "empty key"},
		{"spec.disks[", nil, false, "malformed index"},
		{"spec.disks[0", nil, false, "malformed index"},
		{"spec.disks[0]x", nil, false, "malformed index"},
		{"spec.disks[]", nil, false, `index "" is not a non-negative integer`},
		{"spec.disks[-1]", nil, false, `index "-1" is not a non-negative integer`},
		{"spec.disks[+1]", nil, false, `index "+1"`},
		{"spec.disks[-0]", nil, false, `index "-0"`},
		{"spec.disks[a]", nil, false, `index "a"`},
		{"spec.disks[99999999999999999999]", nil, false, "is not a non-negative integer"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, found, err := manifest.Field(testObject(), tt.path)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, errcode.Invalid)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.False(t, found)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantFound, found)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestSetField(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		value   any
		wantErr string
	}{
		{"existing", "spec.cores", int64(4), ""},
		{"new key", "spec.memory", int64(1024), ""},
		{"creates maps", "status.net.eth0.ip", "10.0.0.9", ""},
		{"replaces null", "spec.empty.x", true, ""},
		{"list element", "spec.disks[0].size", "64G", ""},
		{"whole list element", "spec.disks[1]", map[string]any{"size": "1G"}, ""},
		{"nested list", "spec.grid[0][0]", int64(9), ""},
		{"index past end", "spec.disks[2]", "x", "index 2 out of range"},
		{"missing list", "spec.nics[0]", "x", "nics does not exist"},
		{"through a scalar", "spec.cores.count", int64(1), "is an integer, not a map"},
		{"index into a map", "spec[0]", "x", "is a map, not a list"},
		{"malformed", "spec..x", 1, "empty key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := testObject()
			err := manifest.SetField(obj, tt.path, tt.value)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, errcode.Invalid)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			got, found, err := manifest.Field(obj, tt.path)
			require.NoError(t, err)
			assert.True(t, found)
			assert.Equal(t, tt.value, got)
		})
	}

	// A nil map cannot be set into, and must not panic.
	assert.Error(t, manifest.SetField(nil, "a", 1))
	assert.Error(t, manifest.SetField(map[string]any{"a": map[string]any(nil)}, "a.b", 1))
}

func TestHash(t *testing.T) {
	base := testObject()
	h := manifest.Hash(base)
	assert.Len(t, h, 64)

	t.Run("map order does not matter", func(t *testing.T) {
		for range 20 {
			assert.Equal(t, h, manifest.Hash(testObject()))
		}
		a := map[string]any{"x": int64(1), "y": int64(2), "z": int64(3)}
		b := map[string]any{"z": int64(3), "x": int64(1), "y": int64(2)}
		assert.Equal(t, manifest.Hash(a), manifest.Hash(b))
	})
	t.Run("integers equal floats of the same value", func(t *testing.T) {
		assert.Equal(t, manifest.Hash(int64(2)), manifest.Hash(2.0))
		assert.Equal(t, manifest.Hash(map[string]any{"a": int64(-7)}), manifest.Hash(map[string]any{"a": -7.0}))
		assert.Equal(t, manifest.Hash(int64(1)<<60), manifest.Hash(float64(int64(1)<<60)))
		assert.NotEqual(t, manifest.Hash(int64(2)), manifest.Hash(2.5))
		assert.True(t, manifest.Equal(int64(3), 3.0))
		// Non-normalised values hash as their normalised form.
		assert.Equal(t, manifest.Hash(int64(5)), manifest.Hash(5))
		assert.Equal(t, manifest.Hash([]any{"a"}), manifest.Hash([]string{"a"}))
	})
	t.Run("sensitive to changes", func(t *testing.T) {
		changes := []func(m map[string]any){
			func(m map[string]any) { m["spec"].(map[string]any)["cores"] = int64(3) },
			func(m map[string]any) { m["spec"].(map[string]any)["cores"] = "2" },
			func(m map[string]any) { m["spec"].(map[string]any)["extra"] = nil },
			func(m map[string]any) { delete(m["spec"].(map[string]any), "empty") },
			func(m map[string]any) { m["spec"].(map[string]any)["empty"] = false },
			func(m map[string]any) { m["status"].(map[string]any)["ip"] = "10.0.0.6" },
			func(m map[string]any) { m["spec"].(map[string]any)["grid"] = []any{[]any{int64(2), int64(1)}} },
			func(m map[string]any) { m["spec"].(map[string]any)["grid"] = []any{int64(1), int64(2)} },
			func(m map[string]any) {
				m["spec"].(map[string]any)["grid"] = map[string]any{"0": []any{int64(1), int64(2)}}
			},
		}
		seen := map[string]bool{h: true}
		for i, change := range changes {
			m := testObject()
			change(m)
			got := manifest.Hash(m)
			assert.False(t, seen[got], "change %d collides", i)
			seen[got] = true
		}
	})
	t.Run("no ambiguity between strings", func(t *testing.T) {
		assert.NotEqual(t, manifest.Hash([]any{"ab", "c"}), manifest.Hash([]any{"a", "bc"}))
		assert.NotEqual(t, manifest.Hash(map[string]any{"a": "b"}), manifest.Hash(map[string]any{"ab": ""}))
		assert.NotEqual(t, manifest.Hash(nil), manifest.Hash(""))
		assert.NotEqual(t, manifest.Hash(true), manifest.Hash("t"))
	})
}

func TestDiff(t *testing.T) {
	old := map[string]any{
		"cores": int64(2),
		"mem":   int64(1024),
		"gone":  "x",
		"disks": []any{map[string]any{"size": "32G"}, map[string]any{"size": "8G"}},
		"tags":  []any{"a"},
		"net":   map[string]any{"ip": "10.0.0.1", "mask": int64(24)},
		"same":  2.0,
	}
	new := map[string]any{
		"cores": int64(4),
		"mem":   int64(1024),
		"added": true,
		"disks": []any{map[string]any{"size": "64G"}, map[string]any{"size": "8G"}},
		"tags":  []any{"a", "b"},
		"net":   map[string]any{"ip": "10.0.0.2", "mask": int64(24)},
		"same":  int64(2),
	}
	got := manifest.Diff("spec", old, new)
	assert.Equal(t, []manifest.FieldChange{
		{Path: "spec.added", New: true, Added: true},
		{Path: "spec.cores", Old: int64(2), New: int64(4)},
		{Path: "spec.disks[0].size", Old: "32G", New: "64G"},
		{Path: "spec.gone", Old: "x", Removed: true},
		{Path: "spec.net.ip", Old: "10.0.0.1", New: "10.0.0.2"},
		{Path: "spec.tags", Old: []any{"a"}, New: []any{"a", "b"}},
	}, got)

	assert.Empty(t, manifest.Diff("", old, old))
	assert.Equal(t, []manifest.FieldChange{{Path: "a", New: int64(1), Added: true}}, manifest.Diff("", nil, map[string]any{"a": int64(1)}))
	assert.Equal(t, []manifest.FieldChange{{Path: "a", Old: int64(1), Removed: true}}, manifest.Diff("", map[string]any{"a": int64(1)}, nil))
}

func TestCopyValue(t *testing.T) {
	orig := testObject()
	c := manifest.CopyMap(orig)
	assert.Equal(t, orig, c)
	c["spec"].(map[string]any)["disks"].([]any)[0].(map[string]any)["size"] = "1G"
	c["spec"].(map[string]any)["grid"].([]any)[0].([]any)[0] = int64(99)
	assert.Equal(t, testObject(), orig)
	assert.Nil(t, manifest.CopyMap(nil))
	assert.Equal(t, "s", manifest.CopyValue("s"))
}
