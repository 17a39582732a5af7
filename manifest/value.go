package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/openctl/openctl/errcode"
)

// Normalize converts a decoded or hand-built Go value into the normalised
// form Spec and Status hold: map[string]any, []any, string, bool, int64,
// float64 and nil. Every integer type becomes int64 (a uint64 above
// math.MaxInt64 becomes float64), float32 becomes float64, json.Number
// becomes int64 or float64, map[any]any with string keys becomes
// map[string]any, and typed maps and slices are converted element by
// element. Anything else (structs, pointers, channels, non-string map keys,
// NaN and infinities) is an Invalid error naming the path.
func Normalize(v any) (any, error) { return normalize(v, "", 0) }

// maxNormalizeDepth bounds the nesting Normalize accepts, so that a value
// that contains itself is an error rather than a stack overflow.
const maxNormalizeDepth = 10000

// NormalizeMap is [Normalize] for a map.
func NormalizeMap(m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	v, err := normalize(m, "", 0)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

func normalize(v any, path string, depth int) (any, error) {
	if depth > maxNormalizeDepth {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("manifest: %s: value is nested more than %d levels deep (does it contain itself?)", displayPath(path), maxNormalizeDepth))
	}
	switch x := v.(type) {
	case nil, string, bool, int64:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, typeErr(path, "a finite number", x)
		}
		return x, nil
	case int:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case uint:
		return normUint(uint64(x)), nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint64:
		return normUint(x), nil
	case float32:
		return normalize(float64(x), path, depth)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, typeErr(path, "a number", x)
		}
		return normalize(f, path, depth)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, err := normalize(e, joinKey(path, k), depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normalize(e, joinIndex(path, i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, errcode.New(errcode.Invalid, fmt.Sprintf("manifest: %s: map key %v is a %T, want a string", displayPath(path), k, k))
			}
			n, err := normalize(e, joinKey(path, ks), depth+1)
			if err != nil {
				return nil, err
			}
			out[ks] = n
		}
		return out, nil
	}
	// Typed maps and slices ([]string, map[string]string, ...).
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, typeErr(path, "a map with string keys", v)
		}
		out := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			k := it.Key().String()
			n, err := normalize(it.Value().Interface(), joinKey(path, k), depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			n, err := normalize(rv.Index(i).Interface(), joinIndex(path, i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return normUint(rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return normalize(rv.Float(), path, depth)
	}
	return nil, typeErr(path, "a string, number, bool, list or map", v)
}

func normUint(u uint64) any {
	if u > math.MaxInt64 {
		return float64(u)
	}
	return int64(u)
}

func typeErr(path, want string, got any) error {
	return errcode.New(errcode.Invalid, fmt.Sprintf("manifest: %s: want %s, got %s", displayPath(path), want, TypeName(got)))
}

// TypeName names the type of a normalised value the way error messages do:
// "map", "list", "string", "bool", "integer", "number", "null", or the Go
// type for anything else.
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "map"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "bool"
	case int64:
		return "integer"
	case float64:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func displayPath(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

func joinKey(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func joinIndex(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// JoinPath appends a map key to a field path ("spec" + "cpu" = "spec.cpu").
func JoinPath(path, key string) string { return joinKey(path, key) }

// JoinIndex appends a list index to a field path ("spec.disks" + 0 =
// "spec.disks[0]").
func JoinIndex(path string, i int) string { return joinIndex(path, i) }

// CopyValue deep-copies a normalised value. Values other than maps and
// lists are immutable and returned as they are.
func CopyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return CopyMap(x)
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = CopyValue(e)
		}
		return c
	}
	return v
}

// CopyMap deep-copies a normalised map. A nil map stays nil.
func CopyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = CopyValue(v)
	}
	return c
}

// pathElem is one step of a parsed field path: a map key or a list index.
type pathElem struct {
	key   string
	index int // -1 for a key
}

// parsePath parses a field path such as "status.ip" or
// "spec.disks[0].size": keys are dot-separated and list indices use
// brackets. An empty path, an empty key or a malformed index is an Invalid
// error.
func parsePath(path string) ([]pathElem, error) {
	if path == "" {
		return nil, errcode.New(errcode.Invalid, "manifest: empty field path")
	}
	var out []pathElem
	bad := func(why string) error {
		return errcode.New(errcode.Invalid, fmt.Sprintf("manifest: field path %q: %s", path, why))
	}
	for _, part := range strings.Split(path, ".") {
		key := part
		rest := ""
		if i := strings.IndexByte(part, '['); i >= 0 {
			key, rest = part[:i], part[i:]
		}
		if key == "" && (len(out) == 0 || rest == "") {
			return nil, bad("empty key")
		}
		if key != "" {
			out = append(out, pathElem{key: key, index: -1})
		}
		for rest != "" {
			end := strings.IndexByte(rest, ']')
			if rest[0] != '[' || end < 0 {
				return nil, bad("malformed index")
			}
			n, err := strconv.Atoi(rest[1:end])
			if err != nil || !isDigits(rest[1:end]) {
				return nil, bad(fmt.Sprintf("index %q is not a non-negative integer", rest[1:end]))
			}
			out = append(out, pathElem{index: n})
			rest = rest[end+1:]
		}
	}
	return out, nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Field returns the value at a field path in a normalised object. Paths are
// map keys separated by dots, with list indices in brackets:
// "status.ip", "spec.disks[0].size".
//
// The result follows apimachinery's unstructured helpers: a missing key or
// an index past the end is (nil, false, nil) — absent is not an error —
// while a path that runs into a value of the wrong type (indexing a string,
// a key into a list) is an Invalid error naming the path and the actual
// type. A malformed path is also an Invalid error.
func Field(obj map[string]any, path string) (any, bool, error) {
	elems, err := parsePath(path)
	if err != nil {
		return nil, false, err
	}
	var cur any = obj
	walked := ""
	for _, e := range elems {
		if e.index < 0 {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false, errcode.New(errcode.Invalid, fmt.Sprintf("manifest: field %s: %s is %s, not a map", path, displayPath(walked), describe(cur)))
			}
			v, ok := m[e.key]
			if !ok {
				return nil, false, nil
			}
			cur = v
			walked = joinKey(walked, e.key)
			continue
		}
		l, ok := cur.([]any)
		if !ok {
			return nil, false, errcode.New(errcode.Invalid, fmt.Sprintf("manifest: field %s: %s is %s, not a list", path, displayPath(walked), describe(cur)))
		}
		if e.index >= len(l) {
			return nil, false, nil
		}
		cur = l[e.index]
		walked = joinIndex(walked, e.index)
	}
	return cur, true, nil
}

// SetField sets the value at a field path, creating intermediate maps as
// needed. Lists are not grown: an index past the end is an Invalid error, as
// is a path through a value that is neither a map nor a list.
func SetField(obj map[string]any, path string, value any) error {
	elems, err := parsePath(path)
	if err != nil {
		return err
	}
	var cur any = obj
	for i, e := range elems {
		last := i == len(elems)-1
		if e.index < 0 {
			m, ok := cur.(map[string]any)
			if !ok {
				return errcode.New(errcode.Invalid, fmt.Sprintf("manifest: set %s: element %d is %s, not a map", path, i, describe(cur)))
			}
			if m == nil {
				return errcode.New(errcode.Invalid, fmt.Sprintf("manifest: set %s: element %d is a nil map", path, i))
			}
			if last {
				m[e.key] = value
				return nil
			}
			next, ok := m[e.key]
			if !ok || next == nil {
				if elems[i+1].index >= 0 {
					return errcode.New(errcode.Invalid, fmt.Sprintf("manifest: set %s: %s does not exist", path, e.key))
				}
				next = map[string]any{}
				m[e.key] = next
			}
			cur = next
			continue
		}
		l, ok := cur.([]any)
		if !ok {
			return errcode.New(errcode.Invalid, fmt.Sprintf("manifest: set %s: element %d is %s, not a list", path, i, describe(cur)))
		}
		if e.index >= len(l) {
			return errcode.New(errcode.Invalid, fmt.Sprintf("manifest: set %s: index %d out of range", path, e.index))
		}
		if last {
			l[e.index] = value
			return nil
		}
		cur = l[e.index]
	}
	return nil
}

// Hash returns a canonical SHA-256 hash (hex) of a normalised value: equal
// values hash equally whatever their map order, and an integer and a float
// with the same value (2 and 2.0) hash equally. The engine compares the hash
// of a resource's resolved spec with the one recorded in state to detect
// no-ops.
func Hash(v any) string {
	sum := sha256.Sum256(appendCanonical(make([]byte, 0, 256), v))
	return hex.EncodeToString(sum[:])
}

// appendCanonical appends an unambiguous encoding of v to b: map keys
// sorted, whole floats written as integers, strings length-prefixed.
func appendCanonical(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, 'n')
	case bool:
		if x {
			return append(b, 't')
		}
		return append(b, 'f')
	case int64:
		b = strconv.AppendInt(append(b, '#'), x, 10)
		return append(b, ';')
	case float64:
		b = append(b, '#')
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			b = strconv.AppendInt(b, int64(x), 10)
		} else {
			b = strconv.AppendFloat(b, x, 'g', -1, 64)
		}
		return append(b, ';')
	case string:
		b = strconv.AppendInt(append(b, 's'), int64(len(x)), 10)
		return append(append(b, ':'), x...)
	case []any:
		b = strconv.AppendInt(append(b, '['), int64(len(x)), 10)
		b = append(b, ':')
		for _, e := range x {
			b = appendCanonical(b, e)
		}
		return append(b, ']')
	case map[string]any:
		var buf [16]string
		keys := buf[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = strconv.AppendInt(append(b, '{'), int64(len(x)), 10)
		b = append(b, ':')
		for _, k := range keys {
			b = appendCanonical(b, k)
			b = appendCanonical(b, x[k])
		}
		return append(b, '}')
	}
	// Not normalised: encode its normalised form, or its Go syntax.
	if n, err := Normalize(v); err == nil {
		return appendCanonical(b, n)
	}
	return fmt.Appendf(append(b, '?'), "%#v", v)
}

// Equal reports whether two normalised values are equal, treating integers
// and floats of the same value as equal.
func Equal(a, b any) bool {
	return bytes.Equal(appendCanonical(nil, a), appendCanonical(nil, b))
}

// FieldChange is one difference between two values, at a field path.
// Old is nil when the field was added, New is nil when it was removed.
type FieldChange struct {
	Path    string `json:"path"`
	Old     any    `json:"old,omitempty"`
	New     any    `json:"new,omitempty"`
	Added   bool   `json:"added,omitempty"`
	Removed bool   `json:"removed,omitempty"`
}

// Diff compares two normalised maps and returns the changed leaves, sorted
// by path. Maps are compared key by key; lists of different lengths or
// scalars that differ are reported whole at their path. prefix is prepended
// to every path (for example "spec").
func Diff(prefix string, old, new map[string]any) []FieldChange {
	var out []FieldChange
	diffValue(prefix, old, new, &out)
	slices.SortFunc(out, func(a, b FieldChange) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func diffValue(path string, a, b any, out *[]FieldChange) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		for k, av := range am {
			bv, ok := bm[k]
			if !ok {
				*out = append(*out, FieldChange{Path: joinKey(path, k), Old: av, Removed: true})
				continue
			}
			diffValue(joinKey(path, k), av, bv, out)
		}
		for k, bv := range bm {
			if _, ok := am[k]; !ok {
				*out = append(*out, FieldChange{Path: joinKey(path, k), New: bv, Added: true})
			}
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			diffValue(joinIndex(path, i), al[i], bl[i], out)
		}
		return
	}
	if !Equal(a, b) {
		*out = append(*out, FieldChange{Path: displayPath(path), Old: a, New: b})
	}
}
