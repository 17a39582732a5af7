package output

import (
	"reflect"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
)

// Redact returns a copy of r, sharing nothing mutable with it, in which
// every [secret.Secret] value, however deeply nested, and every value found
// at one of the secretFields paths (a kind's registry.Kind.SecretFields,
// such as "status.kubeconfig") reads [secret.Redacted]. Absent and null
// secret fields stay as they are. r is not modified.
//
// Typed maps and slices (map[string]secret.Secret, []string) are turned
// into their normalised form on the way, so that the copy's values are
// ones the manifest encoders accept.
func Redact(r *manifest.Resource, secretFields []string) *manifest.Resource {
	if r == nil {
		return nil
	}
	c := r.DeepCopy()
	c.Spec = redactMap(r.Spec)
	c.Status = redactMap(r.Status)
	obj := c.ObjectView()
	for _, p := range secretFields {
		v, found, err := manifest.Field(obj, p)
		if err != nil || !found || v == nil {
			continue
		}
		if _, isMap := obj[p]; isMap {
			continue // "spec" or "status" itself: cannot be a string
		}
		_ = manifest.SetField(obj, p, secret.Redacted) // found above, so the path exists
	}
	return c
}

func redactMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = redactValue(v)
	}
	return out
}

// redactValue copies v, replacing secrets by [secret.Redacted].
func redactValue(v any) any {
	switch x := v.(type) {
	case nil, string, bool, int64, float64:
		return x
	case map[string]any:
		return redactMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redactValue(e)
		}
		return out
	case secret.Secret, *secret.Secret:
		return secret.Redacted
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return v
		}
		out := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			out[it.Key().String()] = redactValue(it.Value().Interface())
		}
		return out
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return v // bytes
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = redactValue(rv.Index(i).Interface())
		}
		return out
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
		return redactValue(rv.Elem().Interface())
	}
	return v
}
