package state_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/state/statetest"
)

// The file store once wrote "\n" so that it read back as "" and "\n a" as
// " a" (yaml.v3's literal blocks), and "<<" so that the file could not be
// read at all (a merge key).
func TestFileStoreKeepsNewlineStrings(t *testing.T) {
	s := newFileStore(t)
	for i, v := range []string{"\n", "\n\n", "\n a", "<<"} {
		statetest.RoundTrip(t.Context(), t, s, fmt.Sprintf("nl%d", i), map[string]any{"v": v, v: v})
	}
}

// FuzzFileStoreValues checks that any string, int64 and float64 a spec or
// status may hold, as a value, a key and in a list, reads back from the
// file store exactly as written.
func FuzzFileStoreValues(f *testing.F) {
	for i, s := range statetest.TrickyStrings {
		f.Add(s, int64(i)-3, float64(i)/7)
	}
	f.Add("x", int64(math.MaxInt64), math.MaxFloat64)
	f.Add("x", int64(math.MinInt64), math.Copysign(0, -1))
	s := newFileStore(f)
	f.Fuzz(func(t *testing.T, str string, i int64, fl float64) {
		if math.IsNaN(fl) || math.IsInf(fl, 0) {
			fl = 0 // not a value the manifest package accepts
		}
		id := "fuzz"
		require.NoError(t, s.Delete(t.Context(), statetest.ValueID(id)))
		statetest.RoundTrip(t.Context(), t, s, id, map[string]any{
			"s": str, str: []any{str, i, fl, map[string]any{str: str}}, "i": i, "f": fl,
		})
	})
}
