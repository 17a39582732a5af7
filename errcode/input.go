package errcode

import (
	"strconv"
	"strings"
)

// InputError is a problem in an input a user wrote — a manifest, a
// configuration file: where it is (file, line, column, field path) and
// what is wrong. Every *InputError is an [Invalid] error: errors.Is(err,
// Invalid) is true and [Of] returns Invalid. Its message never holds a
// secret value.
//
// Packages that read such inputs report every problem they find at once,
// as an errors.Join of *InputError values sorted by file and line; [All]
// takes them apart again (manifest.Errors and config.Errors are that).
type InputError struct {
	Input  string // what kind of input it is ("manifest", "config"): the prefix of an error without a file
	File   string // file name; "<stdin>" for standard input; "" for an input built in code
	Line   int    // 1-based line; 0 when unknown
	Column int    // 1-based column; 0 when unknown
	Field  string // field path, such as "metadata.name" or "spec.disks[0].size"; "" for the whole document
	Msg    string // what is wrong
	Err    error  // the underlying cause (an I/O error), or nil
}

// Error formats the error as "file:line:column: field: message: cause",
// leaving out the parts that are unknown or empty. An error without a
// file starts with its Input ("manifest: line 3, column 5: ...") instead.
func (e *InputError) Error() string {
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
		if e.Input != "" {
			b.WriteString(e.Input + ": ")
		}
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
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Is reports whether target is [Invalid].
func (e *InputError) Is(target error) bool { return target == Invalid }

// Unwrap returns [Invalid] and the underlying cause, if any, so that [Of]
// classifies the error and errors.Is finds the cause (for example
// fs.ErrNotExist).
func (e *InputError) Unwrap() []error {
	if e.Err != nil {
		return []error{Invalid, e.Err}
	}
	return []error{Invalid}
}
