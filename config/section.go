package config

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/errcode"
)

// Section is one provider's section of the configuration file,
// providers.<name>, as its driver receives it (registry.Driver
// DecodeConfig). It decodes itself strictly into the driver's own types
// with Decode, and places the driver's further complaints with Errorf.
//
// A Section is not safe for concurrent use.
type Section struct {
	name   string
	file   string              // the configuration file (for messages); "" if none is known
	exists bool                // the file exists
	node   *yaml.Node          // the section's node; nil when the file has none
	getenv func(string) string // the environment Load read, for ~
	home   string              // openctl's home directory; "" if unknown
	pos    map[string]position // field path → where its key is, filled by Decode
}

// NewSection returns a Section of the provider name holding the YAML
// text data, as if it were providers.<name> of file; for tests and for
// programs that keep a provider's configuration elsewhere.
func NewSection(name, file string, data []byte) (*Section, error) {
	s := &Section{name: name, file: file, exists: file != "", pos: map[string]position{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(file, err)
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		s.node = doc.Content[0]
	}
	return s, nil
}

// Home returns openctl's home directory as LoadEnv saw it —
// $OPENCTL_HOME, else ~/.openctl — or "" when there is none (a Section
// made by NewSection): where a driver keeps its own files by default
// (a cache, downloaded binaries).
func (s *Section) Home() string { return s.home }

// Name returns the provider's name.
func (s *Section) Name() string { return s.name }

// File returns the configuration file the section is in, for messages;
// "" when no file exists.
func (s *Section) File() string {
	if !s.exists {
		return ""
	}
	return s.file
}

// Describe says where the section is, or why there is none, for a
// message telling the user how to configure the provider:
// "~/.openctl/config.yaml has no providers.files",
// "~/.openctl/config.yaml does not exist".
func (s *Section) Describe() string {
	switch {
	case s.exists && s.node == nil:
		return s.file + " has no " + s.Path()
	case s.exists:
		return s.file + ": " + s.Path()
	case s.file != "":
		return s.file + " does not exist"
	}
	return "no configuration file"
}

// Path returns the section's field path, "providers.<name>".
func (s *Section) Path() string { return joinPath("providers", s.name) }

// IsEmpty reports whether the file has no such section, or an empty one.
func (s *Section) IsEmpty() bool { return s.node == nil || isNull(s.node) || len(s.node.Content) == 0 }

// Decode decodes the section into v, a pointer to a struct (or to a
// map[string]*yaml.Node, for a driver that passes its section on as it
// is, as an exec plugin's does), strictly:
// fields are matched by their yaml tag; an unknown field (with a
// suggestion when it is a known one spelt otherwise), a key set twice or
// a value of the wrong type is an *errcode.InputError naming the file, line, column
// and field path (providers.<name>.…), and every problem is reported at
// once (errors.Join; see Errors). Supported field types are string,
// bool, int, secret.Secret (refusing the "[redacted]" placeholder),
// pointers, structs and maps with string keys. A string field tagged
// `openctl:"path"` is a file path: a leading ~/ is the home directory and
// a relative path is relative to the configuration file's directory.
// Messages never quote a value, only keys. An empty section leaves v
// as it is.
func (s *Section) Decode(v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct && rv.Elem().Type() != nodeMapType {
		return inputError(errcode.InputError{File: s.File(), Field: s.Path(), Msg: fmt.Sprintf("cannot decode into %T: want a pointer to a struct or to a map[string]*yaml.Node (an openctl bug)", v)})
	}
	if s.IsEmpty() {
		return nil
	}
	d := &decoder{file: s.File(), pos: s.pos, expand: s.expand}
	d.decode(s.node, rv.Elem(), s.Path())
	return joinErrors(d.errs)
}

// nodeMapType is the one map type Decode accepts at the top.
var nodeMapType = reflect.TypeFor[map[string]*yaml.Node]()

// expand expands a file path as Decode documents.
func (s *Section) expand(p string) string {
	if p == "" {
		return p
	}
	getenv := s.getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	v := expandHome(p, getenv)
	if !filepath.IsAbs(v) && !strings.HasPrefix(v, "~") && s.File() != "" {
		v = filepath.Join(filepath.Dir(s.File()), v)
	}
	return v
}

// Errorf returns an *errcode.InputError about field — a path below the section such as
// "contexts.lab.credentials", or "" for the section itself — placed where
// the file has it or, when it does not, at the nearest enclosing field
// Decode saw. Drivers use it for what Decode cannot check: a context
// naming credentials that are not defined, a default context that does
// not exist. The message must not quote a secret.
func (s *Section) Errorf(field, format string, args ...any) error {
	path := s.Path()
	switch {
	case strings.HasPrefix(field, "["):
		path += field
	case field != "":
		path += "." + field
	}
	e := inputError(errcode.InputError{File: s.File(), Field: path, Msg: fmt.Sprintf(format, args...)})
	for p := path; p != ""; p = parentPath(p) {
		if pos, ok := s.pos[p]; ok {
			e.Line, e.Column = pos.line, pos.column
			break
		}
	}
	return e
}

// JoinPath appends a map key to a field path for Errorf: contexts.lab,
// or contexts["lab.eu"] when the key is not a simple name.
func JoinPath(path, key string) string { return joinPath(path, key) }
