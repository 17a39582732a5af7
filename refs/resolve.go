package refs

import (
	"context"
	"maps"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

// Getter reads a live resource. registry.Registry implements it, routing
// by the apiVersion group to the provider that owns the kind. A resource
// that does not exist must be reported as an error matching
// [errcode.NotFound] (errors.Is).
type Getter interface {
	Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error)
}

// GetterFunc adapts a function to a [Getter].
type GetterFunc func(ctx context.Context, id manifest.ID) (*manifest.Resource, error)

// Get calls f.
func (f GetterFunc) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	return f(ctx, id)
}

// Resolve returns a deep copy of r in which every marker of the spec is
// replaced by its live value: the field the marker names, read off the
// target's object form ([manifest.Resource.Object]), or that whole object.
// r itself is not modified, and a resource without markers is copied too.
//
// Each distinct target is fetched once per call, in the order the markers
// are found (map keys sorted, lists by index), and ctx is checked before
// every Get. Every substituted value is a deep copy of its own, and it is
// not searched for markers: a "$ref" inside a resolved value is data.
//
// Resolve stops at the first failure and returns an [*Error]: code
// [errcode.Invalid] for a malformed marker, a self-reference or a field
// path that runs into a value of the wrong type; [errcode.NotFound] for a
// target the Getter does not find (matching [ErrTargetNotFound] too) or a
// field the target does not have (matching [ErrFieldNotFound]); the
// Getter's own code (see [errcode.Of]) for any other Getter error, which
// the *Error wraps. A cancelled ctx is returned wrapped in the same way.
func Resolve(ctx context.Context, g Getter, r *manifest.Resource) (*manifest.Resource, error) {
	if r == nil {
		return nil, errcode.New(errcode.Invalid, "refs: resolve: nil resource")
	}
	out := *r
	out.Metadata.Labels = maps.Clone(r.Metadata.Labels)
	out.Metadata.Annotations = maps.Clone(r.Metadata.Annotations)
	out.Status = manifest.CopyMap(r.Status)
	if r.Spec == nil {
		return &out, nil
	}
	if IsMarker(r.Spec) {
		return nil, rootErr(r.ID())
	}
	w := resolver{ctx: ctx, g: g, self: r.ID()}
	spec, err := w.walkMap(r.Spec)
	if err != nil {
		return nil, err
	}
	out.Spec = spec
	return &out, nil
}

// resolver is the state of one Resolve call.
type resolver struct {
	ctx   context.Context
	g     Getter
	self  manifest.ID
	trail trail

	objs map[manifest.ID]map[string]any // fetched targets' object forms
	vals map[refKey]any                 // resolved values, shared: copy before use

	// The last (target, field) resolved, a shortcut past vals for runs of
	// markers to the same value.
	last    refKey
	lastVal any
	hasLast bool
}

// walk returns a deep copy of v with its markers resolved.
func (w *resolver) walk(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if v, ok := x[Key]; ok {
			return w.marker(x, v)
		}
		return w.walkMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			w.trail = append(w.trail, step{index: i})
			c, err := w.walk(e)
			w.trail = w.trail[:len(w.trail)-1]
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}

// walkMap returns a deep copy of m, which is not a marker, with its markers
// resolved. Keys are visited in sorted order so that the Gets and the first
// error are the same from one call to the next.
func (w *resolver) walkMap(m map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(m))
	var buf [8]entry
	for _, e := range sortedEntries(m, buf[:0]) {
		w.trail = append(w.trail, step{key: e.key, index: -1})
		c, err := w.walk(e.val)
		w.trail = w.trail[:len(w.trail)-1]
		if err != nil {
			return nil, err
		}
		out[e.key] = c
	}
	return out, nil
}

// marker returns the value the marker m, holding ref, stands for.
func (w *resolver) marker(m map[string]any, ref any) (any, error) {
	target, field, perr := shape(m, ref)
	if perr != nil {
		return nil, w.fail(perr)
	}
	k := refKey{target, field}
	if w.hasLast && k == w.last {
		return manifest.CopyValue(w.lastVal), nil
	}
	v, ok := w.vals[k]
	if !ok {
		var err error
		if v, err = w.lookup(target, field); err != nil {
			return nil, err
		}
		if w.vals == nil {
			w.vals = map[refKey]any{}
		}
		w.vals[k] = v
	}
	w.last, w.lastVal, w.hasLast = k, v, true
	return manifest.CopyValue(v), nil
}

// lookup validates a (target, field) pair seen for the first time, fetches
// the target unless it has been already, and reads the field. The value is
// shared with the cached object.
func (w *resolver) lookup(target manifest.ID, field string) (any, error) {
	if target == w.self {
		return nil, w.fail(selfErr(target, field))
	}
	obj, fetched := w.objs[target]
	if !fetched {
		if e := checkID(target); e != nil {
			return nil, w.fail(e)
		}
	}
	if e := checkField(field); e != nil {
		return nil, w.fail(e)
	}
	if !fetched {
		var err error
		if obj, err = w.fetch(target, field); err != nil {
			return nil, err
		}
	}
	if field == "" {
		return obj, nil
	}
	v, found, err := manifest.Field(obj, field)
	switch {
	case err != nil:
		return nil, w.fail(&Error{Target: target, Field: field, Code: errcode.Of(err), Err: err})
	case !found:
		return nil, w.fail(&Error{Target: target, Field: field, Code: errcode.NotFound, Msg: "field not found", missing: ErrFieldNotFound})
	}
	return v, nil
}

// fetch gets target through the Getter and caches its object form. field
// is only for messages.
func (w *resolver) fetch(target manifest.ID, field string) (map[string]any, error) {
	if err := w.ctx.Err(); err != nil {
		return nil, w.fail(&Error{Target: target, Field: field, Code: errcode.Of(err), Err: err})
	}
	if w.g == nil {
		return nil, w.fail(&Error{Target: target, Field: field, Code: errcode.Internal, Msg: "no Getter to read it with"})
	}
	res, err := w.g.Get(w.ctx, target)
	if err != nil {
		e := &Error{Target: target, Field: field, Code: getterCode(err), Err: err}
		if e.Code == errcode.NotFound {
			e.missing = ErrTargetNotFound
		}
		return nil, w.fail(e)
	}
	if res == nil {
		return nil, w.fail(&Error{Target: target, Field: field, Code: errcode.Internal, Msg: "Getter returned no resource and no error"})
	}
	obj := res.ObjectView() // read only: values are copied where they are used
	if w.objs == nil {
		w.objs = map[manifest.ID]map[string]any{}
	}
	w.objs[target] = obj
	return obj, nil
}

// fail completes e with the referring resource and the current path.
func (w *resolver) fail(e *Error) *Error {
	e.Resource = w.self
	e.Path = w.trail.String()
	return e
}
