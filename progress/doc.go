// Package progress shows what an openctl apply or delete is doing while it
// runs, and how it went when it ends: a live view on a terminal, one
// timestamped line per event in logs and CI, or only the failures.
//
//	r := progress.New(os.Stderr, progress.Auto, progress.WithNames(output.KindNames(kinds)))
//	defer r.Close()
//	e, err := openctl.New(openctl.WithRegistry(reg), openctl.WithObserver(r.Observe))
//	...
//	r.Start("apply", ids) // optional: list them as pending
//	rep, err := e.Apply(ctx, resources...)
//	r.Finish(rep, err)
//
// On a terminal this shows, redrawn every 100ms,
//
//	✓ svc/db        3.2s  created
//	⠹ svc/web-01     12s  applying: pulling image nginx:1.27
//	⠹ svc/web-02      8s  retrying (attempt 2 in 1.2s): demo: 503 Service Unavailable
//	· svc/web-03          pending
//
// and at the end
//
//	Apply failed: 1 created, 0 updated, 0 unchanged, 1 failed, 1 skipped (14.0s)
//	  ✗ svc/web-02: openctl: apply Service/web-02 (services.yaml:9): demo: ... (UNAUTHORIZED)
//	    → check the credentials of the provider's context and their permissions; ...
//	  ✗ svc/web-03: not attempted: depends on svc/web-02
//	    → fix svc/web-02 and re-run
//
// ExampleRenderer shows the plain mode.
//
// # Modes
//
// [TTY] keeps one line per resource — a spinner, the name, the elapsed time,
// the phase (pending, applying or deleting, waiting, retrying) and the step
// the provider reported — and redraws them in place with ANSI escape
// sequences, cut to the terminal's width. A frame is written only when its
// text changed: an event arrived, a spinner turned or an elapsed counter
// passed a second. When a resource finishes, its final line (✓ created,
// ✗ failed, - skipped) is written once above the live lines, which then
// hold only resources still pending or running; when those do not fit in
// the terminal, running ones are shown first and the rest counted.
//
// [Plain] writes a line per event, stamped with the event's time:
//
//	2026-11-30T10:00:01Z svc/web-01 started
//	2026-11-30T10:00:02Z svc/web-01 step: pulling image nginx:1.27
//	2026-11-30T10:00:04Z svc/web-01 created (3.2s)
//	2026-11-30T10:00:04Z svc/web-02 failed: <error>
//
// [Quiet] writes only the failure listing. [Auto], the default, is TTY on
// a terminal whose TERM is not "dumb", and Plain otherwise.
//
// # Failures
//
// [Renderer.Finish] lists each failed or skipped resource with its error
// and a line of advice chosen by the error's code ([Advice]; replace it
// with [WithAdvice]): a re-run for temporary and interrupted failures, the
// manifest's file and line for invalid input, force-unlock for a state
// lock left by a crashed run, and so on.
//
// # Concurrency
//
// A [Renderer] is safe for concurrent use. Writes to its writer come from
// one goroutine at a time (in TTY mode, a redraw goroutine that Finish and
// Close stop), so the writer need not be safe for concurrent use, but
// nothing else should write to it until Finish or Close returns. Another
// stream sharing the terminal — standard error with log lines — goes
// through [Renderer.Interleave], which writes above the live lines.
package progress
