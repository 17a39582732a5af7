package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/openctl/openctl/errcode"
)

// DecodeSpec decodes spec, a resource's spec, into v, a pointer to a struct
// whose fields carry json tags, strictly: a key the struct does not have, or
// a value of the wrong type, is an *errcode.InputError naming the field path
// ("spec.cpu.cores") and, for an unknown key, the known ones. The error has
// no file: callers place it with [Resource.Locate].
func DecodeSpec(spec map[string]any, v any) error {
	if err := unknownField("spec", spec, reflect.TypeOf(v).Elem()); err != nil {
		return err
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return inputError(errcode.InputError{Field: "spec", Msg: err.Error()})
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		if te, ok := err.(*json.UnmarshalTypeError); ok {
			return inputError(errcode.InputError{Field: "spec." + te.Field, Msg: fmt.Sprintf("must be %s, not %s", kindName(te.Type), te.Value)})
		}
		return inputError(errcode.InputError{Field: "spec", Msg: err.Error()})
	}
	return nil
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Pointer:
		return kindName(t.Elem())
	}
	return t.String()
}

// unknownField reports the first key of v (depth-first, keys sorted) that
// type t does not have.
func unknownField(path string, v any, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return nil // a type error, reported by the decoder
		}
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			fields[name] = f.Type
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			ft, ok := fields[k]
			if !ok {
				return inputError(errcode.InputError{Field: path + "." + k, Msg: fmt.Sprintf("unknown field (known: %s)", strings.Join(slices.Sorted(maps.Keys(fields)), ", "))})
			}
			if err := unknownField(path+"."+k, m[k], ft); err != nil {
				return err
			}
		}
	case reflect.Slice:
		l, ok := v.([]any)
		if !ok {
			return nil
		}
		for i, e := range l {
			if err := unknownField(fmt.Sprintf("%s[%d]", path, i), e, t.Elem()); err != nil {
				return err
			}
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if err := unknownField(path+"."+k, m[k], t.Elem()); err != nil {
				return err
			}
		}
	}
	return nil
}
