package manifest

import (
	"encoding/base64"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/errcode"
)

// converter turns the yaml.Node tree of one document into normalised
// values, keeping node positions for error messages. It reports problems
// to its error list and carries on, so one pass finds them all.
type converter struct {
	file string
	errs *errorList

	// json is set for documents that came from JSON, where a plain scalar
	// is always a number, true, false or null.
	json bool
	// lineOff and colOff map node positions to positions in the file: a
	// JSON value is parsed on its own, starting colOff columns into line
	// lineOff+1 of the file.
	lineOff, colOff int

	budget int  // nodes the rest of the input may still expand to
	failed bool // a problem was reported in the current document

	in *input // the input, for the resources' Source

	// found, when set, collects where each document's spec fields are
	// written, by resource index (input.positions); fields, while a spec
	// is converted, is its document's.
	found  map[int]map[string]position
	fields map[string]position
}

// at records that the field at path is written at node n, while a spec
// is converted. The first record of a path stays: a merge key's source
// does not move a field the mapping sets itself.
func (c *converter) at(n *yaml.Node, path string) {
	if c.fields == nil {
		return
	}
	if _, ok := c.fields[path]; ok {
		return
	}
	line, col := c.pos(n)
	c.fields[path] = position{int32(line), int32(col)}
}

// pos returns n's 1-based line and column in the file.
func (c *converter) pos(n *yaml.Node) (line, col int) {
	line, col = n.Line, n.Column
	if line == 1 {
		col += c.colOff
	}
	return line + c.lineOff, col
}

// errorf reports a problem at node n (nil: position unknown) in field.
func (c *converter) errorf(n *yaml.Node, field, format string, args ...any) {
	e := inputError(errcode.InputError{File: c.file, Field: field, Msg: fmt.Sprintf(format, args...)})
	if n != nil {
		e.Line, e.Column = c.pos(n)
	}
	c.failed = true
	c.errs.add(e)
}

// deref follows an alias to the node it names. The parser never makes an
// alias of an alias, and measure has already rejected unknown anchors.
func deref(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// measured is what measure records about a node: how many nodes it
// expands to and how deep.
type measured struct{ size, height int }

// measurer walks a document once, following aliases, to find its expanded
// size and depth and to check the limits on lists, maps and strings,
// without building anything. Only anchored nodes can be reached more than
// once (through aliases), so only their results are memoised: the walk is
// linear in the document however many times an anchor is used, and its
// memory is proportional to the anchors, not to the nodes.
type measurer struct {
	done   map[*yaml.Node]measured
	active map[*yaml.Node]bool // anchored nodes on the current path: reaching one again is a cycle
	limit  int
	path   []step // the field path to the node being walked
	bad    *yaml.Node
	field  string // the field path of bad
	msg    string
}

// step is one step of a field path: a list index (>= 0), a map key
// (index -1), or nothing (-2: the value of a merge key, whose keys are the
// map's own).
type step struct {
	key   string
	index int
}

func (m *measurer) fieldPath() string {
	var p string
	for _, s := range m.path {
		switch {
		case s.index >= 0:
			p = JoinIndex(p, s.index)
		case s.index == -1:
			p = JoinPath(p, s.key)
		}
	}
	return p
}

// measure checks that the document rooted at n stays within the node budget
// and the limits on depth, list, map and string sizes with every alias
// expanded and that no alias refers to a node containing it. It reports a
// problem and returns false otherwise.
func (c *converter) measure(n *yaml.Node) bool {
	m := &measurer{done: map[*yaml.Node]measured{}, active: map[*yaml.Node]bool{}, limit: c.budget}
	got, ok := m.walk(n, 1)
	if !ok {
		c.errorf(m.bad, m.field, "%s", m.msg)
		return false
	}
	c.budget -= got.size
	return true
}

func (m *measurer) fail(n *yaml.Node, format string, args ...any) (measured, bool) {
	m.bad, m.field, m.msg = n, m.fieldPath(), fmt.Sprintf(format, args...)
	return measured{}, false
}

func (m *measurer) walk(n *yaml.Node, depth int) (measured, bool) {
	anchored := n.Anchor != ""
	if anchored {
		if got, ok := m.done[n]; ok {
			if depth+got.height-1 > maxDepth {
				return m.fail(n, "document is nested more than %d levels deep (with aliases expanded)", maxDepth)
			}
			return got, true
		}
	}
	if depth > maxDepth {
		return m.fail(n, "document is nested more than %d levels deep (with aliases expanded)", maxDepth)
	}
	if anchored {
		if m.active[n] {
			return m.fail(n, "alias *%s refers to a node that contains it", n.Anchor)
		}
		m.active[n] = true
		defer delete(m.active, n)
	}
	got := measured{size: 1, height: 1}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return m.fail(n, "alias *%s names no anchor", n.Value)
		}
		if m.active[n.Alias] {
			return m.fail(n, "alias *%s refers to a node that contains it", n.Value)
		}
		t, ok := m.walk(n.Alias, depth)
		if !ok {
			return t, false
		}
		got = t
	case yaml.ScalarNode:
		if len(n.Value) > maxStringLen {
			return m.fail(n, "string is %d bytes long; at most %d (%d KiB) are allowed", len(n.Value), maxStringLen, maxStringLen>>10)
		}
	case yaml.SequenceNode:
		if len(n.Content) > maxListLen {
			return m.fail(n, "list has %d items; at most %d are allowed", len(n.Content), maxListLen)
		}
	case yaml.MappingNode:
		if len(n.Content)/2 > maxListLen {
			return m.fail(n, "map has %d keys; at most %d are allowed", len(n.Content)/2, maxListLen)
		}
	}
	for i, child := range n.Content {
		switch {
		case n.Kind == yaml.SequenceNode:
			m.path = append(m.path, step{index: i})
		case n.Kind == yaml.MappingNode && i%2 == 0:
			if k := deref(child); k.Kind == yaml.ScalarNode && len(k.Value) > maxKeyLen {
				return m.fail(child, "map key %s is %d bytes long; at most %d are allowed", abbrev(k.Value), len(k.Value), maxKeyLen)
			}
		case n.Kind == yaml.MappingNode:
			if k := deref(n.Content[i-1]); k.Kind == yaml.ScalarNode && k.ShortTag() != mergeTag {
				m.path = append(m.path, step{key: k.Value, index: -1})
			} else {
				m.path = append(m.path, step{key: "", index: -2}) // no step of its own
			}
		}
		t, ok := m.walk(child, depth+1)
		if n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode && i%2 == 1 {
			m.path = m.path[:len(m.path)-1]
		}
		if !ok {
			return t, false
		}
		got.size += t.size
		got.height = max(got.height, t.height+1)
		if got.size > m.limit {
			return m.fail(n, "document expands to more than %d values (aliases expanded); refusing to decode it", maxNodes)
		}
	}
	if anchored {
		m.done[n] = got
	}
	return got, true
}

// entry is one key/value pair of a mapping.
type entry struct {
	key     string
	keyNode *yaml.Node
	valNode *yaml.Node
}

// entries returns the pairs of mapping n (an alias already followed) in
// order, with merge keys applied: "<<: *base" or "<<: [*a, *b]" adds the
// pairs of the named mappings that n does not set itself, earlier sources
// winning over later ones, as in the YAML merge-key specification. Keys
// must be strings and may not repeat; offending pairs are reported and left
// out. path is n's field path.
func (c *converter) entries(n *yaml.Node, path string) []entry {
	out := make([]entry, 0, len(n.Content)/2)
	seen := make(map[string]*yaml.Node, len(n.Content)/2)
	var merge, mergeKey *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kr := deref(k)
		if kr.Kind == yaml.ScalarNode && kr.ShortTag() == mergeTag {
			if mergeKey != nil {
				line, _ := c.pos(mergeKey)
				c.errorf(k, path, "duplicate merge key << (first at line %d)", line)
				continue
			}
			merge, mergeKey = v, k
			continue
		}
		key, ok := c.key(k, path)
		if !ok {
			continue
		}
		if first, dup := seen[key]; dup {
			line, _ := c.pos(first)
			c.errorf(k, JoinPath(path, key), "duplicate key %q (first at line %d)", key, line)
			continue
		}
		seen[key] = k
		out = append(out, entry{key: key, keyNode: k, valNode: v})
	}
	if merge == nil {
		return out
	}
	for _, src := range c.mergeSources(merge, path) {
		for _, e := range c.entries(src, path) {
			if _, dup := seen[e.key]; dup {
				continue
			}
			seen[e.key] = e.keyNode
			out = append(out, e)
		}
	}
	return out
}

// mergeSources returns the mappings a merge key's value names.
func (c *converter) mergeSources(v *yaml.Node, path string) []*yaml.Node {
	r := deref(v)
	switch r.Kind {
	case yaml.MappingNode:
		return []*yaml.Node{r}
	case yaml.SequenceNode:
		out := make([]*yaml.Node, 0, len(r.Content))
		for _, e := range r.Content {
			if er := deref(e); er.Kind == yaml.MappingNode {
				out = append(out, er)
			} else {
				c.errorf(e, path, "merge key << wants a map or a list of maps, got a list holding %s", c.describeNode(er))
			}
		}
		return out
	}
	c.errorf(v, path, "merge key << wants a map or a list of maps, got %s", c.describeNode(r))
	return nil
}

// key returns the string a mapping key holds. A key that is not a string
// (a number, a bool, null, a list or a map) is reported.
func (c *converter) key(k *yaml.Node, path string) (string, bool) {
	kr := deref(k)
	if kr.Kind == yaml.ScalarNode {
		switch kr.ShortTag() {
		case strTag, timestampTag:
			return kr.Value, true
		case binaryTag:
			if b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(kr.Value), "")); err == nil {
				return string(b), true
			}
		}
		if kr.Value == "" {
			c.errorf(k, path, "map key is empty (null), want a string")
		} else {
			c.errorf(k, path, "map key %s is %s, want a string (quote it: %q)", abbrev(kr.Value), c.describeNode(kr), abbrev(kr.Value))
		}
		return "", false
	}
	c.errorf(k, path, "map key is %s, want a string", c.describeNode(kr))
	return "", false
}

// The YAML tags the decoder understands, in the short form yaml.v3 reports.
const (
	strTag       = "!!str"
	intTag       = "!!int"
	floatTag     = "!!float"
	boolTag      = "!!bool"
	nullTag      = "!!null"
	timestampTag = "!!timestamp"
	binaryTag    = "!!binary"
	mergeTag     = "!!merge"
	mapTag       = "!!map"
	seqTag       = "!!seq"
)

// describeNode names what a node holds, with an article, for messages.
func (c *converter) describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case strTag, timestampTag, binaryTag, mergeTag:
			if c.json && n.Style == 0 {
				return "a number"
			}
			return "a string"
		case intTag:
			return "an integer"
		case floatTag:
			return "a number"
		case boolTag:
			return "a bool"
		case nullTag:
			return "null"
		}
		return fmt.Sprintf("a value tagged %s", n.ShortTag())
	}
	return "an unexpected YAML node"
}

// value converts n to a normalised value. Problems are reported and the
// offending value becomes nil.
func (c *converter) value(n *yaml.Node, path string) any {
	n = deref(n)
	switch n.Kind {
	case yaml.MappingNode:
		if t := n.ShortTag(); t != mapTag {
			c.errorf(n, path, "unsupported tag %s on a map", t)
			return nil
		}
		es := c.entries(n, path)
		m := make(map[string]any, len(es))
		for _, e := range es {
			p := JoinPath(path, e.key)
			c.at(e.keyNode, p)
			m[e.key] = c.value(e.valNode, p)
		}
		return m
	case yaml.SequenceNode:
		if t := n.ShortTag(); t != seqTag {
			c.errorf(n, path, "unsupported tag %s on a list", t)
			return nil
		}
		l := make([]any, len(n.Content))
		for i, e := range n.Content {
			p := JoinIndex(path, i)
			c.at(e, p)
			l[i] = c.value(e, p)
		}
		return l
	case yaml.ScalarNode:
		return c.scalar(n, path)
	}
	c.errorf(n, path, "unexpected YAML node")
	return nil
}

// scalar converts a scalar node by its (resolved or explicit) tag: !!str,
// !!timestamp and !!merge keep their text; !!binary is base64-decoded;
// !!int becomes int64, or float64 when it does not fit; !!float becomes a
// finite float64; !!bool and !!null become bool and nil. Other tags are
// rejected.
func (c *converter) scalar(n *yaml.Node, path string) any {
	v := n.Value
	switch t := n.ShortTag(); t {
	case strTag:
		if c.json && n.Style == 0 {
			// A JSON number YAML could not read as one: out of range.
			c.errorf(n, path, "number %s is out of range", abbrev(v))
			return nil
		}
		return v
	case timestampTag, mergeTag:
		return v
	case binaryTag:
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(v), ""))
		if err != nil {
			c.errorf(n, path, "!!binary value is not valid base64")
			return nil
		}
		return string(b)
	case nullTag:
		return nil
	case boolTag:
		switch strings.ToLower(v) {
		case "true", "yes", "on", "y":
			return true
		case "false", "no", "off", "n":
			return false
		}
		c.errorf(n, path, "cannot read %q as a bool", abbrev(v))
		return nil
	case intTag:
		x, msg := parseInt(v)
		if msg != "" {
			c.errorf(n, path, "%s", msg)
			return nil
		}
		return x
	case floatTag:
		x, msg := parseFloat(v)
		if msg != "" {
			c.errorf(n, path, "%s", msg)
			return nil
		}
		return x
	default:
		c.errorf(n, path, "unsupported tag %s", t)
		return nil
	}
}

// maxNumberLen bounds the digits of an integer too large for int64 that is
// still converted to float64 (the largest float64 has 309 digits).
const maxNumberLen = 400

// parseInt reads a YAML integer (decimal, 0x, 0o, 0b or a leading-0 octal,
// with optional '_' separators) as int64, or as float64 when it is out of
// int64 range but within float64's. It returns a message on failure.
func parseInt(s string) (any, string) {
	plain := strings.ReplaceAll(s, "_", "")
	if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return i, ""
	}
	if len(plain) > maxNumberLen {
		return nil, fmt.Sprintf("integer %s is out of range", abbrev(s))
	}
	b, ok := new(big.Int).SetString(plain, 0)
	if !ok {
		return nil, fmt.Sprintf("cannot read %q as an integer", abbrev(s))
	}
	f, _ := new(big.Float).SetInt(b).Float64()
	if math.IsInf(f, 0) {
		return nil, fmt.Sprintf("integer %s is out of range", abbrev(s))
	}
	return f, ""
}

// parseFloat reads a YAML float as a finite float64. Infinities and NaN
// are rejected: they have no JSON form and break equality.
func parseFloat(s string) (any, string) {
	plain := strings.ReplaceAll(s, "_", "")
	switch strings.ToLower(strings.TrimLeft(plain, "+-")) {
	case ".inf", ".nan", "inf", "infinity", "nan":
		return nil, fmt.Sprintf("%s is not a finite number", abbrev(s))
	}
	f, err := strconv.ParseFloat(plain, 64)
	switch {
	case err != nil && math.IsInf(f, 0):
		return nil, fmt.Sprintf("number %s is out of range", abbrev(s))
	case err != nil:
		return nil, fmt.Sprintf("cannot read %q as a number", abbrev(s))
	case math.IsInf(f, 0) || math.IsNaN(f):
		return nil, fmt.Sprintf("%s is not a finite number", abbrev(s))
	}
	return f, ""
}

// abbrev shortens s for an error message.
func abbrev(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
