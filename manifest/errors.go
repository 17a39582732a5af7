package manifest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/openctl/openctl/errcode"
)

// Error is a problem in a manifest: where it is — file, line, column and
// field path — and what is wrong. Every *Error is an [errcode.Invalid]
// error: errors.Is(err, errcode.Invalid) is true and [errcode.Of] returns
// Invalid.
//
// Functions that can find several problems at once ([DecodeBytes], [Load],
// [Validate], [CheckDuplicates]) report all of them, as an errors.Join of
// *Error values sorted by file and line; [Errors] takes them apart again.
type Error struct {
	File   string // file name; "<stdin>" for standard input; "" for a resource built in code
	Line   int    // 1-based line; 0 when unknown
	Column int    // 1-based column; 0 when unknown
	Field  string // field path, such as "metadata.name" or "spec.disks[0].size"; "" for the whole document
	Msg    string // what is wrong
	Err    error  // the underlying cause (an I/O error), or nil
}

// Error formats the error as "file:line:column: field: message", leaving
// out the parts that are unknown or empty. An error without a file starts
// with "manifest: " instead.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
			if e.Column > 0 {
				b.WriteString(":" + strconv.Itoa(e.Column))
			}
		}
		b.WriteString(": ")
	} else {
		b.WriteString("manifest: ")
		if e.Line > 0 {
			b.WriteString("line " + strconv.Itoa(e.Line))
			if e.Column > 0 {
				b.WriteString(", column " + strconv.Itoa(e.Column))
			}
			b.WriteString(": ")
		}
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Is reports whether target is [errcode.Invalid].
func (e *Error) Is(target error) bool { return target == errcode.Invalid }

// Unwrap returns [errcode.Invalid] and the underlying cause, if any, so that
// errcode.Of classifies the error and errors.Is finds the cause (for
// example fs.ErrNotExist).
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{errcode.Invalid, e.Err}
	}
	return []error{errcode.Invalid}
}

// Errors returns the *Error values in err: err itself, or the errors it
// joins (see errors.Join), in order. It returns nil if err holds none.
func Errors(err error) []*Error { return errcode.All[*Error](err) }

// maxErrors is how many errors one call reports; the rest are summarised
// in a final "... and N more errors".
const maxErrors = 50

// maxKeptErrors bounds the errors held while decoding, so that an input
// with millions of problems does not use unbounded memory.
const maxKeptErrors = 1000

// errorList collects the problems found in one call. It is not safe for
// concurrent use.
type errorList struct {
	errs    []*Error
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

func (l *errorList) add(e *Error) {
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
	slices.SortStableFunc(errs, func(a, b *Error) int {
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
		out = append(out, &Error{Msg: fmt.Sprintf("... and %d more errors", more)})
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
