package refs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

// Key is the map key that makes a map a $ref marker.
const Key = "$ref"

// The keys of the map a marker's Key holds.
const (
	keyAPIVersion = "apiVersion"
	keyKind       = "kind"
	keyName       = "name"
	keyField      = "field"
)

// Ref is one well-formed marker found in a resource's spec.
type Ref struct {
	Path   string      // where the marker sits in the referring resource, e.g. "spec.nodes[0].ip"
	Target manifest.ID // the referenced resource
	Field  string      // the field path into the target's object form; "" = the whole resource
}

// String renders the ref as "<path> -> <target>" followed by " field <field>"
// when it names one, for example
// "spec.ip -> proxmox.openctl.io/v1/VirtualMachine/db field status.ip".
func (r Ref) String() string {
	s := r.Path + " -> " + r.Target.String()
	if r.Field != "" {
		s += " field " + r.Field
	}
	return s
}

// Marker returns a marker referring to field of target (the whole resource
// when field is ""), ready to be placed into a spec. The value is
// normalised (see [manifest.Normalize]).
func Marker(target manifest.ID, field string) map[string]any {
	ref := map[string]any{
		keyAPIVersion: target.APIVersion,
		keyKind:       target.Kind,
		keyName:       target.Name,
	}
	if field != "" {
		ref[keyField] = field
	}
	return map[string]any{Key: ref}
}

// IsMarker reports whether v is a map holding the key "$ref": a value
// [Collect] and [Resolve] treat as a marker. It does not check that the
// marker is well formed; [Collect] does.
func IsMarker(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m[Key]
	return ok
}

// Has reports whether r's spec holds any marker, well formed or not. It
// allocates nothing and validates nothing.
func Has(r *manifest.Resource) bool {
	return r != nil && hasMarker(r.Spec)
}

// hasMarker reports whether v is or contains a map holding Key. A nil map
// is passed as a typed nil and holds nothing.
func hasMarker(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x[Key]; ok {
			return true
		}
		for _, e := range x {
			if hasMarker(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasMarker(e) {
				return true
			}
		}
	}
	return false
}

// Collect returns every marker in r's spec, in a deterministic order: map
// keys are visited sorted, lists by index, and a marker's value is not
// searched further. Every malformed marker and every self-reference is
// reported, each as an [*Error] with code [errcode.Invalid], joined with
// errors.Join; the returned refs are then the well-formed ones.
func Collect(r *manifest.Resource) ([]Ref, error) {
	if r == nil {
		return nil, nil
	}
	c := collector{self: r.ID(), checked: map[refKey]*Error{}}
	if IsMarker(r.Spec) {
		c.errs = append(c.errs, rootErr(r.ID()))
	} else {
		c.walk(r.Spec)
	}
	return c.refs, join(c.errs)
}

// Dependencies returns the distinct targets of r's markers, sorted by
// [manifest.ID.Compare]. Errors are those of [Collect]; on error it returns
// no IDs.
func Dependencies(r *manifest.Resource) ([]manifest.ID, error) {
	refs, err := Collect(r)
	if err != nil {
		return nil, err
	}
	ids := make([]manifest.ID, 0, len(refs))
	for _, ref := range refs {
		ids = append(ids, ref.Target)
	}
	slices.SortFunc(ids, manifest.ID.Compare)
	return slices.Compact(ids), nil
}

type collector struct {
	self    manifest.ID
	trail   trail
	checked map[refKey]*Error // validation result per distinct target and field
	refs    []Ref
	errs    []error
}

func (c *collector) walk(v any) {
	switch x := v.(type) {
	case map[string]any:
		if v, ok := x[Key]; ok {
			c.marker(x, v)
			return
		}
		var buf [8]entry
		for _, e := range sortedEntries(x, buf[:0]) {
			c.trail = append(c.trail, step{key: e.key, index: -1})
			c.walk(e.val)
			c.trail = c.trail[:len(c.trail)-1]
		}
	case []any:
		for i, e := range x {
			c.trail = append(c.trail, step{index: i})
			c.walk(e)
			c.trail = c.trail[:len(c.trail)-1]
		}
	}
}

func (c *collector) marker(m map[string]any, v any) {
	target, field, err := shape(m, v)
	if err == nil && target == c.self {
		err = selfErr(target, field)
	}
	if err == nil {
		k := refKey{target, field}
		var ok bool
		if err, ok = c.checked[k]; !ok {
			err = check(target, field)
			c.checked[k] = err
		}
	}
	path := c.trail.String()
	if err != nil {
		e := *err // the checked cache shares templates; fill in a copy
		e.Resource, e.Path = c.self, path
		c.errs = append(c.errs, &e)
		return
	}
	c.refs = append(c.refs, Ref{Path: path, Target: target, Field: field})
}

// refKey is one distinct (target, field) pair.
type refKey struct {
	id    manifest.ID
	field string
}

// step is one element of a path in a spec: a map key, or a list index
// when index >= 0.
type step struct {
	key   string
	index int
}

// trail is the path from the spec to the value being walked.
type trail []step

// String renders the trail as a field path starting with "spec".
func (t trail) String() string {
	n := len("spec")
	for _, s := range t {
		if s.index < 0 {
			n += 1 + len(s.key)
		} else {
			n += 4
		}
	}
	b := make([]byte, 0, n)
	b = append(b, "spec"...)
	for _, s := range t {
		if s.index < 0 {
			b = append(b, '.')
			b = append(b, s.key...)
		} else {
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(s.index), 10)
			b = append(b, ']')
		}
	}
	return string(b)
}

// entry is one key and value of a map.
type entry struct {
	key string
	val any
}

// sortedEntries appends m's entries to buf, sorts them by key and returns
// the result. Taking the values along saves looking each key up again.
func sortedEntries(m map[string]any, buf []entry) []entry {
	for k, v := range m {
		buf = append(buf, entry{k, v})
	}
	if len(buf) > 1 {
		slices.SortFunc(buf, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	}
	return buf
}

// shape checks the cheap, structural part of a marker m (a map holding
// Key, whose value is v) and returns its target and field. The returned
// *Error has only its Code and Msg set; the caller adds where it is.
func shape(m map[string]any, v any) (manifest.ID, string, *Error) {
	if len(m) != 1 {
		var extra []string
		for k := range m {
			if k != Key {
				extra = append(extra, strconv.Quote(k))
			}
		}
		slices.Sort(extra)
		return manifest.ID{}, "", invalid(fmt.Sprintf("%s marker has other keys %s; a marker is a map holding only %s", Key, strings.Join(extra, ", "), Key))
	}
	ref, ok := v.(map[string]any)
	if !ok {
		return manifest.ID{}, "", invalid(fmt.Sprintf("%s value is %s, want a map of apiVersion, kind, name and optional field", Key, typeName(v)))
	}
	// Look the known keys up rather than ranging over the map: markers
	// are many and their maps small, and this is the hot path of Resolve.
	var (
		id       manifest.ID
		field    string
		hasField bool
		known    int
		allStr   = true
	)
	str := func(k string) (string, bool) {
		v, present := ref[k]
		if !present {
			return "", false
		}
		known++
		s, isString := v.(string)
		allStr = allStr && isString
		return s, true
	}
	id.APIVersion, _ = str(keyAPIVersion)
	id.Kind, _ = str(keyKind)
	id.Name, _ = str(keyName)
	field, hasField = str(keyField)
	if !allStr || known != len(ref) {
		return manifest.ID{}, "", shapeErr(ref)
	}
	var missing []string
	for _, f := range [...]struct{ key, val string }{{keyAPIVersion, id.APIVersion}, {keyKind, id.Kind}, {keyName, id.Name}} {
		if f.val == "" {
			missing = append(missing, f.key)
		}
	}
	if len(missing) > 0 {
		return manifest.ID{}, "", invalid(fmt.Sprintf("%s missing %s", Key, strings.Join(missing, ", ")))
	}
	if hasField && field == "" {
		return manifest.ID{}, "", invalid(fmt.Sprintf("%s field is empty; leave it out to refer to the whole resource", Key))
	}
	return id, field, nil
}

// shapeErr explains why ref has an unknown key or a non-string value.
func shapeErr(ref map[string]any) *Error {
	var unknown []string
	for k := range ref {
		switch k {
		case keyAPIVersion, keyKind, keyName, keyField:
		default:
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		noun := "key"
		if len(unknown) > 1 {
			noun = "keys"
		}
		return invalid(fmt.Sprintf("%s has unknown %s %s (allowed: apiVersion, kind, name, field)", Key, noun, strings.Join(unknown, ", ")))
	}
	for _, k := range [...]string{keyAPIVersion, keyKind, keyName, keyField} {
		if v, ok := ref[k]; ok {
			if _, ok := v.(string); !ok {
				return invalid(fmt.Sprintf("%s %s is %s, want a string", Key, k, typeName(v)))
			}
		}
	}
	return invalid(Key + " is malformed") // not reached: shape found a fault
}

// check validates what shape cannot check cheaply: the target ID and the
// syntax of the field path.
func check(target manifest.ID, field string) *Error {
	if e := checkID(target); e != nil {
		return e
	}
	return checkField(field)
}

func checkID(target manifest.ID) *Error {
	if err := target.Validate(); err != nil {
		return &Error{Code: errcode.Invalid, Msg: fmt.Sprintf("%s target %s is not a valid resource ID", Key, target), Err: err}
	}
	return nil
}

func checkField(field string) *Error {
	if field == "" {
		return nil
	}
	// Field on an empty object fails only when the path cannot be parsed.
	if _, _, err := manifest.Field(nil, field); err != nil {
		return &Error{Code: errcode.Invalid, Msg: fmt.Sprintf("%s field %q is not a valid field path", Key, field), Err: err}
	}
	return nil
}

// typeName names v's type with its article: "a map", "an integer".
func typeName(v any) string {
	n := manifest.TypeName(v)
	if strings.ContainsRune("aeiou", rune(n[0])) {
		return "an " + n
	}
	return "a " + n
}

func invalid(msg string) *Error { return &Error{Code: errcode.Invalid, Msg: msg} }

func selfErr(target manifest.ID, field string) *Error {
	return &Error{Target: target, Field: field, Code: errcode.Invalid, Msg: "refers to itself"}
}

func rootErr(self manifest.ID) *Error {
	return &Error{Resource: self, Path: "spec", Code: errcode.Invalid, Msg: fmt.Sprintf("a %s marker cannot stand for the whole spec", Key)}
}

// Retarget replaces, in r's spec, the target of every well-formed marker
// with f(target), in place: a kind written under another name (an alias)
// becomes the name its provider serves it by. Malformed markers are left
// for [Collect] to report.
func Retarget(r *manifest.Resource, f func(manifest.ID) manifest.ID) {
	if r != nil {
		retarget(r.Spec, f)
	}
}

func retarget(v any, f func(manifest.ID) manifest.ID) {
	switch x := v.(type) {
	case map[string]any:
		if v, ok := x[Key]; ok {
			target, _, err := shape(x, v)
			if err != nil {
				return
			}
			if to := f(target); to != target {
				ref := v.(map[string]any)
				ref[keyAPIVersion], ref[keyKind], ref[keyName] = to.APIVersion, to.Kind, to.Name
			}
			return
		}
		for _, e := range x {
			retarget(e, f)
		}
	case []any:
		for _, e := range x {
			retarget(e, f)
		}
	}
}
