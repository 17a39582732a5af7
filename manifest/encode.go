package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/openctl/openctl/errcode"
)

// EncodeYAML writes the resources as a multi-document YAML stream, with
// "---" between documents and 2-space indentation. The fields come in a
// fixed order — apiVersion, kind, metadata (name, namespace, labels,
// annotations), spec, status — and map keys inside them are sorted, so
// equal resources encode identically. Source is not written. The output
// decodes back, with [DecodeBytes], to equal resources (unless it is larger
// than decoding accepts, which values expanded from aliases can be).
//
// Spec and status must hold values [Normalize] accepts (a NaN or an
// infinity, which decoding would reject, is an error); they are written in
// normalised form. Floats are written so that they read back as floats
// ("2.0"), strings that are not UTF-8 as !!binary.
func EncodeYAML(w io.Writer, rs ...*Resource) error {
	var yw yamlWriter
	for i, r := range rs {
		if r == nil {
			return inputError(errcode.InputError{Msg: "cannot encode a nil resource"})
		}
		o, err := orderedObject(r)
		if err != nil {
			return err
		}
		yw.b.Reset()
		if i > 0 {
			yw.b.WriteString("---\n")
		}
		for _, f := range o {
			yw.key(f.key, 0)
			if f.ordered == nil {
				yw.after(f.value, 0, 1)
				continue
			}
			yw.b.WriteByte('\n')
			for _, g := range f.ordered {
				v := g.value
				if m, ok := v.(map[string]string); ok {
					v = stringsToAny(m)
				}
				yw.indent(2)
				yw.key(g.key, 2)
				yw.after(v, 2, 2)
			}
		}
		if _, err := w.Write(yw.b.Bytes()); err != nil {
			return fmt.Errorf("manifest: encode: %w", err)
		}
	}
	return nil
}

// field is one field of a resource's encoded form: a value, or for
// metadata a further list of fields.
type field struct {
	key     string
	value   any
	ordered []field
}

// orderedObject returns r's fields in encoding order, with spec and status
// normalised. Empty optional fields are left out, but an empty (non-nil)
// spec, status, labels or annotations map is kept.
func orderedObject(r *Resource) ([]field, error) {
	md := []field{{key: "name", value: r.Metadata.Name}}
	if r.Metadata.Namespace != "" {
		md = append(md, field{key: "namespace", value: r.Metadata.Namespace})
	}
	if r.Metadata.Labels != nil {
		md = append(md, field{key: "labels", value: r.Metadata.Labels})
	}
	if r.Metadata.Annotations != nil {
		md = append(md, field{key: "annotations", value: r.Metadata.Annotations})
	}
	o := []field{
		{key: "apiVersion", value: r.APIVersion},
		{key: "kind", value: r.Kind},
		{key: "metadata", ordered: md},
	}
	for _, part := range []struct {
		name string
		m    map[string]any
	}{{"spec", r.Spec}, {"status", r.Status}} {
		if part.m == nil {
			continue
		}
		m, err := NormalizeMap(part.m)
		if err != nil {
			return nil, fmt.Errorf("manifest: encode %s: %s: %w", r.ID().Short(), part.name, err)
		}
		o = append(o, field{key: part.name, value: m})
	}
	return o, nil
}

// jsonResource is the JSON form of a resource, fields in encoding order.
type jsonResource struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   jsonMetadata `json:"metadata"`
	Spec       any          `json:"spec,omitempty"`
	Status     any          `json:"status,omitempty"`
}

type jsonMetadata struct {
	Name        string `json:"name"`
	Namespace   string `json:"namespace,omitempty"`
	Labels      any    `json:"labels,omitempty"`
	Annotations any    `json:"annotations,omitempty"`
}

// EncodeJSON writes the resources as JSON indented by 2 spaces: a single
// resource as an object, any other number as an array. Fields come in the
// same order as with [EncodeYAML] and Source is not written. The output
// decodes back, with [DecodeBytes], to equal resources, except that strings
// that are not valid UTF-8 have their bad bytes replaced by U+FFFD.
func EncodeJSON(w io.Writer, rs ...*Resource) error {
	out, err := jsonResources(rs)
	if err != nil {
		return err
	}
	if len(out) == 1 {
		return writeJSON(w, out[0])
	}
	return writeJSON(w, out)
}

// EncodeJSONList writes the resources as a kubectl-style List, indented
// by 2 spaces: {"apiVersion": "v1", "kind": "List", "items": [...]},
// whatever their number ("items": [] for none), each item as
// [EncodeJSON] writes a resource. [DecodeBytes] reads a List back as its
// items.
func EncodeJSONList(w io.Writer, rs ...*Resource) error {
	items, err := jsonResources(rs)
	if err != nil {
		return err
	}
	return writeJSON(w, struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Items      []jsonResource `json:"items"`
	}{"v1", "List", items})
}

// jsonResources is the JSON form of each resource.
func jsonResources(rs []*Resource) ([]jsonResource, error) {
	out := make([]jsonResource, 0, len(rs))
	for _, r := range rs {
		if r == nil {
			return nil, inputError(errcode.InputError{Msg: "cannot encode a nil resource"})
		}
		o, err := orderedObject(r)
		if err != nil {
			return nil, err
		}
		j := jsonResource{APIVersion: r.APIVersion, Kind: r.Kind, Metadata: jsonMetadata{Name: r.Metadata.Name, Namespace: r.Metadata.Namespace}}
		if r.Metadata.Labels != nil {
			j.Metadata.Labels = r.Metadata.Labels
		}
		if r.Metadata.Annotations != nil {
			j.Metadata.Annotations = r.Metadata.Annotations
		}
		for _, f := range o[3:] {
			switch f.key {
			case "spec":
				j.Spec = exactJSON(f.value)
			case "status":
				j.Status = exactJSON(f.value)
			}
		}
		out = append(out, j)
	}
	return out, nil
}

// writeJSON writes v indented by 2 spaces, HTML characters as they are.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("manifest: encode JSON: %w", err)
	}
	return nil
}

// EncodeYAMLList writes the resources as a kubectl-style List document:
// apiVersion v1, kind List, and items, each item as [EncodeYAML] writes
// a resource ("items: []" for none). [DecodeBytes] reads a List back as
// its items.
func EncodeYAMLList(w io.Writer, rs ...*Resource) error {
	var b bytes.Buffer
	b.WriteString("apiVersion: v1\nkind: List\n")
	if len(rs) == 0 {
		b.WriteString("items: []\n")
	} else {
		b.WriteString("items:\n")
	}
	var one bytes.Buffer
	for _, r := range rs {
		one.Reset()
		if err := EncodeYAML(&one, r); err != nil {
			return err
		}
		// The resource's lines, indented under its "- ": block scalars
		// keep their relative indentation; empty lines stay empty.
		for i, line := range bytes.SplitAfter(one.Bytes(), []byte("\n")) {
			switch {
			case i == 0:
				b.WriteString("- ")
			case len(bytes.TrimRight(line, "\n")) > 0:
				b.WriteString("  ")
			}
			b.Write(line)
		}
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("manifest: encode: %w", err)
	}
	return nil
}

// exactJSON returns a copy of a normalised value in which every float64 that
// encoding/json would write as an integer it does not equal exactly (an
// integral value of 2^53 or more, written with all its digits) is written
// in exponent form instead, so that it decodes back as the same float64
// rather than as a different int64.
func exactJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = exactJSON(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = exactJSON(e)
		}
		return l
	case float64:
		if x == math.Trunc(x) && math.Abs(x) >= 1<<53 {
			return json.Number(strconv.FormatFloat(x, 'e', -1, 64))
		}
	}
	return v
}
