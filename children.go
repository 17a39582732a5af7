package openctl

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
)

// childLog is the registry.ChildRecorder the engine installs while a
// provider applies or deletes parent: each child the provider applies
// through other providers is recorded at once (owned by parent, its
// owner labels set), each one it deletes is forgotten, and the parent's
// record lists them (children).
type childLog struct {
	e      *Engine
	parent manifest.ID

	mu      sync.Mutex
	added   map[manifest.ID]bool
	removed map[manifest.ID]bool
}

var _ registry.ChildRecorder = (*childLog)(nil)

func newChildLog(e *Engine, parent manifest.ID) *childLog {
	return &childLog{e: e, parent: parent, added: map[manifest.ID]bool{}, removed: map[manifest.ID]bool{}}
}

// ChildApplied records child, with live's status, as owned by the
// parent. It is recorded without a spec hash: the engine has not seen it
// converge, so applying it directly calls its provider again.
func (l *childLog) ChildApplied(ctx context.Context, child, live *manifest.Resource) error {
	if child == nil || live == nil {
		return errcode.New(errcode.Internal, fmt.Sprintf("openctl: %s: a nil child recorded", l.parent.Short()))
	}
	id := child.ID()
	if err := l.check(id); err != nil {
		return err
	}
	_, kind, err := l.e.reg.Lookup(id)
	if err != nil {
		return err
	}
	res := child.DeepCopy()
	res.SetOwner(l.parent)
	n := &node{id: id, key: id.String(), kind: kind, owner: &l.parent, res: res}
	// The child exists now: record it even if ctx is cancelled meanwhile.
	wctx, cancel := afterWrite(ctx)
	defer cancel()
	prev, err := l.e.store.Get(wctx, id)
	switch {
	case errcode.Is(err, errcode.NotFound):
		prev = nil
	case err != nil:
		return &StateError{Op: "read", ID: id, Err: err}
	default:
		n.children = prev.Children
	}
	if err := l.e.record(wctx, n, prev, "", live, false); err != nil {
		return &StateError{Op: "record", ID: id, Err: err}
	}
	l.e.log.Info("recorded child", "resource", id.String(), "owner", l.parent.String())
	l.note(id, true)
	return nil
}

// ChildDeleted forgets a child its provider deleted.
func (l *childLog) ChildDeleted(ctx context.Context, id manifest.ID) error {
	if err := l.check(id); err != nil {
		return err
	}
	wctx, cancel := afterWrite(ctx)
	defer cancel()
	if err := l.e.store.Delete(wctx, id); err != nil {
		return &StateError{Op: "forget", ID: id, Err: err}
	}
	l.note(id, false)
	return nil
}

// ChildListed lists id among the parent's children.
func (l *childLog) ChildListed(_ context.Context, id manifest.ID) error {
	if err := l.check(id); err != nil {
		return err
	}
	l.note(id, true)
	return nil
}

func (l *childLog) check(id manifest.ID) error {
	if err := id.Validate(); err != nil {
		return errcode.Wrap(errcode.Invalid, fmt.Sprintf("openctl: %s: child", l.parent.Short()), err)
	}
	if id == l.parent {
		return errcode.New(errcode.Invalid, fmt.Sprintf("openctl: %s: a resource cannot be its own child", id.Short()))
	}
	return nil
}

func (l *childLog) note(id manifest.ID, added bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if added {
		l.added[id] = true
		delete(l.removed, id)
	} else {
		l.removed[id] = true
		delete(l.added, id)
	}
}

// children returns prev with the children added since and without those
// deleted, sorted.
func (l *childLog) children(prev []manifest.ID) []manifest.ID {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []manifest.ID
	for _, id := range prev {
		if !l.removed[id] && !l.added[id] {
			out = append(out, id)
		}
	}
	for id := range l.added {
		out = append(out, id)
	}
	slices.SortFunc(out, manifest.ID.Compare)
	if len(out) == 0 {
		return nil
	}
	return out
}
