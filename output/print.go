package output

import (
	"fmt"
	"io"
	"time"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
)

// NoResources is what Print writes for an empty list in the table, wide
// and name formats.
const NoResources = "No resources found."

// Options configures [Print] and [Describe]. The zero value prints a table
// of NAME and AGE, with ages unknown.
type Options struct {
	// Kind is the kind printed: its Columns make the table and its
	// SecretFields are redacted. Print one kind per call; resources of
	// other kinds are printed with the same columns.
	Kind registry.Kind
	// Ages holds creation times (from state) for the AGE column; a
	// resource that has none shows "<unknown>".
	Ages map[manifest.ID]time.Time
	// Now returns the current time, for ages; nil means time.Now.
	Now func() time.Time
	// NoHeaders leaves out the table header.
	NoHeaders bool
	// Object prints YAML and JSON as the one resource itself rather than
	// a List holding it: kubectl's rule for a get by one name. It applies
	// when there is exactly one resource.
	Object bool
	// Empty receives the [NoResources] message when there is nothing to
	// print in the table, wide or name format; nil means the writer given
	// to Print. A CLI passes standard error here, as kubectl does, so that
	// scripts reading standard output see nothing.
	Empty io.Writer
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Print writes resources in format f. Secrets never reach w: see [Redact]
// for what is redacted (o.Kind.SecretFields and every secret.Secret).
//
//   - Table and Wide: NAME, the kind's columns and AGE, aligned like
//     kubectl (see the package documentation). When the resources are of
//     several kinds, NAME holds [NameOf] each resource.
//   - YAML and JSON: a kubectl-style List (apiVersion v1, kind List,
//     items), whatever the number of resources, [manifest.EncodeYAMLList]
//     and [manifest.EncodeJSONList]; with [Options].Object and one
//     resource, that resource alone ([manifest.EncodeYAML],
//     [manifest.EncodeJSON]). Both decode back, so the output can be fed
//     to apply.
//   - Name: [NameOf] each resource, one per line.
//
// An empty f is Table; an unknown one is an [errcode.Invalid] error, as is
// a nil resource. Print writes nothing when it returns such an error.
func Print(w io.Writer, f Format, rs []*manifest.Resource, o Options) error {
	if f == "" {
		f = Table
	}
	if _, err := ParseFormat(string(f)); err != nil {
		return err
	}
	red := make([]*manifest.Resource, len(rs))
	for i, r := range rs {
		if r == nil {
			return errcode.New(errcode.Invalid, fmt.Sprintf("output: resource %d is nil", i))
		}
		red[i] = Redact(r, o.Kind.SecretFields)
	}
	var err error
	switch f {
	case YAML:
		if o.Object && len(red) == 1 {
			err = manifest.EncodeYAML(w, red...)
		} else {
			err = manifest.EncodeYAMLList(w, red...)
		}
	case JSON:
		if o.Object && len(red) == 1 {
			err = manifest.EncodeJSON(w, red...)
		} else {
			err = manifest.EncodeJSONList(w, red...)
		}
	default:
		if len(red) == 0 {
			empty := o.Empty
			if empty == nil {
				empty = w
			}
			_, err = fmt.Fprintln(empty, NoResources)
			break
		}
		if f == Name {
			err = printNames(w, red)
		} else {
			err = printTable(w, red, f == Wide, o)
		}
	}
	if err != nil {
		return fmt.Errorf("output: print %s: %w", f, err)
	}
	return nil
}

func printNames(w io.Writer, rs []*manifest.Resource) error {
	b := make([]byte, 0, 32*len(rs))
	for _, r := range rs {
		b = append(b, sanitize(NameOf(r.ID()))...)
		b = append(b, '\n')
	}
	_, err := w.Write(b)
	return err
}
