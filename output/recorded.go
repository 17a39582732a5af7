package output

import (
	"slices"
	"strings"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

// Recorded returns the resource a state record describes, as it was
// applied: its labels, its spec as written and its last status, with
// [secret.Redacted] at every spec field whose value the record keeps
// sealed (rec.Secrets), where [state.Record.Resource] leaves the field
// out. Printed with [Print] and applied again, it keeps the secret (the
// engine reads "[redacted]" in a secret spec field as "keep the sealed
// value") instead of removing it. A record read without its secrets (a
// RawStore listing) gives the same as rec.Resource(). A nil rec gives nil.
func Recorded(rec *state.Record) *manifest.Resource {
	if rec == nil {
		return nil
	}
	r := rec.Resource()
	paths := make([]string, 0, len(rec.Secrets))
	for p := range rec.Secrets {
		if rest, ok := strings.CutPrefix(p, "spec."); ok && rest != "" {
			paths = append(paths, rest)
		}
	}
	slices.Sort(paths)
	for _, p := range paths {
		if r.Spec == nil {
			r.Spec = map[string]any{}
		}
		_ = manifest.SetField(r.Spec, p, secret.Redacted) // a path the engine split off: it can be set again
	}
	return r
}
