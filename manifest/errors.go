package manifest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/openctl/openctl/errcode"
)

// Errors returns the problems in err — *errcode.InputError values, Input
// "manifest" — err itself, or the errors it joins (see errors.Join), in
// order. It returns nil if err holds none.
func Errors(err error) []*errcode.InputError { return errcode.All[*errcode.InputError](err) }

// FieldErrorf returns a problem with the spec field at field (a path
// such as "spec.k3s.version" or "spec.disks[0].size"), for a provider's
// validation; [Resource.Locate] places it in the file.
func FieldErrorf(field, format string, args ...any) *errcode.InputError {
	return inputError(errcode.InputError{Field: field, Msg: fmt.Sprintf(format, args...)})
}

// Locate places the spec problems in err at the fields they name: each
// *errcode.InputError in err's tree that has no file yet gets r's file and
// the line and column where its field is written ([Source.Field]) —
// "vms.yaml:14:5: spec.cpu.cores: must be in 1..1024" — or, for a
// resource not read from a file, r's kind and name in place of the file
// ("VirtualMachine web: spec.cpu.cores: ..."). It returns err, so a
// provider's spec decoder ends with "return nil, r.Locate(err)".
func (r *Resource) Locate(err error) error {
	var fields map[string]position
	for _, e := range Errors(err) {
		if e.File != "" || e.Line > 0 {
			continue
		}
		if r.Source.File == "" {
			e.Input = r.Kind + " " + r.Metadata.Name
			continue
		}
		if fields == nil {
			fields = r.Source.in.positions(r.Source.Index)
		}
		e.File = r.Source.File
		e.Line, e.Column = r.Source.fieldIn(fields, e.Field)
	}
	return err
}

// inputError is a problem in a manifest.
func inputError(e errcode.InputError) *errcode.InputError {
	e.Input = "manifest"
	return &e
}

// maxErrors is how many errors one call reports; the rest are summarised
// in a final "... and N more errors".
const maxErrors = 50

// maxKeptErrors bounds the errors held while decoding, so that an input
// with millions of problems does not use unbounded memory.
const maxKeptErrors = 1000

// errorList collects the problems found in one call. It is not safe for
// concurrent use.
type errorList struct {
	errs    []*errcode.InputError
	dropped int // errors beyond maxKeptErrors, counted but not kept
	seen    map[errorKey]bool
}

// errorKey identifies a problem at one exact place (a line and a column),
// so that a problem inside an anchored node is reported once however many
// aliases expand it.
type errorKey struct {
	file         string
	line, column int
	msg          string
}

func (l *errorList) add(e *errcode.InputError) {
	if len(l.errs) >= maxKeptErrors {
		l.dropped++
		return
	}
	if e.Column > 0 {
		k := errorKey{e.File, e.Line, e.Column, e.Msg}
		if l.seen[k] {
			return
		}
		if l.seen == nil {
			l.seen = map[errorKey]bool{}
		}
		l.seen[k] = true
	}
	l.errs = append(l.errs, e)
}

func (l *errorList) len() int { return len(l.errs) + l.dropped }

// err returns the collected errors joined, sorted by file, line and column
// (in the order found otherwise), at most maxErrors of them followed by a
// summary of the rest; nil if there are none.
func (l *errorList) err() error {
	if l.len() == 0 {
		return nil
	}
	errs := slices.Clone(l.errs)
	slices.SortStableFunc(errs, func(a, b *errcode.InputError) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	more := l.dropped
	if len(errs) > maxErrors {
		more += len(errs) - maxErrors
		errs = errs[:maxErrors]
	}
	out := make([]error, 0, len(errs)+1)
	for _, e := range errs {
		out = append(out, e)
	}
	if more > 0 {
		out = append(out, inputError(errcode.InputError{Msg: fmt.Sprintf("... and %d more errors", more)}))
	}
	return errors.Join(out...)
}

// describe names the type of a normalised value with an article, for
// messages such as "want a string, got a list".
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case int64:
		return "an integer"
	}
	switch n := TypeName(v); n {
	case "map", "list", "string", "bool", "number":
		return "a " + n
	default:
		return "a value of type " + n
	}
}
