// Package testenv holds what openctl's tests need to know about where they
// run: a test that depends on something outside the repository (the
// Proxmox API schema in ../shared, a PostgreSQL server, the openssl
// command) calls Unavailable when it is missing, so that a plain clone
// of the repository still passes `make test` while CI, which must have
// everything, fails loudly instead of counting a skip as a pass.
package testenv

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// InCI reports whether the tests run in CI: the environment variable CI
// is set to a true value ("true", "1", ...), as CI services and .ci/run
// set it.
func InCI() bool {
	v, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && v
}

// Unavailable ends the test because something it needs is missing: it
// skips with the message, or fails with it when InCI, where nothing may be
// missing. The message should say what is missing and how to provide it.
func Unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		tb.Fatalf("%s (CI=true: a missing dependency fails the test instead of skipping it)", msg)
		return
	}
	tb.Skip(msg)
}
