package postgres

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

// Spec and status are stored as jsonb. jsonb keeps numbers as exact
// decimals, so int64 values come back exactly; a float64 that happens to be
// integral is written with a ".0" (jsonb keeps the scale) so that it comes
// back a float64 rather than an int64.

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
	b, err := json.Marshal(floatsExact(n))
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "postgres: encoding "+field, err)
	}
	return b, nil
}

// floatsExact returns a copy of a normalised value with every integral
// float64 replaced by a json.Number that keeps a fractional part.
func floatsExact(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = floatsExact(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = floatsExact(e)
		}
		return l
	case float64:
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
	n, err := manifest.NormalizeMap(m)
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", field, err)
	}
	return n, nil
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
