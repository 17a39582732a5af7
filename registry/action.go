package registry

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

// CheckArgs checks action arguments against the spec and returns them with
// defaults filled in and values converted to their declared types. Values
// may be given already typed or as strings (as a CLI collects them):
// "30s" for a duration, "true" for a bool. Unknown arguments, missing
// required ones and values of the wrong type are Invalid errors naming the
// argument.
func (s ActionSpec) CheckArgs(args map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(s.Args))
	known := map[string]bool{}
	for _, a := range s.Args {
		known[a.Name] = true
		v, ok := args[a.Name]
		if !ok || v == nil {
			if a.Required {
				return nil, errcode.New(errcode.Invalid, fmt.Sprintf("registry: action %s: argument %q is required", s.Name, a.Name))
			}
			if a.Default == nil {
				continue
			}
			v = a.Default
		}
		cv, err := convertArg(a.Type, v)
		if err != nil {
			return nil, errcode.New(errcode.Invalid, fmt.Sprintf("registry: action %s: argument %q: %v", s.Name, a.Name, err))
		}
		out[a.Name] = cv
	}
	for _, k := range slices.Sorted(maps.Keys(args)) {
		if !known[k] {
			return nil, errcode.New(errcode.Invalid, fmt.Sprintf("registry: action %s: unknown argument %q", s.Name, k))
		}
	}
	return out, nil
}

func convertArg(t ArgType, v any) (any, error) {
	s, isString := v.(string)
	if isString && t != ArgString {
		s = strings.TrimSpace(s)
		v = s
	}
	switch t {
	case ArgString:
		if !isString {
			return nil, fmt.Errorf("want a string, got %T", v)
		}
		return s, nil
	case ArgInt:
		if isString {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%q is not an integer", s)
			}
			return n, nil
		}
		// Any Go integer, or a whole float (a default that went through JSON).
		switch x := normalizeNumber(v).(type) {
		case int64:
			return x, nil
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
				return int64(x), nil
			}
		}
		return nil, fmt.Errorf("want an integer, got %T", v)
	case ArgBool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			b, err := strconv.ParseBool(x)
			if err != nil {
				return nil, fmt.Errorf("%q is not a bool", x)
			}
			return b, nil
		}
		return nil, fmt.Errorf("want a bool, got %T", v)
	case ArgDuration:
		switch x := v.(type) {
		case time.Duration:
			return x, nil
		case string:
			d, err := time.ParseDuration(x)
			if err != nil {
				return nil, fmt.Errorf("%q is not a duration", x)
			}
			return d, nil
		}
		return nil, fmt.Errorf("want a duration, got %T", v)
	}
	return nil, fmt.Errorf("unknown argument type %q", t)
}

// normalizeNumber converts any Go number to int64 or float64, and leaves
// anything else as it is.
func normalizeNumber(v any) any {
	switch v.(type) {
	case string, bool, nil:
		return v
	}
	if n, err := manifest.Normalize(v); err == nil {
		return n
	}
	return v
}

// FindAction returns the provider's action with the given name for kind. A
// provider that offers no actions, or not that one, is an Invalid error
// listing what it offers.
func FindAction(p Provider, kind, name string) (Actioner, ActionSpec, error) {
	a, ok := p.(Actioner)
	if !ok {
		return nil, ActionSpec{}, errcode.New(errcode.Invalid, fmt.Sprintf("registry: provider %q offers no actions", p.Name()))
	}
	var names []string
	for _, s := range a.Actions() {
		if s.Kind != kind {
			continue
		}
		if s.Name == name {
			return a, s, nil
		}
		names = append(names, s.Name)
	}
	slices.Sort(names)
	return nil, ActionSpec{}, errcode.New(errcode.Invalid, fmt.Sprintf("registry: %s %s has no action %q (actions: %s)", p.Name(), kind, name, strings.Join(names, ", ")))
}
