package plugin

import (
	"fmt"

	"github.com/openctl/openctl/errcode"
)

// Error is an error response of a plugin. It matches (errors.Is) the
// errcode it maps to: the protocol's codes NOT_FOUND, ALREADY_EXISTS,
// INVALID_REQUEST, UNAUTHORIZED and INTERNAL (and openctl's CONFLICT
// and TRANSIENT) map to themselves; any other code maps to
// errcode.Internal, and Wire keeps the code the plugin sent.
type Error struct {
	Plugin  string       // the plugin's name
	Code    errcode.Code // the mapped code
	Wire    string       // the code as the plugin sent it
	Message string
	Details string
}

// Error formats the error as
// "plugin notes: NOT_FOUND: note a not found (details)".
func (e *Error) Error() string {
	s := fmt.Sprintf("plugin %s: %s: %s", e.Plugin, e.Wire, e.Message)
	if e.Details != "" {
		s += " (" + e.Details + ")"
	}
	return s
}

// Unwrap returns the mapped code, so that errors.Is and errcode.Of see it.
func (e *Error) Unwrap() error { return e.Code }

// mapCode maps a wire code onto errcode.
func mapCode(wire string) errcode.Code {
	for _, c := range errcode.Codes() {
		if string(c) == wire {
			return c
		}
	}
	return errcode.Internal
}
