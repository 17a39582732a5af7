package manifest

import "gopkg.in/yaml.v3"

// documents decodes one document of the input, index its first
// resource's place: a resource, or the items of a kubectl-style List
// (apiVersion v1, kind List), as `kubectl get -o yaml` prints several
// objects. It returns the resources without problems and how many
// places the document took.
func (c *converter) documents(root *yaml.Node, index int) ([]*Resource, int) {
	items, ok := c.listItems(root)
	if !ok {
		if r := c.document(root, index); r != nil {
			return []*Resource{r}, 1
		}
		return nil, 1
	}
	var rs []*Resource
	for i, item := range items {
		if line, col := c.pos(item); c.tooMany(index+i, line, col) {
			return rs, i
		}
		if r := c.document(item, index+i); r != nil {
			rs = append(rs, r)
		}
	}
	return rs, len(items)
}

// listItems returns the items of root when it is a List: a map whose
// apiVersion is v1 and kind List, with only those fields, metadata and
// items (a sequence, missing for none). ok is false for any other
// document, which is then decoded as a resource.
func (c *converter) listItems(root *yaml.Node) (items []*yaml.Node, ok bool) {
	n := deref(root)
	if n.Kind != yaml.MappingNode || scalarField(n, "kind") != "List" || scalarField(n, "apiVersion") != "v1" {
		return nil, false
	}
	for _, e := range c.entries(n, "") {
		v := deref(e.valNode)
		switch e.key {
		case "apiVersion", "kind", "metadata":
		case "items":
			switch {
			case v.Kind == yaml.SequenceNode:
				items = v.Content
			case v.Kind == yaml.ScalarNode && v.ShortTag() == nullTag:
			default:
				c.errorf(v, "items", "want a list of resources, got %s", c.describeNode(v))
			}
		default:
			c.errorf(e.keyNode, e.key, "unknown field %q in a List (want apiVersion, kind, metadata or items)", e.key)
		}
	}
	return items, true
}

// scalarField is the value of mapping n's scalar field key as written,
// "" when it has none.
func scalarField(n *yaml.Node, key string) string {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k, v := deref(n.Content[i]), deref(n.Content[i+1]); k.Value == key && v.Kind == yaml.ScalarNode {
			return v.Value
		}
	}
	return ""
}
