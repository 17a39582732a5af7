package postgres

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

// Spec and status are stored as jsonb. jsonb keeps numbers as exact
// decimals, so int64 values come back exactly; a float64 that happens to be
// integral is written with a ".0" (jsonb keeps the scale) so that it comes
// back a float64 rather than an int64.
//
// jsonb cannot hold every string a spec may (no NUL character, only valid
// UTF-8) nor a negative zero (numeric has none). Such strings and map keys
// are written escaped: escapeMark, "b" and the base64 of their bytes; a
// negative zero as the string escapeMark + "f-0". A string that starts
// with escapeMark (a private-use character) is always escaped, so that
// reading is unambiguous.

// escapeMark starts an escaped value in a spec or status column: U+E000,
// the first private-use character.
const escapeMark = "\ue000"

// needsEscape reports whether a string must be written escaped.
func needsEscape(s string) bool {
	return strings.HasPrefix(s, escapeMark) || strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s)
}

// escapeString returns the escaped form of s.
func escapeString(s string) string {
	return escapeMark + "b" + base64.StdEncoding.EncodeToString([]byte(s))
}

// negZero is how a negative zero is written.
const negZero = escapeMark + "f-0"

// encodeMap returns the JSON of a spec or status map (normalised first),
// or nil for a nil map (SQL NULL).
func encodeMap(m map[string]any, field string) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	n, err := manifest.NormalizeMap(m)
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "postgres: "+field, err)
	}
	b, err := json.Marshal(toJSON(n))
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "postgres: encoding "+field, err)
	}
	return b, nil
}

// toJSON returns a copy of a normalised value ready for jsonb: every
// integral float64 replaced by a json.Number that keeps a fractional part,
// and the strings, keys and negative zeros jsonb cannot keep escaped.
func toJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			if needsEscape(k) {
				k = escapeString(k)
			}
			m[k] = toJSON(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = toJSON(e)
		}
		return l
	case string:
		if needsEscape(x) {
			return escapeString(x)
		}
	case float64:
		if x == 0 && math.Signbit(x) {
			return negZero
		}
		// Above 1e21 encoding/json writes an exponent, and the value does
		// not fit an int64 anyway, so it decodes as a float64.
		if x == math.Trunc(x) && math.Abs(x) < 1e21 {
			return json.Number(strconv.FormatFloat(x, 'f', -1, 64) + ".0")
		}
	}
	return v
}

// decodeMap decodes a spec or status column into a normalised map.
func decodeMap(b []byte, field string) (map[string]any, error) {
	if b == nil {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", field, err)
	}
	v, err := fromJSON(m, field)
	if err != nil {
		return nil, err
	}
	n, err := manifest.NormalizeMap(v.(map[string]any))
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", field, err)
	}
	return n, nil
}

// fromJSON returns v with toJSON's escapes undone; path names the value in
// errors.
func fromJSON(v any, path string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			d, err := fromJSON(e, path+"."+k)
			if err != nil {
				return nil, err
			}
			if strings.HasPrefix(k, escapeMark) {
				uk, err := unescape(k, path)
				if err != nil {
					return nil, err
				}
				s, ok := uk.(string)
				if !ok {
					return nil, fmt.Errorf("decoding %s: key %q is not an escaped string", path, k)
				}
				k = s
			}
			m[k] = d
		}
		return m, nil
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			d, err := fromJSON(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			l[i] = d
		}
		return l, nil
	case string:
		if strings.HasPrefix(x, escapeMark) {
			return unescape(x, path)
		}
	}
	return v, nil
}

// unescape reads an escaped value.
func unescape(s, path string) (any, error) {
	if s == negZero {
		return math.Copysign(0, -1), nil
	}
	if b64, ok := strings.CutPrefix(s, escapeMark+"b"); ok {
		if b, err := base64.StdEncoding.DecodeString(b64); err == nil {
			return string(b), nil
		}
	}
	return nil, fmt.Errorf("decoding %s: %q is not a valid escaped value", path, s)
}

// encodeJSON returns the JSON of v, or nil (SQL NULL) when isNil.
func encodeJSON(v any, isNil bool, field string) ([]byte, error) {
	if isNil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "postgres: encoding "+field, err)
	}
	return b, nil
}

// decodeJSON decodes a column into v; NULL leaves v unchanged.
func decodeJSON(b []byte, v any, field string) error {
	if b == nil {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decoding %s: %w", field, err)
	}
	return nil
}
