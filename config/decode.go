package config

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
)

// decoder decodes a YAML node tree into the configuration types,
// strictly: unknown fields, duplicate keys and values of the wrong type
// are errors naming the line, column and field path. It never quotes a
// value in a message (a misplaced secret would be shown), only keys. It
// is not safe for concurrent use.
type decoder struct {
	file string
	errs []*errcode.InputError
	pos  map[string]position // field path → where its key is
	// expand expands the file paths of fields tagged `openctl:"path"`;
	// nil leaves them as written.
	expand func(string) string
}

var (
	secretType = reflect.TypeFor[secret.Secret]()
	// nodeType fields keep their YAML as it is, for a later decoder.
	nodeType = reflect.TypeFor[*yaml.Node]()
	// durationType fields are written as Go durations: "30s", "10m".
	durationType = reflect.TypeFor[time.Duration]()
)

func (d *decoder) fail(n *yaml.Node, field, format string, args ...any) {
	d.errs = append(d.errs, inputError(errcode.InputError{File: d.file, Line: n.Line, Column: n.Column, Field: field, Msg: fmt.Sprintf(format, args...)}))
}

// decode decodes n into v, whose field path is path. The recursion is
// bounded by the depth of the configuration types, so aliases cannot
// make it loop.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if v.Type() == nodeType {
		v.Set(reflect.ValueOf(n))
		return
	}
	if isNull(n) {
		v.Set(reflect.Zero(v.Type()))
		return
	}
	if v.Type() == secretType {
		if n.Kind != yaml.ScalarNode {
			d.fail(n, path, "want a string, got %s", describe(n))
			return
		}
		if n.Value == secret.Redacted {
			// The output of Redacted (`openctl config view`) fed back.
			d.fail(n, path, "holds the placeholder %s, not a secret: give the real value", secret.Redacted)
			return
		}
		v.Set(reflect.ValueOf(secret.New(n.Value)))
		return
	}
	if v.Type() == durationType {
		dur, err := time.ParseDuration(n.Value)
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" || err != nil {
			got := describe(n)
			if n.Kind == yaml.ScalarNode {
				got = quote(n.Value) // not a secret: a duration field
			}
			d.fail(n, path, "want a duration like 30s or 10m, got %s", got)
			return
		}
		v.SetInt(int64(dur))
		return
	}
	switch v.Kind() {
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(n, path, "want a string, got %s", describe(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			d.fail(n, path, "want true or false, got %s", describe(n))
			return
		}
		v.SetBool(b)
	case reflect.Int:
		var i int
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			d.fail(n, path, "want an integer, got %s", describe(n))
			return
		}
		if err := n.Decode(&i); err != nil {
			d.fail(n, path, "the integer is out of range")
			return
		}
		v.SetInt(int64(i))
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path)
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Map:
		d.decodeMap(n, v, path)
	default:
		d.fail(n, path, "cannot decode into %s (an openctl bug)", v.Type())
	}
}

// decodeStruct decodes the mapping n into the struct v, by yaml tag.
func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	names, index := fieldsOf(v.Type())
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a map with the fields %s, got %s", list(names), describe(n))
		return
	}
	d.entries(n, path, func(k, val *yaml.Node, key, fp string) {
		f, ok := index[key]
		if !ok {
			d.fail(k, fp, "unknown field%s (known: %s)", suggest(key, names), list(names))
			return
		}
		d.decode(val, v.Field(f), fp)
		if fv := v.Field(f); d.expand != nil && fv.Kind() == reflect.String && v.Type().Field(f).Tag.Get("openctl") == "path" {
			fv.SetString(d.expand(fv.String()))
		}
	})
}

// entries calls fn for each key of the mapping n that is usable and not
// set twice (reporting those that are not), with the key's field path,
// after recording where the key is.
func (d *decoder) entries(n *yaml.Node, path string, fn func(k, val *yaml.Node, key, fp string)) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key, ok := d.key(k, path)
		if !ok {
			continue
		}
		fp := joinPath(path, key)
		if line, dup := seen[key]; dup {
			d.fail(k, fp, "set twice (first at line %d)", line)
			continue
		}
		seen[key] = k.Line
		d.pos[fp] = position{k.Line, k.Column}
		fn(k, val, key, fp)
	}
}

// decodeMap decodes the mapping n into the map v, whose keys are strings.
func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a map of names, got %s", describe(n))
		return
	}
	if v.IsNil() && len(n.Content) > 0 {
		// An empty map stays nil, as Save's omitempty writes it.
		v.Set(reflect.MakeMap(v.Type()))
	}
	elemType := v.Type().Elem()
	d.entries(n, path, func(k, val *yaml.Node, key, fp string) {
		if key == "" {
			d.fail(k, path, "a name must not be empty")
			return
		}
		var elem reflect.Value
		switch {
		case elemType == nodeType:
			elem = reflect.ValueOf(val)
		case elemType.Kind() == reflect.Pointer:
			// "lab:" with nothing under it is an empty entry, not nil.
			elem = reflect.New(elemType.Elem())
			d.decode(val, elem.Elem(), fp)
		default:
			elem = reflect.New(elemType).Elem()
			d.decode(val, elem, fp)
		}
		v.SetMapIndex(reflect.ValueOf(key), elem)
	})
}

// key returns the text of the mapping key k, or reports why it is not a
// usable key.
func (d *decoder) key(k *yaml.Node, path string) (string, bool) {
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	switch {
	case k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge":
		d.fail(k, path, "merge keys (<<) are not supported: write the fields out")
		return "", false
	case k.Kind != yaml.ScalarNode || isNull(k):
		d.fail(k, path, "want a name as the key, got %s", describe(k))
		return "", false
	}
	return k.Value, true
}

// fieldsOf returns the yaml names of the fields of the struct type t, in
// declaration order, and their indexes by name.
func fieldsOf(t reflect.Type) ([]string, map[string]int) {
	var names []string
	index := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || name == "" {
			continue
		}
		names = append(names, name)
		index[name] = i
	}
	return names, index
}

// suggest returns ` (did you mean "x"?)` when key is a known name spelt
// with another case or with '-' or '_' (tokenID, default_context,
// defaultContext), else "".
func suggest(key string, known []string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(s))
	}
	for _, k := range known {
		if norm(k) == norm(key) {
			return fmt.Sprintf(" (did you mean %q?)", k)
		}
	}
	return ""
}

func isNull(n *yaml.Node) bool {
	return n.Kind == 0 || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names the kind of a node with an article, for messages such as
// "want a string, got a list". It never shows the value.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "a string"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "null"
		case "!!timestamp":
			return "a timestamp"
		case "!!binary":
			return "binary data"
		}
		return "a value tagged " + n.ShortTag()
	}
	return "nothing"
}

// simpleKeyRe matches map keys written bare in a field path.
var simpleKeyRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// joinPath appends key to the field path: a.b, or a["b.c"] when key is not
// a simple name.
func joinPath(path, key string) string {
	if !simpleKeyRe.MatchString(key) {
		return path + "[" + quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// pathKey renders a map key as it appears in a field path.
func pathKey(key string) string {
	return strings.TrimPrefix(joinPath("", key), ".")
}
