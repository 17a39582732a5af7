package apischema

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// ErrFormat is returned (wrapped) by Load and Parse when the data is not
// Proxmox VE API-viewer data. Check with errors.Is.
var ErrFormat = errors.New("apischema: not Proxmox API viewer data")

// Schema is the parsed API description: every method+path operation.
// It is immutable after Load and safe for concurrent use.
type Schema struct {
	ops []*Operation // sorted by path, then method
	// UncheckedPatterns lists the parameter patterns Go's regexp cannot
	// compile ("METHOD /path param: pattern"); Validate skips them.
	UncheckedPatterns []string
}

// OpRef names one operation: an HTTP method and a path template such as
// /nodes/{node}/qemu/{vmid}/config.
type OpRef struct {
	Method string
	Path   string
}

// String returns "METHOD /path".
func (r OpRef) String() string { return r.Method + " " + r.Path }

// Operation is one method on one path template. The Operation returned by
// Lookup also carries the values of the path's parameters, which Validate
// uses. An Operation is immutable and safe for concurrent use.
type Operation struct {
	Method      string
	Path        string // template, e.g. /nodes/{node}/qemu/{vmid}/config
	Name        string
	Description string
	// Parameters by name as the schema spells them; indexed parameters keep
	// their "[n]" suffix (net[n] stands for net0, net1, ...).
	Parameters map[string]*Property
	// AdditionalProperties is false when unknown parameters are refused
	// (additionalProperties: 0, the case for almost every method).
	AdditionalProperties bool
	Permissions          Permissions
	Returns              json.RawMessage
	AllowToken           bool
	Protected            bool
	ProxyTo              string
	// PathParams holds the values taken from a concrete path by Lookup;
	// nil on the Operations found through Operation.
	PathParams map[string]string

	segments []string
}

// Permissions is the permission description of an operation.
type Permissions struct {
	Check       json.RawMessage `json:"check,omitempty"`
	Description string          `json:"description,omitempty"`
	User        string          `json:"user,omitempty"`
}

// Property is the schema of one parameter.
type Property struct {
	Name        string
	Type        string // string, integer, number, boolean, array, or ""
	Optional    bool
	Enum        []string
	Pattern     string
	Format      string // named format, "" when none or a property string
	Minimum     *float64
	Maximum     *float64
	MinLength   *int
	MaxLength   *int
	Default     any
	TypeText    string
	Description string
	Requires    string // another parameter that must be given with this one
	// PropertyString is the key schema of a property-string format
	// (format given as an object), nil otherwise.
	PropertyString map[string]*Property
	// DefaultKey and Alias describe keys inside a property string.
	DefaultKey bool
	Alias      string
	KeyAlias   string

	re *regexp.Regexp // compiled ^Pattern$, nil if none or uncompilable
}

// Load reads a gzip-compressed apidoc.js file and parses it with Parse.
func Load(path string) (*Schema, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("apischema: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("apischema: %s: %w", path, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("apischema: %s: %w", path, err)
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return s, nil
}

// Parse parses uncompressed apidoc.js text: `const apiSchema = [...];`,
// possibly followed by the viewer's JavaScript, or the bare JSON array.
func Parse(data []byte) (*Schema, error) {
	data = bytes.TrimSpace(data)
	data = bytes.TrimPrefix(data, []byte("const apiSchema = "))
	dec := json.NewDecoder(bytes.NewReader(data))
	var nodes []rawNode
	// Decode reads the first JSON value only; the trailing ";" and the
	// viewer code after it are left unread.
	if err := dec.Decode(&nodes); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	s := &Schema{}
	var walk func([]rawNode, int) error
	walk = func(ns []rawNode, depth int) error {
		if depth > 64 {
			return fmt.Errorf("%w: tree deeper than 64", ErrFormat)
		}
		for i := range ns {
			n := &ns[i]
			for method, m := range n.Info {
				op, err := s.newOperation(strings.ToUpper(method), n.Path, m)
				if err != nil {
					return err
				}
				s.ops = append(s.ops, op)
			}
			if err := walk(n.Children, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(nodes, 0); err != nil {
		return nil, err
	}
	if len(s.ops) == 0 {
		return nil, fmt.Errorf("%w: no operations", ErrFormat)
	}
	sort.Slice(s.ops, func(i, j int) bool {
		if s.ops[i].Path != s.ops[j].Path {
			return s.ops[i].Path < s.ops[j].Path
		}
		return s.ops[i].Method < s.ops[j].Method
	})
	sort.Strings(s.UncheckedPatterns)
	return s, nil
}

// Operations lists every operation, sorted by path then method.
func (s *Schema) Operations() []OpRef {
	out := make([]OpRef, len(s.ops))
	for i, op := range s.ops {
		out[i] = OpRef{Method: op.Method, Path: op.Path}
	}
	return out
}

// Operation returns the operation with exactly this method and template.
// The result is shared: callers must not modify it.
func (s *Schema) Operation(method, template string) (*Operation, bool) {
	method = strings.ToUpper(method)
	for _, op := range s.ops {
		if op.Method == method && op.Path == template {
			return op, true
		}
	}
	return nil, false
}

// Lookup finds the operation serving a concrete request path such as
// /nodes/pve1/qemu/100/config (an /api2/json prefix and a trailing slash are
// ignored) and returns it with PathParams filled in. A template such as
// /nodes/{node}/qemu/{vmid}/config also matches itself. Like Proxmox's
// router, a literal segment wins over a parameter at the same position.
func (s *Schema) Lookup(method, path string) (*Operation, bool) {
	method = strings.ToUpper(method)
	segs := splitPath(path)
	var best *Operation
	var bestLit []bool
	for _, op := range s.ops {
		if op.Method != method || len(op.segments) != len(segs) {
			continue
		}
		lit := make([]bool, len(segs))
		ok := true
		for i, t := range op.segments {
			if isParam(t) {
				if segs[i] == "" {
					ok = false
					break
				}
				continue
			}
			if t != segs[i] {
				ok = false
				break
			}
			lit[i] = true
		}
		if !ok {
			continue
		}
		if best == nil || moreLiteral(lit, bestLit) {
			best, bestLit = op, lit
		}
	}
	if best == nil {
		return nil, false
	}
	bound := *best
	bound.PathParams = map[string]string{}
	for i, t := range best.segments {
		if isParam(t) {
			bound.PathParams[t[1:len(t)-1]] = segs[i]
		}
	}
	return &bound, true
}

// moreLiteral reports whether a has a literal segment at the first position
// where a and b differ.
func moreLiteral(a, b []bool) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i]
		}
	}
	return false
}

func splitPath(p string) []string {
	p = strings.TrimPrefix(p, "/api2/json")
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func isParam(seg string) bool {
	return len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}'
}

// raw JSON shapes of apidoc.js.

type rawNode struct {
	Path     string               `json:"path"`
	Text     string               `json:"text"`
	Children []rawNode            `json:"children"`
	Info     map[string]rawMethod `json:"info"`
}

type rawMethod struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	AllowToken  any             `json:"allowtoken"`
	Protected   any             `json:"protected"`
	ProxyTo     string          `json:"proxyto"`
	Parameters  rawObject       `json:"parameters"`
	Returns     json.RawMessage `json:"returns"`
	Permissions json.RawMessage `json:"permissions"`
}

type rawObject struct {
	AdditionalProperties any                `json:"additionalProperties"`
	Properties           map[string]rawProp `json:"properties"`
}

type rawProp struct {
	Type        any             `json:"type"`
	Optional    any             `json:"optional"`
	Enum        []any           `json:"enum"`
	Pattern     string          `json:"pattern"`
	Format      json.RawMessage `json:"format"`
	Minimum     any             `json:"minimum"`
	Maximum     any             `json:"maximum"`
	MinLength   any             `json:"minLength"`
	MaxLength   any             `json:"maxLength"`
	Default     any             `json:"default"`
	TypeText    string          `json:"typetext"`
	Description string          `json:"description"`
	Requires    any             `json:"requires"`
	DefaultKey  any             `json:"default_key"`
	Alias       string          `json:"alias"`
	KeyAlias    string          `json:"keyAlias"`
}

func (s *Schema) newOperation(method, path string, m rawMethod) (*Operation, error) {
	if path == "" || path[0] != '/' {
		return nil, fmt.Errorf("%w: path %q", ErrFormat, path)
	}
	op := &Operation{
		Method:      method,
		Path:        path,
		Name:        m.Name,
		Description: m.Description,
		Parameters:  map[string]*Property{},
		// PVE's method schema defaults allowtoken to 1.
		AllowToken: m.AllowToken == nil || truthy(m.AllowToken),
		Protected:  truthy(m.Protected),
		ProxyTo:    m.ProxyTo,
		Returns:    m.Returns,
		segments:   splitPath(path),
	}
	// Unset additionalProperties means "anything goes" in check_object.
	op.AdditionalProperties = m.Parameters.AdditionalProperties == nil || truthy(m.Parameters.AdditionalProperties)
	if len(m.Permissions) > 0 {
		if err := json.Unmarshal(m.Permissions, &op.Permissions); err != nil {
			return nil, fmt.Errorf("%w: %s %s permissions: %w", ErrFormat, method, path, err)
		}
	}
	for name, rp := range m.Parameters.Properties {
		p, err := s.newProperty(method+" "+path+" "+name, name, rp, 0)
		if err != nil {
			return nil, err
		}
		op.Parameters[name] = p
	}
	return op, nil
}

func (s *Schema) newProperty(where, name string, rp rawProp, depth int) (*Property, error) {
	p := &Property{
		Name:        name,
		Optional:    truthy(rp.Optional),
		Pattern:     rp.Pattern,
		Default:     rp.Default,
		TypeText:    rp.TypeText,
		Description: rp.Description,
		DefaultKey:  truthy(rp.DefaultKey),
		Alias:       rp.Alias,
		KeyAlias:    rp.KeyAlias,
		Minimum:     number(rp.Minimum),
		Maximum:     number(rp.Maximum),
	}
	if t, ok := rp.Type.(string); ok {
		p.Type = t
	}
	if r, ok := rp.Requires.(string); ok {
		p.Requires = r
	}
	if f := number(rp.MinLength); f != nil {
		n := int(*f)
		p.MinLength = &n
	}
	if f := number(rp.MaxLength); f != nil {
		n := int(*f)
		p.MaxLength = &n
	}
	for _, e := range rp.Enum {
		p.Enum = append(p.Enum, fmt.Sprint(e))
	}
	if len(rp.Format) > 0 {
		switch rp.Format[0] {
		case '"':
			if err := json.Unmarshal(rp.Format, &p.Format); err != nil {
				return nil, fmt.Errorf("%w: %s format: %w", ErrFormat, where, err)
			}
		case '{':
			if depth > 4 {
				break
			}
			var keys map[string]rawProp
			if err := json.Unmarshal(rp.Format, &keys); err != nil {
				return nil, fmt.Errorf("%w: %s format: %w", ErrFormat, where, err)
			}
			p.PropertyString = map[string]*Property{}
			for k, kp := range keys {
				sub, err := s.newProperty(where+"."+k, k, kp, depth+1)
				if err != nil {
					return nil, err
				}
				p.PropertyString[k] = sub
			}
		}
	}
	if p.Pattern != "" {
		// Proxmox matches m/^$pattern$/ — no group, so an alternation in
		// the pattern binds to the anchors exactly as it does in Perl.
		re, err := regexp.Compile("^" + goRegexp(p.Pattern) + "$")
		if err != nil {
			s.UncheckedPatterns = append(s.UncheckedPatterns, where+": "+p.Pattern)
		} else {
			p.re = re
		}
	}
	return p, nil
}

// truthy interprets Perl-ish schema flags: 1, "1", true.
func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != "" && x != "0"
	}
	return false
}

// number reads a schema bound given as a JSON number or a numeric string.
func number(v any) *float64 {
	switch x := v.(type) {
	case float64:
		return &x
	case string:
		if f, err := strconv.ParseFloat(x, 64); err == nil {
			return &f
		}
	}
	return nil
}

// goRegexp rewrites what Perl's qr// stringification adds to a pattern,
// (?^:...) and (?^i:...), into RE2 syntax.
func goRegexp(pattern string) string {
	return strings.ReplaceAll(pattern, "(?^", "(?")
}
