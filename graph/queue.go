package graph

// queue is a binary heap of node indexes: pop returns the node that comes
// before every other one according to before. Taking the ordering as a
// function lets Sort (smallest key first) and Run (greatest height first)
// share one heap.
type queue struct {
	items  []int
	before func(a, b int) bool
}

func (q *queue) len() int { return len(q.items) }

// init establishes the heap order over items appended directly.
func (q *queue) init() {
	for i := len(q.items)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

func (q *queue) push(v int) {
	q.items = append(q.items, v)
	q.up(len(q.items) - 1)
}

// pop removes and returns the first node. The queue must not be empty.
func (q *queue) pop() int {
	top := q.items[0]
	last := len(q.items) - 1
	q.items[0] = q.items[last]
	q.items = q.items[:last]
	if last > 0 {
		q.down(0)
	}
	return top
}

func (q *queue) up(i int) {
	items := q.items
	v := items[i]
	for i > 0 {
		parent := (i - 1) / 2
		if !q.before(v, items[parent]) {
			break
		}
		items[i] = items[parent]
		i = parent
	}
	items[i] = v
}

func (q *queue) down(i int) {
	items := q.items
	n := len(items)
	v := items[i]
	for {
		child := 2*i + 1
		if child >= n {
			break
		}
		if right := child + 1; right < n && q.before(items[right], items[child]) {
			child = right
		}
		if !q.before(items[child], v) {
			break
		}
		items[i] = items[child]
		i = child
	}
	items[i] = v
}
