package progress

import (
	"fmt"
	"time"

	"github.com/openctl/openctl"
)

// plainLine renders an event as one timestamped line:
//
//	2026-11-30T10:00:01Z svc/web-01 started
//	2026-11-30T10:00:02Z svc/web-01 step: pulling image nginx:1.27
//	2026-11-30T10:00:04Z svc/web-01 created (3.2s)
func (r *Renderer) plainLine(ev openctl.Event) string {
	var what string
	switch ev.Type {
	case openctl.EventStarted:
		what = "started"
	case openctl.EventStep:
		what = "step: " + sanitize(ev.Step)
	case openctl.EventRetrying:
		what = fmt.Sprintf("retrying (attempt %d in %s): %s", ev.Attempt+1, duration(ev.Delay), errText(ev.Err))
	case openctl.EventWaiting:
		what = "waiting: " + sanitize(ev.Step)
	case openctl.EventSucceeded:
		what = fmt.Sprintf("%s (%s)", sanitize(string(ev.Outcome)), duration(ev.Elapsed))
	case openctl.EventFailed:
		what = "failed: " + errText(ev.Err)
	case openctl.EventSkipped:
		what = "skipped: " + r.skipReason(ev.Err)
	default:
		what = sanitize(string(ev.Type))
		if ev.Step != "" {
			what += ": " + sanitize(ev.Step)
		}
	}
	return ev.Time.UTC().Format(time.RFC3339) + " " + r.byID[ev.ID].name + " " + what + "\n"
}
