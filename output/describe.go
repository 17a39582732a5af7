package output

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

// Describe writes a kubectl-describe-like view of r: its identity, labels
// (r's and those rec records) and annotations, what state records about
// it (owner, children, creation and update times, generation; rec may be
// nil), then its spec and status as indented "key: value" trees with keys
// sorted, and the names of the secret fields state holds, each shown as
// [redacted]. Secrets are redacted as by [Print]. With rec nil, the owner
// comes from r's owner labels and the creation time from o.Ages.
//
//	Name:         web-01
//	Kind:         Service
//	APIVersion:   demo.openctl.io/v1
//	Labels:       tier=web
//	Annotations:  <none>
//	Owner:        <none>
//	Children:     <none>
//	Created:      2026-11-30T10:00:00Z (3h ago)
//	Spec:
//	  image: nginx:1.27
//	  replicas: 2
//	Status:
//	  address: 10.0.0.5
//
// A nil r is an [errcode.Invalid] error. The view is written with one call
// to w.Write.
func Describe(w io.Writer, r *manifest.Resource, rec *state.Record, o Options) error {
	if r == nil {
		return errcode.New(errcode.Invalid, "output: describe: resource is nil")
	}
	r = Redact(r, o.Kind.SecretFields)
	now := o.now()
	var b strings.Builder
	field := func(label string, values ...string) {
		if len(values) == 0 {
			values = []string{none}
		}
		for i, v := range values {
			if i == 0 {
				fmt.Fprintf(&b, "%-14s%s\n", label+":", sanitize(v))
			} else {
				fmt.Fprintf(&b, "%-14s%s\n", "", sanitize(v))
			}
		}
	}
	when := func(t time.Time) string {
		if t.IsZero() {
			return unknown
		}
		return t.UTC().Format(time.RFC3339) + " (" + Age(now.Sub(t)) + " ago)"
	}

	id := r.ID()
	field("Name", r.Metadata.Name)
	if r.Metadata.Namespace != "" {
		field("Namespace", r.Metadata.Namespace)
	}
	field("Kind", r.Kind)
	field("APIVersion", r.APIVersion)
	labels := r.Metadata.Labels
	if rec != nil && len(rec.Labels) > 0 {
		// A live resource need not carry the manifest's labels (not every
		// provider can store them): the record has them, r's own come on top.
		labels = make(map[string]string, len(rec.Labels)+len(r.Metadata.Labels))
		maps.Copy(labels, rec.Labels)
		maps.Copy(labels, r.Metadata.Labels)
	}
	field("Labels", pairs(labels)...)
	field("Annotations", pairs(r.Metadata.Annotations)...)
	var owner *manifest.ID
	if rec != nil && rec.Owner != nil {
		owner = rec.Owner
	} else if o, ok := r.Owner(); ok {
		owner = &o
	}
	if owner != nil {
		field("Owner", NameOf(*owner))
	} else {
		field("Owner")
	}
	var children []string
	if rec != nil {
		for _, c := range rec.Children {
			children = append(children, NameOf(c))
		}
	}
	field("Children", children...)
	switch {
	case rec != nil:
		field("Created", when(rec.CreatedAt))
		field("Updated", when(rec.UpdatedAt))
		field("Generation", fmt.Sprint(rec.Generation))
	default:
		field("Created", when(o.Ages[id]))
	}
	if s := r.Source.String(); s != "" {
		field("Source", s)
	}
	for _, part := range []struct {
		label string
		m     map[string]any
	}{{"Spec", r.Spec}, {"Status", r.Status}} {
		if len(part.m) == 0 {
			field(part.label)
			continue
		}
		b.WriteString(part.label + ":\n")
		for _, l := range treeLines(part.m) {
			b.WriteString("  " + l + "\n")
		}
	}
	if rec != nil && len(rec.Secrets) > 0 {
		paths := make([]string, 0, len(rec.Secrets))
		for p := range rec.Secrets {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		b.WriteString("Secrets:\n")
		for _, p := range paths {
			b.WriteString("  " + sanitize(p) + ": " + secret.Redacted + "\n")
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("output: describe %s: %w", id.Short(), err)
	}
	return nil
}

// pairs renders a string map as sorted "k=v" strings.
func pairs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// treeLines renders a value as indented "key: value" lines, relative to
// indentation 0: maps with sorted keys, lists as "- " items, multi-line
// strings as "|" blocks.
func treeLines(v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = append(out, labelled(sanitize(k)+":", x[k])...)
		}
	case []any:
		for _, e := range x {
			sub := labelled("", e)
			if nested(e) {
				sub = treeLines(e)
			}
			for i, l := range sub {
				if i == 0 {
					out = append(out, strings.TrimRight("- "+l, " "))
				} else {
					out = append(out, "  "+l)
				}
			}
		}
	default:
		out = labelled("", v)
	}
	return out
}

// nested reports whether v is a non-empty map or list.
func nested(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return len(x) > 0
	case []any:
		return len(x) > 0
	}
	return false
}

// labelled renders v after label ("" for a list item): on the same line
// when it is a scalar, below it and indented when it is a non-empty map,
// list or multi-line string.
func labelled(label string, v any) []string {
	join := func(s string) string {
		if label == "" {
			return s
		}
		return label + " " + s
	}
	if nested(v) {
		out := []string{label}
		for _, l := range treeLines(v) {
			out = append(out, "  "+l)
		}
		return out
	}
	switch x := v.(type) {
	case nil:
		return []string{join(none)}
	case map[string]any:
		return []string{join("{}")}
	case []any:
		return []string{join("[]")}
	case string:
		if strings.Contains(strings.TrimRight(x, "\n"), "\n") {
			out := []string{join("|")}
			for _, l := range strings.Split(strings.TrimRight(x, "\n"), "\n") {
				out = append(out, strings.TrimRight("  "+sanitize(l), " "))
			}
			return out
		}
		return []string{join(sanitize(x))}
	}
	return []string{join(sanitize(scalar(v)))}
}
