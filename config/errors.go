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

// Errors returns the problems in err — *errcode.InputError values, Input
// "config" — err itself, or the errors it joins (see errors.Join), in
// order. It returns nil if err holds none.
func Errors(err error) []*errcode.InputError { return errcode.All[*errcode.InputError](err) }

// inputError is a problem in a configuration.
func inputError(e errcode.InputError) *errcode.InputError {
	e.Input = "config"
	return &e
}

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
func joinErrors(errs []*errcode.InputError) error {
	if len(errs) == 0 {
		return nil
	}
	errs = slices.Clone(errs)
	slices.SortStableFunc(errs, func(a, b *errcode.InputError) int {
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
		out = append(out, inputError(errcode.InputError{File: errs[0].File, Msg: fmt.Sprintf("... and %d more problems", more)}))
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}

// yamlLineRe finds the line number in a gopkg.in/yaml.v3 syntax error.
var yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a gopkg.in/yaml.v3 parse error into an *errcode.InputError naming
// file and line. The parser's messages describe the syntax, never quote
// values.
func syntaxError(file string, err error) *errcode.InputError {
	msg := err.Error()
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return inputError(errcode.InputError{File: file, Line: line, Msg: "not valid YAML: " + m[2]})
	}
	return inputError(errcode.InputError{File: file, Msg: "not valid YAML: " + strings.TrimPrefix(msg, "yaml: ")})
}
