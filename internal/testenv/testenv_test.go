package testenv

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
