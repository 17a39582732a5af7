package openctl

import "github.com/openctl/openctl/errcode"

// The error codes, re-exported from package errcode for convenience. Check
// them with errors.Is:
//
//	if errors.Is(err, openctl.ErrNotFound) { ... }
//
// or switch on [Code].
const (
	ErrNotFound      = errcode.NotFound
	ErrAlreadyExists = errcode.AlreadyExists
	ErrInvalid       = errcode.Invalid
	ErrUnauthorized  = errcode.Unauthorized
	ErrInternal      = errcode.Internal
	ErrConflict      = errcode.Conflict
	ErrTransient     = errcode.Transient
)

// Code returns the error code of err ("" for nil, errcode.Internal for an
// error that carries none). See errcode.Of.
func Code(err error) errcode.Code { return errcode.Of(err) }
