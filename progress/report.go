package progress

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/manifest"
)

// resultFor returns the report's result for a row's resource, as recorded
// by Finish. r.mu is held.
func (r *Renderer) resultFor(x *row) (openctl.Result, bool) {
	res, ok := r.final[x.id]
	return res, ok
}

// results returns the results to summarise — the report's, or, without
// one, what the events said — and keeps them for the final TTY lines.
// r.mu is held.
func (r *Renderer) results(rep *openctl.Report) []openctl.Result {
	r.final = map[manifest.ID]openctl.Result{}
	if rep != nil {
		for _, res := range rep.Results {
			r.final[res.ID] = res
		}
		return rep.Results
	}
	var out []openctl.Result
	for _, x := range r.rows {
		if x.state == finished {
			res := openctl.Result{ID: x.id, Outcome: x.outcome, Err: x.err, Duration: x.elapsed}
			r.final[x.id] = res
			out = append(out, res)
		}
	}
	return out
}

// report renders the summary (not in Quiet mode) and the failures.
func (r *Renderer) report(rep *openctl.Report, results []openctl.Result, err error) string {
	var b strings.Builder
	counts := map[openctl.Outcome]int{}
	for _, res := range results {
		counts[res.Outcome]++
	}
	if r.mode != Quiet {
		if r.mode == TTY {
			b.WriteByte('\n')
		}
		b.WriteString(r.summary(rep, counts, err))
	}
	listed := false
	for _, res := range results {
		if !failed(res.Outcome) {
			continue
		}
		listed = true
		if c, ok := skipCause(res.Err); ok {
			cause := sanitize(r.names(c))
			r.failure(&b, r.names(res.ID), "not attempted: depends on "+cause, "fix "+cause+" and re-run")
			continue
		}
		if res.Err == nil {
			r.failure(&b, r.names(res.ID), string(res.Outcome), "")
			continue
		}
		reason := res.Err.Error()
		if res.Outcome == openctl.OutcomeSkipped && isCanceled(res.Err) {
			reason = "not attempted: interrupted"
		}
		r.failure(&b, r.names(res.ID), reason, r.advice(res))
	}
	if !listed && err != nil {
		r.failure(&b, "", err.Error(), r.advice(openctl.Result{Outcome: openctl.OutcomeFailed, Err: err}))
	}
	return b.String()
}

// failure writes one failure: "  ✗ name: reason" (continuation lines of a
// multi-line reason indented under it) and "    → advice".
func (r *Renderer) failure(b *strings.Builder, name, reason, advice string) {
	b.WriteString("  " + symFailed + " ")
	if name != "" {
		b.WriteString(sanitize(name) + ": ")
	}
	for i, l := range strings.Split(strings.TrimRight(reason, "\n"), "\n") {
		if i > 0 {
			b.WriteString("    ")
		}
		b.WriteString(sanitize(l) + "\n")
	}
	if advice != "" {
		b.WriteString("    → " + sanitize(advice) + "\n")
	}
}

// summary renders "Apply complete: 2 created, 1 updated, 3 unchanged, 0
// failed (12.3s)": for an apply the created, updated, unchanged and failed
// counts, for a delete the deleted and failed counts, and any other
// outcome that occurred. It says "failed" instead of "complete" when
// anything failed or err is set.
func (r *Renderer) summary(rep *openctl.Report, counts map[openctl.Outcome]int, err error) string {
	op := r.op
	if op == "" {
		op = "apply"
	}
	always := []openctl.Outcome{openctl.OutcomeCreated, openctl.OutcomeUpdated, openctl.OutcomeUnchanged, openctl.OutcomeFailed}
	if op == "delete" {
		always = []openctl.Outcome{openctl.OutcomeDeleted, openctl.OutcomeFailed}
	}
	order := []openctl.Outcome{openctl.OutcomeCreated, openctl.OutcomeUpdated, openctl.OutcomeUnchanged, openctl.OutcomeDeleted, openctl.OutcomeFailed, openctl.OutcomeSkipped}
	var parts []string
	for _, o := range order {
		if counts[o] > 0 || slices.Contains(always, o) {
			parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
		}
	}
	status := "complete"
	if err != nil || counts[openctl.OutcomeFailed] > 0 || counts[openctl.OutcomeSkipped] > 0 {
		status = "failed"
	}
	var took time.Duration
	switch {
	case rep != nil && rep.Duration > 0:
		took = rep.Duration
	case !r.began.IsZero():
		took = r.now().Sub(r.began)
	}
	title := strings.ToUpper(op[:1]) + op[1:]
	return fmt.Sprintf("%s %s: %s (%s)\n", sanitize(title), status, strings.Join(parts, ", "), duration(took))
}

func isCanceled(err error) bool { return errors.Is(err, context.Canceled) }
