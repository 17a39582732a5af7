package openctl

import (
	"context"
	"slices"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
)

// moveAliasRecords moves the record of each of ids kept under one of its
// kind's aliases — recorded before the name became an alias, as K3s
// nodes applied as K3sNode were — to the kind's own name, its $refs
// read the same way, so that the operation finds it. It runs with the
// state lock held. A move a kill interrupted (both records, one
// lineage) is finished; a record under each name with different
// lineages is left for the user to sort out.
func (e *Engine) moveAliasRecords(ctx context.Context, ids []manifest.ID) error {
	for _, id := range ids {
		_, kind, err := e.reg.Lookup(id)
		if err != nil {
			continue // the operation reports it
		}
		for _, a := range kind.Aliases {
			old := id
			old.Kind = a
			rec, err := e.store.Get(ctx, old)
			if errcode.Is(err, errcode.NotFound) {
				continue
			}
			if err != nil {
				return &StateError{Op: "read", ID: old, Err: err}
			}
			cur, err := e.store.Get(ctx, id)
			switch {
			case err == nil && cur.Lineage != rec.Lineage:
				continue
			case errcode.Is(err, errcode.NotFound):
				moved := rec.Clone()
				moved.Kind, moved.Generation = id.Kind, 0
				refs.Retarget(&manifest.Resource{Spec: moved.Spec}, e.reg.Canonical)
				if _, err := e.store.Put(ctx, moved); err != nil {
					return &StateError{Op: "record", ID: id, Err: err}
				}
			case err != nil:
				return &StateError{Op: "read", ID: id, Err: err}
			}
			if err := e.store.Delete(ctx, old); err != nil && !errcode.Is(err, errcode.NotFound) {
				return &StateError{Op: "delete", ID: old, Err: err}
			}
			e.log.Info("moved a record kept under another name of its kind", "from", old.String(), "to", id.String())
		}
	}
	return nil
}

// applyIDs are the resources s applies (not those it deletes), sorted.
func applyIDs(s *set) []manifest.ID {
	var ids []manifest.ID
	for _, n := range s.nodes {
		if !n.del {
			ids = append(ids, n.id)
		}
	}
	slices.SortFunc(ids, manifest.ID.Compare)
	return ids
}
