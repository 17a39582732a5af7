package graph

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// DOT returns the graph in the Graphviz DOT language, with an edge from
// each dependency to its dependents. The text is deterministic: nodes are
// numbered n0, n1, ... in key order, and edges are sorted. label names each
// node; nil means fmt.Sprint. Labels and the graph name are quoted and
// escaped, so any text is safe; an empty name leaves the graph anonymous.
func (g *Graph[K]) DOT(name string, label func(K) string) string {
	if label == nil {
		label = func(k K) string { return fmt.Sprint(k) }
	}
	byKey := make([]int, len(g.keys)) // node indexes in key order
	for v := range byKey {
		byKey[v] = v
	}
	slices.SortFunc(byKey, func(a, b int) int { return cmp.Compare(g.keys[a], g.keys[b]) })
	id := make([]int, len(g.keys)) // node index -> position in key order
	for i, v := range byKey {
		id[v] = i
	}

	var b strings.Builder
	b.WriteString("digraph ")
	if name != "" {
		b.WriteString(dotQuote(name))
		b.WriteByte(' ')
	}
	b.WriteString("{\n")
	for i, v := range byKey {
		fmt.Fprintf(&b, "\tn%d [label=%s];\n", i, dotQuote(label(g.keys[v])))
	}
	var to []int
	for i, v := range byKey {
		to = to[:0]
		for _, w := range g.out[v] {
			to = append(to, id[w])
		}
		slices.Sort(to)
		for _, j := range to {
			fmt.Fprintf(&b, "\tn%d -> n%d;\n", i, j)
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// dotQuote returns s as a DOT double-quoted string. Backslashes are doubled
// so that Graphviz shows them literally instead of reading escapes such as
// \l, and line breaks become \n.
func dotQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			// dropped: a bare carriage return has no meaning in a label
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
