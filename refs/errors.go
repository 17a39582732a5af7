package refs

import (
	"errors"
	"strings"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

// Error is a failure about one $ref marker. It reads, for example,
//
//	refs: VirtualMachine/web-01 spec.net.ip: $ref to VirtualMachine/db field status.ip: field not found
//
// errors.Is(err, code) reports whether Code is code; errors.Is and
// errors.As also see through to Err. [errcode.Of] returns Code as well.
type Error struct {
	Resource manifest.ID  // the referring resource
	Path     string       // the marker's path in Resource, e.g. "spec.net.ip"
	Target   manifest.ID  // the referenced resource; zero if the marker is malformed
	Field    string       // the referenced field; "" for the whole resource
	Code     errcode.Code // the classification, matched by errors.Is
	Msg      string       // what went wrong; may be empty when Err says it all
	Err      error        // the cause (the Getter's error, manifest's error), may be nil

	missing error // ErrTargetNotFound or ErrFieldNotFound, when that is the cause
}

// ErrTargetNotFound is matched (errors.Is) by an [*Error] whose target
// resource does not exist, and by nothing else: not by a target that
// exists without the field (see [ErrFieldNotFound]), nor by a Getter's
// NotFound about something else.
var ErrTargetNotFound = errors.New("refs: the referenced resource does not exist")

// ErrFieldNotFound is matched (errors.Is) by an [*Error] whose target
// exists but has no value at the field the marker names.
var ErrFieldNotFound = errors.New("refs: the referenced resource has no such field")

// TargetNotFound returns the [*Error] for ref, found in the spec of
// resource, whose target does not exist; why says how that is known. It
// has code [errcode.NotFound] and matches [ErrTargetNotFound].
func TargetNotFound(resource manifest.ID, ref Ref, why string) *Error {
	msg := "the referenced resource does not exist"
	if why != "" {
		msg += ": " + why
	}
	return &Error{Resource: resource, Path: ref.Path, Target: ref.Target, Field: ref.Field, Code: errcode.NotFound, Msg: msg, missing: ErrTargetNotFound}
}

// Error renders the error as
// "refs: <kind>/<name> <path>: $ref to <kind>/<name> field <field>: <msg>: <cause>",
// leaving out the parts that are empty.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("refs: ")
	if e.Resource != (manifest.ID{}) {
		b.WriteString(e.Resource.Short())
		if e.Path != "" {
			b.WriteByte(' ')
		}
	}
	b.WriteString(e.Path)
	sep := ": "
	if e.Resource == (manifest.ID{}) && e.Path == "" {
		sep = ""
	}
	if e.Target != (manifest.ID{}) {
		b.WriteString(sep)
		sep = ": "
		b.WriteString("$ref to ")
		b.WriteString(e.Target.Short())
		if e.Field != "" {
			b.WriteString(" field ")
			b.WriteString(e.Field)
		}
	}
	if e.Msg != "" {
		b.WriteString(sep)
		sep = ": "
		b.WriteString(e.Msg)
	}
	if e.Err != nil {
		b.WriteString(sep)
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause, or the bare Code when there is none, so that
// [errcode.Of] classifies every *Error by its Code.
func (e *Error) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return e.Code
}

// Is reports whether target is the error's code, or [ErrTargetNotFound]
// or [ErrFieldNotFound] when that is what went wrong.
func (e *Error) Is(target error) bool {
	if target == ErrTargetNotFound || target == ErrFieldNotFound {
		return e.missing == target
	}
	c, ok := target.(errcode.Code)
	return ok && c == e.Code
}

// join returns nil, the single error, or the errors joined.
func join(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}

// getterCode classifies a Getter's error: NotFound if it says so anywhere in
// its chain, otherwise whatever code it carries.
func getterCode(err error) errcode.Code {
	if errors.Is(err, errcode.NotFound) {
		return errcode.NotFound
	}
	return errcode.Of(err)
}
