package testenv

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// EnvUnprivileged is set (to "1") in the environment of the test process
// RunUnprivileged starts as an unprivileged user; in that process
// RunUnprivileged runs its check.
const EnvUnprivileged = "OPENCTL_TESTENV_UNPRIVILEGED"

// RunUnprivileged runs check as a user without root's privileges, for
// checks that mean nothing to root, such as "a file with mode 0 cannot be
// read".
//
// When the test process is not root, RunUnprivileged calls check(t)
// directly. When it is root (as in CI containers), it runs t's test again
// in a new process of the same test binary (-test.run matching exactly
// t.Name(), subtests included) as the user "nobody" (uid and gid 65534
// when there is no such user), without supplementary groups, and waits
// for it: the whole test function runs again there, code before the
// RunUnprivileged call included, and RunUnprivileged calls check in it.
// The child's output is logged in t; t fails if the child fails, and is
// skipped if the child skips it.
//
// The child cannot reach root's files: it gets its own temporary
// directory ($TMPDIR, where t.TempDir creates directories) owned by
// nobody, and a copy of the test binary in it; it runs in the test's
// working directory when nobody can traverse it, else in that temporary
// directory. So a test should create the files check needs inside its
// own code (before the call or in check), under t.TempDir, not rely on
// files root made in another test. Its environment is the parent's, with
// $TMPDIR changed and EnvUnprivileged set.
//
// Call it from the test's own goroutine, once per test, with t the test
// (or subtest) whose name selects it:
//
//	func TestUnreadableFile(t *testing.T) {
//		testenv.RunUnprivileged(t, func(t *testing.T) {
//			path := filepath.Join(t.TempDir(), "f")
//			require.NoError(t, os.WriteFile(path, nil, 0))
//			_, err := os.ReadFile(path)
//			require.ErrorIs(t, err, fs.ErrPermission)
//		})
//	}
//
// On systems without user IDs (Windows) it calls check directly.
func RunUnprivileged(t *testing.T, check func(t *testing.T)) {
	t.Helper()
	if os.Getenv(EnvUnprivileged) != "" {
		if isRoot() {
			t.Fatalf("testenv: %s is set but the test runs as root: the privilege drop did not happen", EnvUnprivileged)
		}
		check(t)
		return
	}
	if !isRoot() {
		check(t)
		return
	}
	runAsNobody(t)
}

// runPattern returns the -test.run pattern that matches exactly the test
// or subtest name.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}
