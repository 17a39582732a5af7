package manifest

import (
	"gopkg.in/yaml.v3"
)

// document decodes one document into a Resource, strictly: only the known
// fields, each of the right type, and the identity checks of [Validate].
// It returns nil if the document has problems; they are reported.
func (c *converter) document(root *yaml.Node, index int) *Resource {
	c.failed = false
	if !c.measure(root) {
		return nil
	}
	root = deref(root)
	if root.Kind != yaml.MappingNode {
		c.errorf(root, "", "want a map, got %s", c.describeNode(root))
		return nil
	}
	line, _ := c.pos(root)
	r := &Resource{Source: Source{File: c.file, Line: line, Index: index, in: c.in}}
	d := docState{c: c, r: r, where: map[string]*yaml.Node{}}
	for _, e := range c.entries(root, "") {
		switch e.key {
		case "apiVersion":
			r.APIVersion = d.str(e, "apiVersion")
		case "kind":
			r.Kind = d.str(e, "kind")
		case "metadata":
			d.metadata(e)
		case "spec":
			if c.found != nil {
				c.fields = map[string]position{}
				c.at(e.keyNode, "spec")
			}
			r.Spec = d.object(e, "spec")
			if c.found != nil {
				c.found[index], c.fields = c.fields, nil
			}
		case "status":
			r.Status = d.object(e, "status")
		default:
			c.errorf(e.keyNode, e.key, "unknown field %q (want apiVersion, kind, metadata, spec or status)", e.key)
		}
	}
	for _, f := range []string{"apiVersion", "kind", "metadata"} {
		if _, ok := d.where[f]; !ok {
			c.errorf(root, f, "missing required field %s", f)
		}
	}
	// The semantic checks, for the fields that were present and of the
	// right type (a missing or mistyped field has been reported already).
	for _, e := range identityErrors(r) {
		n, ok := d.where[e.Field]
		if !ok || n == nil {
			continue
		}
		e.File = c.file
		e.Line, e.Column = c.pos(n)
		c.failed = true
		c.errs.add(e)
	}
	if c.failed {
		return nil
	}
	return r
}

// docState is the state of decoding one document's fixed fields.
type docState struct {
	c *converter
	r *Resource
	// where maps the fields found with the right type to the node to blame
	// for a semantic problem with them; a field found with the wrong type
	// maps to nil.
	where map[string]*yaml.Node
}

// str decodes a string field.
func (d *docState) str(e entry, path string) string {
	d.where[path] = nil
	n := deref(e.valNode)
	if n.Kind != yaml.ScalarNode {
		d.c.errorf(e.valNode, path, "want a string, got %s", d.c.describeNode(n))
		return ""
	}
	failed := d.c.failed
	d.c.failed = false
	v := d.c.scalar(n, path)
	bad := d.c.failed // the scalar itself was malformed, and reported
	d.c.failed = d.c.failed || failed
	s, ok := v.(string)
	if !ok {
		if !bad {
			d.c.errorf(e.valNode, path, "want a string, got %s", describe(v))
		}
		return ""
	}
	d.where[path] = e.valNode
	return s
}

// object decodes spec or status: a map (null means absent).
func (d *docState) object(e entry, path string) map[string]any {
	d.where[path] = nil
	n := deref(e.valNode)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.c.errorf(e.valNode, path, "want a map, got %s", d.c.describeNode(n))
		return nil
	}
	m, _ := d.c.value(n, path).(map[string]any)
	return m
}

// metadata decodes the metadata map.
func (d *docState) metadata(e entry) {
	d.where["metadata"] = nil
	n := deref(e.valNode)
	if n.Kind != yaml.MappingNode {
		d.c.errorf(e.valNode, "metadata", "want a map, got %s", d.c.describeNode(n))
		return
	}
	md := &d.r.Metadata
	for _, f := range d.c.entries(n, "metadata") {
		path := JoinPath("metadata", f.key)
		switch f.key {
		case "name":
			md.Name = d.str(f, path)
		case "namespace":
			md.Namespace = d.str(f, path)
		case "labels":
			md.Labels = d.stringMap(f, path)
		case "annotations":
			md.Annotations = d.stringMap(f, path)
		default:
			d.c.errorf(f.keyNode, path, "unknown field %q (want name, namespace, labels or annotations)", f.key)
		}
	}
	if _, ok := d.where["metadata.name"]; !ok {
		d.c.errorf(n, "metadata.name", "missing required field metadata.name")
	}
}

// stringMap decodes labels or annotations: a map of strings (null means
// absent). An empty key is blamed on its own line.
func (d *docState) stringMap(e entry, path string) map[string]string {
	d.where[path] = nil
	n := deref(e.valNode)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.c.errorf(e.valNode, path, "want a map of strings, got %s", d.c.describeNode(n))
		return nil
	}
	es := d.c.entries(n, path)
	m := make(map[string]string, len(es))
	for _, f := range es {
		if f.key == "" {
			d.where[path] = f.keyNode
		}
		m[f.key] = d.str(f, JoinPath(path, f.key))
	}
	if d.where[path] == nil {
		d.where[path] = e.valNode
	}
	return m
}

// isNull reports whether n is a null scalar.
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == nullTag
}
