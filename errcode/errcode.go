package errcode

import (
	"context"
	"errors"
	"strings"
)

// Code classifies an error. The zero value is not a valid code; [Of] never
// returns it for a non-nil error. Code implements error so that it can be
// wrapped with %w and matched with errors.Is.
type Code string

// The error codes. Their string values are the wire names of the openctl
// protocol and are stable.
const (
	// NotFound: the resource (or a field a $ref names) does not exist.
	NotFound Code = "NOT_FOUND"
	// AlreadyExists: a resource with that identity exists and cannot be
	// adopted (for example a VM that openctl did not create).
	AlreadyExists Code = "ALREADY_EXISTS"
	// Invalid: the request or manifest is malformed or not allowed. Never
	// retried.
	Invalid Code = "INVALID_REQUEST"
	// Unauthorized: authentication or authorisation failed. Never retried.
	Unauthorized Code = "UNAUTHORIZED"
	// Internal: a bug or an unexpected failure, including recovered panics.
	Internal Code = "INTERNAL"
	// Conflict: a state lock is held by someone else, or a state record was
	// changed since it was read (generation mismatch).
	Conflict Code = "CONFLICT"
	// Transient: a temporary failure (network, lock timeout on the remote
	// side, 5xx) that is worth retrying with backoff.
	Transient Code = "TRANSIENT"
	// Canceled: the operation was interrupted (its context cancelled, as
	// SIGINT or SIGTERM does) before it finished. Never retried: re-running
	// the same command converges.
	Canceled Code = "CANCELLED"
)

// Codes lists every code, in a stable order.
func Codes() []Code {
	return []Code{NotFound, AlreadyExists, Invalid, Unauthorized, Internal, Conflict, Transient, Canceled}
}

// Error returns the code's wire name, so that a bare Code reads well when
// wrapped: "proxmox: vm web-01: NOT_FOUND".
func (c Code) Error() string { return string(c) }

// Error is an error with a code, a message and an optional cause.
// errors.Is(err, code) reports true for its code, and errors.Is / errors.As
// also see through to Err.
type Error struct {
	Code Code   // the classification
	Msg  string // human-readable message; may be empty when Err says it all
	Err  error  // the underlying cause, may be nil
}

// New returns an *Error with the given code and message.
func New(code Code, msg string) *Error { return &Error{Code: code, Msg: msg} }

// Wrap returns an *Error with the given code, message and cause. It returns
// nil if err is nil.
func Wrap(code Code, msg string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Msg: msg, Err: err}
}

// Error formats the error as "msg: cause" (or whichever is present) followed
// by the code in parentheses when neither part names it already.
func (e *Error) Error() string {
	var s string
	switch {
	case e.Msg != "" && e.Err != nil:
		s = e.Msg + ": " + e.Err.Error()
	case e.Msg != "":
		s = e.Msg
	case e.Err != nil:
		s = e.Err.Error()
	default:
		return string(e.Code)
	}
	if strings.Contains(s, string(e.Code)) {
		return s
	}
	return s + " (" + string(e.Code) + ")"
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is this error's code.
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && c == e.Code
}

// Of returns the code of err: the code of the first *Error or Code found in
// its chain (breadth-first through joined errors), so the outermost
// classification wins — except that an error whose chain holds
// context.Canceled is Canceled whatever else it carries: the step was
// interrupted, and what it failed with on the way says nothing more. An
// error that carries no code is Internal, except a bare
// context.DeadlineExceeded (an operation timed out), which is Transient.
// Of returns "" for a nil error.
func Of(err error) Code {
	if err == nil {
		return ""
	}
	if errors.Is(err, context.Canceled) {
		return Canceled
	}
	for cur := []error{err}; len(cur) > 0; {
		var next []error
		for _, x := range cur {
			switch v := x.(type) {
			case *Error:
				return v.Code
			case Code:
				return v
			}
			switch u := x.(type) {
			case interface{ Unwrap() error }:
				if w := u.Unwrap(); w != nil {
					next = append(next, w)
				}
			case interface{ Unwrap() []error }:
				next = append(next, u.Unwrap()...)
			}
		}
		cur = next
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Transient
	}
	return Internal
}

// Retryable reports whether err is worth retrying: its code is Transient.
func Retryable(err error) bool { return Of(err) == Transient }

// Is reports whether err carries code c; it is errors.Is(err, c).
func Is(err error, c Code) bool { return errors.Is(err, c) }

// All returns the errors of type T in err's tree, in order: err itself if
// it is a T, else the Ts found by unwrapping it (through errors.Join and
// %w), without looking inside a T. It returns nil if there is none.
// manifest.Errors and config.Errors are All for *InputError.
func All[T error](err error) []T {
	switch x := err.(type) {
	case T:
		return []T{x}
	case interface{ Unwrap() []error }:
		var out []T
		for _, c := range x.Unwrap() {
			out = append(out, All[T](c)...)
		}
		return out
	case interface{ Unwrap() error }:
		return All[T](x.Unwrap())
	}
	return nil
}
