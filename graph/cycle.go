package graph

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/openctl/openctl/errcode"
)

// CycleError reports that a graph has at least one dependency cycle. It
// matches errcode.Invalid with errors.Is, and errcode.Of returns Invalid
// for it.
type CycleError[K cmp.Ordered] struct {
	// Cycles lists every cycle: the members of each strongly connected
	// component of more than one node, and every node with an edge to
	// itself (a node can appear in both). Each cycle's nodes are sorted and
	// the cycles are sorted by their first node, then lexicographically.
	Cycles [][]K

	// paths[i], if present, is a closed walk through every member of
	// Cycles[i] along real edges, for Error to print.
	paths [][]K
}

// Error names every node of every cycle, as a path along real edges where
// one is short enough, for example
//
//	graph: dependency cycle: a -> b -> c -> a; d -> d
//
// and otherwise as a list of the members of the strongly connected
// component: "a, b, c (mutually dependent)".
func (e *CycleError[K]) Error() string {
	var b strings.Builder
	b.WriteString("graph: dependency cycle")
	for i, c := range e.Cycles {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		switch {
		case i < len(e.paths) && len(e.paths[i]) > 0:
			writeJoined(&b, e.paths[i], " -> ")
		case len(c) == 1:
			fmt.Fprintf(&b, "%v -> %v", c[0], c[0])
		case len(c) == 2:
			fmt.Fprintf(&b, "%v -> %v -> %v", c[0], c[1], c[0])
		default:
			writeJoined(&b, c, ", ")
			b.WriteString(" (mutually dependent)")
		}
	}
	return b.String()
}

func writeJoined[K any](b *strings.Builder, ks []K, sep string) {
	for i, k := range ks {
		if i > 0 {
			b.WriteString(sep)
		}
		fmt.Fprint(b, k)
	}
}

// Is reports whether target is errcode.Invalid: a cyclic graph is an
// invalid request.
func (e *CycleError[K]) Is(target error) bool { return target == errcode.Invalid }

// Unwrap returns errcode.Invalid, so that errcode.Of classifies the error.
func (e *CycleError[K]) Unwrap() error { return errcode.Invalid }

// cycleError builds the *CycleError for a graph known to be cyclic.
func (g *Graph[K]) cycleError() *CycleError[K] {
	comps, compOf := g.components()
	type cycle struct{ members, path []K }
	cycles := make([]cycle, 0, len(comps)+g.loops)
	local := make([]int, len(g.keys)) // position of a node within its component
	for id, members := range comps {
		slices.SortFunc(members, func(a, b int) int { return cmp.Compare(g.keys[a], g.keys[b]) })
		for i, v := range members {
			local[v] = i
		}
		c := cycle{members: g.keysOf(members)}
		if walk := g.walk(members, id, compOf, local); walk != nil {
			c.path = g.keysOf(walk)
		}
		cycles = append(cycles, c)
	}
	if g.loops > 0 {
		for v, out := range g.out {
			if slices.Contains(out, v) {
				cycles = append(cycles, cycle{members: []K{g.keys[v]}, path: []K{g.keys[v], g.keys[v]}})
			}
		}
	}
	slices.SortFunc(cycles, func(a, b cycle) int { return slices.Compare(a.members, b.members) })
	e := &CycleError[K]{Cycles: make([][]K, len(cycles)), paths: make([][]K, len(cycles))}
	for i, c := range cycles {
		e.Cycles[i], e.paths[i] = c.members, c.path
	}
	return e
}

func (g *Graph[K]) keysOf(vs []int) []K {
	ks := make([]K, len(vs))
	for i, v := range vs {
		ks[i] = g.keys[v]
	}
	return ks
}

// components returns the strongly connected components of more than one
// node, and for every node the index of its component in comps, or -1.
//
// It is Tarjan's algorithm with an explicit stack of DFS frames instead of
// recursion, so that a chain of a million nodes needs a million small
// frames on the heap rather than a million goroutine stack frames.
func (g *Graph[K]) components() (comps [][]int, compOf []int) {
	n := len(g.keys)
	order := make([]int, n) // DFS discovery number + 1; 0 means not visited yet
	low := make([]int, n)   // smallest discovery number reachable, Tarjan's lowlink
	onStack := make([]bool, n)
	compOf = make([]int, n)
	var stack []int // nodes visited but not yet assigned to a component
	type frame struct {
		v    int
		next int // index into out[v] of the next edge to follow
	}
	var frames []frame
	visited := 0
	visit := func(v int) {
		visited++
		order[v], low[v] = visited, visited
		stack = append(stack, v)
		onStack[v] = true
		frames = append(frames, frame{v: v})
	}
	for root := range n {
		if order[root] != 0 {
			continue
		}
		visit(root)
		for len(frames) > 0 {
			f := &frames[len(frames)-1]
			v := f.v
			if f.next < len(g.out[v]) {
				w := g.out[v][f.next]
				f.next++
				switch {
				case order[w] == 0:
					visit(w) // f is invalid from here on
				case onStack[w]:
					low[v] = min(low[v], order[w])
				}
				continue
			}
			frames = frames[:len(frames)-1]
			if len(frames) > 0 {
				parent := frames[len(frames)-1].v
				low[parent] = min(low[parent], low[v])
			}
			if low[v] != order[v] {
				continue // v belongs to a component rooted further up
			}
			i := len(stack) - 1
			for stack[i] != v {
				i--
			}
			members := stack[i:]
			id := -1
			if len(members) > 1 {
				id = len(comps)
				comps = append(comps, slices.Clone(members))
			}
			for _, w := range members {
				onStack[w] = false
				compOf[w] = id
			}
			stack = stack[:i]
		}
	}
	return comps, compOf
}

// walk returns a closed walk along real edges that starts and ends at
// members[0] and passes through every member of the strongly connected
// component id, for example a -> b -> c -> a. It walks greedily to the
// nearest member not yet visited (breadth-first, successors in key order),
// then back to the start. Such a walk can be quadratic in the size of the
// component, so walk gives up and returns nil once the walk grows past
// twice the number of members or the searches examine too many edges.
//
// members must be sorted by key, and local[v] must be v's position in
// members for each member v.
func (g *Graph[K]) walk(members []int, id int, compOf, local []int) []int {
	m := len(members)
	succ := make([][]int, m) // successors within the component, as positions, in key order
	edges := 0
	for i, v := range members {
		for _, w := range g.out[v] {
			if w != v && compOf[w] == id {
				succ[i] = append(succ[i], local[w])
			}
		}
		slices.Sort(succ[i])
		edges += len(succ[i])
	}
	budget := 4*(m+edges) + 64 // edges the searches may examine, in total
	visited := make([]bool, m)
	// cursor[x] indexes succ[x]: every successor before it is visited. As
	// visited only grows, finding x's first unvisited successor costs
	// O(len(succ[x])) over the whole walk.
	cursor := make([]int, m)
	seen := make([]int, m) // number of the search that reached a position; 0 = none
	parent := make([]int, m)
	var queue, path []int
	search := 0
	tour := []int{0}

	// reach searches breadth-first from position from for the nearest
	// position that is target, or not yet visited if target is -1, and
	// appends the path to it (without from) to tour. It returns the
	// position found, or -1 when out of budget.
	reach := func(from, target int) int {
		search++
		seen[from] = search
		queue = append(queue[:0], from)
		for head := 0; head < len(queue) && budget >= 0; head++ {
			x := queue[head]
			found := -1
			if target < 0 {
				c := cursor[x]
				for c < len(succ[x]) && visited[succ[x][c]] {
					c++
					budget--
				}
				if cursor[x] = c; c < len(succ[x]) {
					found = succ[x][c]
				}
			}
			for i := 0; found < 0 && i < len(succ[x]); i++ {
				budget--
				switch y := succ[x][i]; {
				case y == target:
					found = y
				case seen[y] != search:
					seen[y], parent[y] = search, x
					queue = append(queue, y)
				}
			}
			if found < 0 {
				continue
			}
			parent[found] = x
			path = path[:0]
			for z := found; z != from; z = parent[z] {
				path = append(path, z)
			}
			for i := len(path) - 1; i >= 0; i-- {
				tour = append(tour, path[i])
			}
			return found
		}
		return -1
	}

	visited[0] = true
	for at, left := 0, m-1; left > 0; {
		start := len(tour)
		if at = reach(at, -1); at < 0 {
			return nil
		}
		for _, x := range tour[start:] {
			if !visited[x] {
				visited[x] = true
				left--
			}
		}
		if len(tour) > 2*m {
			return nil
		}
		if left == 0 && reach(at, 0) < 0 {
			return nil
		}
	}
	if len(tour) > 2*m+1 {
		return nil
	}
	nodes := make([]int, len(tour))
	for i, x := range tour {
		nodes[i] = members[x]
	}
	return nodes
}
