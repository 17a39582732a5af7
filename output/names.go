package output

import (
	"strings"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
)

// NameOf renders id the way kubectl's "-o name" does: the kind in lower
// case, a slash and the name ("service/web-01").
func NameOf(id manifest.ID) string { return strings.ToLower(id.Kind) + "/" + id.Name }

// KindNames returns a function that renders an ID with its kind's first
// short name ("svc/web-01"), or, for a kind that has none or is not among
// kinds, as [NameOf] does. Pass it to [PlanOptions] (and to the progress
// package's WithNames) so that plans and progress name resources as users
// type them.
func KindNames(kinds []registry.Kind) func(manifest.ID) string {
	short := make(map[string]string, len(kinds))
	for _, k := range kinds {
		if len(k.ShortNames) > 0 && k.ShortNames[0] != "" {
			short[k.Kind] = k.ShortNames[0]
		}
	}
	return func(id manifest.ID) string {
		if s, ok := short[id.Kind]; ok {
			return s + "/" + id.Name
		}
		return NameOf(id)
	}
}
