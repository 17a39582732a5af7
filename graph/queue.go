package graph

import "cmp"

// entry is a node in a queue. Entries are ordered by prio, smallest first,
// then by key, smallest first. The key is copied in so that comparisons
// touch only the heap's own memory.
type entry[K cmp.Ordered] struct {
	prio int
	key  K
	node int
}

func (a *entry[K]) before(b *entry[K]) bool {
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	return cmp.Less(a.key, b.key)
}

// queue is a binary min-heap of entries: Sort's ready nodes (all with prio
// 0, so smallest key first) and Run's (prio is minus the height, so the
// greatest height first).
type queue[K cmp.Ordered] struct {
	items []entry[K]
}

func (q *queue[K]) len() int { return len(q.items) }

// init establishes the heap order over items appended directly.
func (q *queue[K]) init() {
	for i := len(q.items)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

func (q *queue[K]) push(e entry[K]) {
	q.items = append(q.items, e)
	items := q.items
	i := len(items) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !e.before(&items[parent]) {
			break
		}
		items[i] = items[parent]
		i = parent
	}
	items[i] = e
}

// pop removes the first entry and returns its node. The queue must not be
// empty.
func (q *queue[K]) pop() int {
	top := q.items[0].node
	last := len(q.items) - 1
	q.items[0] = q.items[last]
	q.items = q.items[:last]
	if last > 0 {
		q.down(0)
	}
	return top
}

func (q *queue[K]) down(i int) {
	items := q.items
	n := len(items)
	e := items[i]
	for {
		child := 2*i + 1
		if child >= n {
			break
		}
		if right := child + 1; right < n && items[right].before(&items[child]) {
			child = right
		}
		if !items[child].before(&e) {
			break
		}
		items[i] = items[child]
		i = child
	}
	items[i] = e
}
