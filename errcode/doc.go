// Package errcode defines the error codes every openctl package, provider
// and store reports, so an embedder can branch on what went wrong without
// parsing messages.
//
// A [Code] is itself an error, so the simplest way for a provider to report a
// coded failure is to wrap it:
//
//	return nil, fmt.Errorf("proxmox: vm %q: %w", name, errcode.NotFound)
//
// and the simplest way to check one is errors.Is:
//
//	if errors.Is(err, errcode.NotFound) { ... }
//
// [Of] returns the code of any error (Internal for errors that carry none),
// and [Error] carries a code together with a message and a cause when both
// the code and the underlying error must survive.
//
// The codes are those of the openctl plugin protocol (NOT_FOUND,
// ALREADY_EXISTS, INVALID_REQUEST, UNAUTHORIZED, INTERNAL) plus CONFLICT
// (a state lock or generation clash), TRANSIENT (worth retrying) and
// CANCELLED (interrupted: its context was cancelled).
package errcode
