package testenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB that records how Unavailable ended the test.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Skip(args ...any)               { r.skipped = true; r.msg = args[0].(string) }
func (r *recorder) Fatalf(format string, a ...any) { r.failed = true; r.msg = format }

func TestUnavailableSkipsLocallyAndFailsInCI(t *testing.T) {
	t.Setenv("CI", "")
	r := &recorder{TB: t}
	Unavailable(r, "no %s", "schema")
	assert.True(t, r.skipped)
	assert.False(t, r.failed)
	assert.Equal(t, "no schema", r.msg)

	t.Setenv("CI", "true")
	r = &recorder{TB: t}
	Unavailable(r, "no %s", "schema")
	assert.True(t, r.failed)
	assert.False(t, r.skipped)
}

func TestInCI(t *testing.T) {
	for v, want := range map[string]bool{"": false, "true": true, "1": true, "false": false, "no": false} {
		t.Setenv("CI", v)
		assert.Equal(t, want, InCI(), "CI=%q", v)
	}
}

func TestRunUnprivileged(t *testing.T) {
	ran := false
	RunUnprivileged(t, func(t *testing.T) {
		ran = true
		assert.NotEqual(t, 0, os.Geteuid(), "the check runs unprivileged")
		path := filepath.Join(t.TempDir(), "unreadable")
		require.NoError(t, os.WriteFile(path, []byte("x"), 0))
		_, err := os.ReadFile(path)
		assert.ErrorIs(t, err, fs.ErrPermission)
	})
	if os.Geteuid() == 0 {
		assert.False(t, ran, "as root the check runs in the child, not here")
	} else {
		assert.True(t, ran)
	}
}

func TestRunUnprivilegedSubtest(t *testing.T) {
	for _, name := range []string{"a b", "x.y(z)"} {
		t.Run(name, func(t *testing.T) {
			RunUnprivileged(t, func(t *testing.T) {
				assert.NotEqual(t, 0, os.Geteuid())
			})
		})
	}
}

func TestRunPattern(t *testing.T) {
	assert.Equal(t, `^TestA$/^x\.y\(z\)$`, runPattern("TestA/x.y(z)"))
}
