package openctl

import (
	"time"

	"github.com/openctl/openctl/manifest"
)

// EventType says what happened to a resource.
type EventType string

// The event types, in the order a resource goes through them.
const (
	// EventStarted: work on the resource began (its dependencies are done).
	EventStarted EventType = "started"
	// EventStep: the provider reported the step it is in (Event.Step),
	// e.g. "cloning" or "waiting for guest agent".
	EventStep EventType = "step"
	// EventRetrying: a transient failure; the call is retried after
	// Event.Delay.
	EventRetrying EventType = "retrying"
	// EventWaiting: waiting for a $ref's target to report the field the
	// resource needs (Event.Step says which).
	EventWaiting EventType = "waiting"
	// EventSucceeded: done; Event.Outcome says what was done.
	EventSucceeded EventType = "succeeded"
	// EventFailed: failed; Event.Err says why.
	EventFailed EventType = "failed"
	// EventSkipped: not attempted because a dependency failed or the
	// operation was cancelled; Event.Err says which.
	EventSkipped EventType = "skipped"
)

// Event is one step of progress on one resource. An Engine delivers events
// to its observer (see WithObserver) one at a time, never concurrently.
// The events of one resource arrive in the order they happened; across
// resources worked on in parallel, in the order their deliveries were
// serialised, which Time records.
type Event struct {
	// Time is when the event was delivered: stamped as deliveries are
	// serialised, so it never decreases from one event to the next. It
	// lags the moment the event happened by at most the time earlier
	// events took to deliver.
	Time time.Time
	Type EventType
	ID   manifest.ID
	// Op is the operation: "apply" or "delete", or for the steps of an
	// action (Engine.Do, which reports only EventStep) the action's name.
	Op string
	// Outcome is set on EventSucceeded (and on EventFailed/EventSkipped as
	// OutcomeFailed/OutcomeSkipped).
	Outcome Outcome
	// Step is the provider's step (EventStep) or what the resource waits
	// for (EventWaiting).
	Step string
	// Attempt is the attempt that failed (EventRetrying).
	Attempt int
	// Delay is the wait before the next attempt (EventRetrying).
	Delay time.Duration
	// Elapsed is the time since the resource's EventStarted (for terminal
	// events: how long it took).
	Elapsed time.Duration
	// Err is the error (EventFailed, EventSkipped, EventRetrying).
	Err error
}
