package progress_test

import (
	"os"
	"time"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/progress"
)

func ExampleRenderer() {
	start := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	r := progress.New(os.Stdout, progress.Plain,
		progress.WithClock(func() time.Time { return start }),
		progress.WithNames(func(id manifest.ID) string { return "svc/" + id.Name }))
	defer r.Close()

	// An engine built with openctl.WithObserver(r.Observe) sends these.
	web01 := manifest.ID{APIVersion: "demo.openctl.io/v1", Kind: "Service", Name: "web-01"}
	web02 := manifest.ID{APIVersion: "demo.openctl.io/v1", Kind: "Service", Name: "web-02"}
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	denied := errcode.New(errcode.Unauthorized, "demo: permission denied (services.create on web-02)")
	for _, ev := range []openctl.Event{
		{Time: at(0), Type: openctl.EventStarted, ID: web01, Op: "apply"},
		{Time: at(0), Type: openctl.EventStarted, ID: web02, Op: "apply"},
		{Time: at(1), Type: openctl.EventStep, ID: web01, Op: "apply", Step: "pulling image nginx:1.27"},
		{Time: at(1.5), Type: openctl.EventFailed, ID: web02, Op: "apply", Outcome: openctl.OutcomeFailed, Err: denied, Elapsed: 1500 * time.Millisecond},
		{Time: at(3.2), Type: openctl.EventSucceeded, ID: web01, Op: "apply", Outcome: openctl.OutcomeCreated, Elapsed: 3200 * time.Millisecond},
	} {
		r.Observe(ev)
	}
	rep := &openctl.Report{Duration: 3300 * time.Millisecond, Results: []openctl.Result{
		{ID: web01, Outcome: openctl.OutcomeCreated},
		{ID: web02, Outcome: openctl.OutcomeFailed, Err: denied},
	}}
	r.Finish(rep, rep.Err())
	// Output:
	// 2026-11-30T10:00:00Z svc/web-01 started
	// 2026-11-30T10:00:00Z svc/web-02 started
	// 2026-11-30T10:00:01Z svc/web-01 step: pulling image nginx:1.27
	// 2026-11-30T10:00:01Z svc/web-02 failed: demo: permission denied (services.create on web-02) (UNAUTHORIZED)
	// 2026-11-30T10:00:03Z svc/web-01 created (3.2s)
	// Apply failed: 1 created, 0 updated, 0 unchanged, 1 failed (3.3s)
	//   ✗ svc/web-02: demo: permission denied (services.create on web-02) (UNAUTHORIZED)
	//     → check the credentials of the provider's context and their permissions; the error above may name what is missing
}
