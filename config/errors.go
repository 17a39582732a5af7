package config

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/openctl/openctl/errcode"
)

// Error is a problem in a configuration: where it is — file, line, column
// and field path — and what is wrong. Every *Error is an [errcode.Invalid]
// error: errors.Is(err, errcode.Invalid) is true and [errcode.Of] returns
// Invalid. Its message never holds a secret value.
//
// Load reports every problem it finds in a file at once, as an
// errors.Join of *Error values sorted by line; [Errors] takes them apart.
type Error struct {
	File   string // the configuration file; "" for a configuration built in code or from the environment
	Line   int    // 1-based line; 0 when unknown
	Column int    // 1-based column; 0 when unknown
	Field  string // field path such as "providers.files.contexts.home.root"; "" for the whole file
	Msg    string // what is wrong
	Err    error  // the underlying cause (an I/O error), or nil
}

// Error formats the error as "file:line:column: field: message", leaving
// out the parts that are unknown or empty. An error without a file starts
// with "config: " instead.
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
		b.WriteString("config: ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Is reports whether target is [errcode.Invalid].
func (e *Error) Is(target error) bool { return target == errcode.Invalid }

// Unwrap returns [errcode.Invalid] and the underlying cause, if any, so that
// errcode.Of classifies the error and errors.Is finds the cause (for
// example fs.ErrPermission).
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{errcode.Invalid, e.Err}
	}
	return []error{errcode.Invalid}
}

// Errors returns the *Error values in err: err itself, or the errors it
// joins (see errors.Join), in order. It returns nil if err holds none.
func Errors(err error) []*Error { return errcode.All[*Error](err) }

// Warning is something wrong with a configuration that does not stop it
// from being used, such as a file holding secrets that others can read:
//
//	/home/ann/.openctl/config.yaml holds secrets (tokenSecret) and is readable by group and others (mode 0644): chmod 600 /home/ann/.openctl/config.yaml
//
// A Warning never holds a secret value.
type Warning string

// String returns the warning's text.
func (w Warning) String() string { return string(w) }

// maxErrors is how many problems one call reports; the rest are summarised.
const maxErrors = 50

// joinErrors sorts errs by file, line and column and joins at most
// maxErrors of them, followed by a summary of the rest; nil if errs is
// empty.
func joinErrors(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	errs = slices.Clone(errs)
	slices.SortStableFunc(errs, func(a, b *Error) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	more := 0
	if len(errs) > maxErrors {
		more = len(errs) - maxErrors
		errs = errs[:maxErrors]
	}
	out := make([]error, 0, len(errs)+1)
	for _, e := range errs {
		out = append(out, e)
	}
	if more > 0 {
		out = append(out, &Error{File: errs[0].File, Msg: fmt.Sprintf("... and %d more problems", more)})
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}

// yamlLineRe finds the line number in a gopkg.in/yaml.v3 syntax error.
var yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a gopkg.in/yaml.v3 parse error into an *Error naming
// file and line. The parser's messages describe the syntax, never quote
// values.
func syntaxError(file string, err error) *Error {
	msg := err.Error()
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Msg: "not valid YAML: " + m[2]}
	}
	return &Error{File: file, Msg: "not valid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}
