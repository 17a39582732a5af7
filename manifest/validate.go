package manifest

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/openctl/openctl/errcode"
)

// Validate checks a resource the way decoding checks a manifest, for
// resources built in code: the limits of decoding on nesting, list, map and
// string sizes (see the package documentation), and the apiVersion has the
// form <group>/<version>, the kind is set and well formed, the name is a
// DNS-1123 subdomain (the namespace, if set, a DNS-1123 label), label and
// annotation keys are not empty, and spec and status hold only normalised
// values (see [Normalize]; a value Normalize would convert, such as an int,
// is reported too, since [Field], [Hash] and the encoders expect the
// normalised form).
//
// Every problem is reported, as an errors.Join of [*errcode.InputError]
// values whose Field names the offending field; File and Line come from
// r.Source when it is set.
func Validate(r *Resource) error {
	if r == nil {
		return inputError(errcode.InputError{Msg: "resource is nil"})
	}
	var errs errorList
	add := func(e *errcode.InputError) {
		e.File, e.Line = r.Source.File, r.Source.Line
		errs.add(e)
	}
	for _, e := range identityErrors(r) {
		add(e)
	}
	for _, part := range []struct {
		name string
		m    map[string]any
	}{{"spec", r.Spec}, {"status", r.Status}} {
		if part.m != nil {
			checkNormalised(part.m, part.name, 0, add)
		}
	}
	return errs.err()
}

// identityErrors returns the problems with r's apiVersion, kind and
// metadata, each naming its field, without a location.
func identityErrors(r *Resource) []*errcode.InputError {
	var out []*errcode.InputError
	check := func(field, msg string) {
		if msg != "" {
			out = append(out, inputError(errcode.InputError{Field: field, Msg: msg}))
		}
	}
	check("apiVersion", apiVersionProblem(r.APIVersion))
	check("kind", kindProblem(r.Kind))
	check("metadata.name", nameProblem(r.Metadata.Name))
	if r.Metadata.Namespace != "" {
		check("metadata.namespace", labelProblem("namespace", r.Metadata.Namespace))
	}
	if _, ok := r.Metadata.Labels[""]; ok {
		check("metadata.labels", "label key is empty")
	}
	if _, ok := r.Metadata.Annotations[""]; ok {
		check("metadata.annotations", "annotation key is empty")
	}
	return out
}

// checkNormalised reports every value in v, at path, that is not in the
// normalised form.
func checkNormalised(v any, path string, depth int, add func(*errcode.InputError)) {
	walkNormalised(v, &pathStep{key: path, index: -1}, depth, add)
}

// pathStep is one step of a field path, linked to its parent, so that a
// deep walk does not build a path string at every level.
type pathStep struct {
	parent *pathStep
	key    string
	index  int // -1 for a key
}

func (p *pathStep) String() string {
	var steps []*pathStep
	for ; p.parent != nil; p = p.parent {
		steps = append(steps, p)
	}
	var b strings.Builder
	b.WriteString(p.key)
	for i := len(steps) - 1; i >= 0; i-- {
		if s := steps[i]; s.index >= 0 {
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		} else {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		}
	}
	return b.String()
}

func walkNormalised(v any, path *pathStep, depth int, add func(*errcode.InputError)) {
	if depth > maxDepth {
		add(inputError(errcode.InputError{Field: path.String(), Msg: fmt.Sprintf("value is nested more than %d levels deep (does it contain itself?)", maxDepth)}))
		return
	}
	switch x := v.(type) {
	case nil, bool, int64:
	case string:
		if len(x) > maxStringLen {
			add(inputError(errcode.InputError{Field: path.String(), Msg: fmt.Sprintf("string is %d bytes long; at most %d (%d KiB) are allowed", len(x), maxStringLen, maxStringLen>>10)}))
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			add(inputError(errcode.InputError{Field: path.String(), Msg: fmt.Sprintf("want a finite number, got %v", x)}))
		}
	case map[string]any:
		if len(x) > maxListLen {
			add(inputError(errcode.InputError{Field: path.String(), Msg: fmt.Sprintf("map has %d keys; at most %d are allowed", len(x), maxListLen)}))
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if len(k) > maxKeyLen {
				add(inputError(errcode.InputError{Field: path.String(), Msg: fmt.Sprintf("map key %s is %d bytes long; at most %d are allowed", abbrev(k), len(k), maxKeyLen)}))
				continue
			}
			walkNormalised(x[k], &pathStep{parent: path, key: k, index: -1}, depth+1, add)
		}
	case []any:
		if len(x) > maxListLen {
			add(inputError(errcode.InputError{Field: path.String(), Msg: fmt.Sprintf("list has %d items; at most %d are allowed", len(x), maxListLen)}))
			return
		}
		for i, e := range x {
			walkNormalised(e, &pathStep{parent: path, index: i}, depth+1, add)
		}
	default:
		if _, err := Normalize(x); err != nil {
			add(inputError(errcode.InputError{Field: path.String(), Msg: fmt.Sprintf("want a string, number, bool, list or map, got a value of type %T", x)}))
		} else {
			add(inputError(errcode.InputError{Field: path.String(), Msg: fmt.Sprintf("value of type %T is not normalised (convert the map with NormalizeMap)", x)}))
		}
	}
}
