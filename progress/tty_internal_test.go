package progress

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/manifest"
)

// TestLiveLinesHeight checks that a view taller than the terminal shows
// running resources first and counts the rest. (Heights come from a real
// terminal only, so this calls liveLines directly.)
func TestLiveLinesHeight(t *testing.T) {
	start := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	r := New(&bytes.Buffer{}, TTY, WithInterval(0), WithClock(func() time.Time { return start }))
	var ids []manifest.ID
	for i := range 10 {
		ids = append(ids, manifest.ID{APIVersion: "demo.openctl.io/v1", Kind: "Service", Name: fmt.Sprintf("web-%d", i)})
	}
	r.Start("apply", ids)
	r.Observe(openctl.Event{Type: openctl.EventStarted, ID: ids[7], Op: "apply", Time: start})
	r.Observe(openctl.Event{Type: openctl.EventStarted, ID: ids[8], Op: "apply", Time: start})

	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Equal(t, []string{
		"⠋ service/web-7      0s  applying",
		"⠋ service/web-8      0s  applying",
		"· service/web-0          pending",
		"  … and 7 more",
	}, r.liveLines(start, 80, 5))
	assert.Len(t, r.liveLines(start, 80, 0), 10, "height unknown: no limit")
	assert.Len(t, r.liveLines(start, 80, 11), 10, "fits")
	assert.Equal(t, []string{"⠋ serv…", "  … an…"}, r.liveLines(start, 8, 2)[:2])
}

func TestCut(t *testing.T) {
	assert.Equal(t, "abc", cut("abc", 3))
	assert.Equal(t, "a…", cut("abc", 2))
	assert.Equal(t, "…", cut("abc", 0))
	assert.Equal(t, "✓…", cut("✓✓✓", 2))
}
