package openctl

import (
	"errors"
	"time"

	"github.com/openctl/openctl/manifest"
)

// Outcome is what an operation did to one resource.
type Outcome string

// The outcomes.
const (
	OutcomeCreated   Outcome = "created"
	OutcomeUpdated   Outcome = "updated"
	OutcomeUnchanged Outcome = "unchanged"
	OutcomeDeleted   Outcome = "deleted"
	OutcomeFailed    Outcome = "failed"
	OutcomeSkipped   Outcome = "skipped"
)

// Result is the outcome for one resource of an Apply or Delete.
type Result struct {
	ID      manifest.ID
	Outcome Outcome
	// Resource is the live resource after a successful apply (status
	// included, secret fields as the provider returned them).
	Resource *manifest.Resource
	// Err is why the resource failed or was skipped.
	Err error
	// Attempts is the number of provider calls made for the main write
	// (more than 1 when transient errors were retried).
	Attempts int
	// Duration is the time spent on the resource.
	Duration time.Duration
	// Owner is the composite that produced the resource, if any.
	Owner *manifest.ID
	// Source is where the manifest came from, when it was decoded.
	Source manifest.Source
}

// Report holds one Result per resource of an operation, in execution
// order, composite children included.
type Report struct {
	Results  []Result
	Duration time.Duration
}

// Err returns the failed and skipped resources' errors joined, or nil when
// every resource succeeded.
func (r *Report) Err() error {
	if r == nil {
		return nil
	}
	var errs []error
	for _, res := range r.Results {
		if res.Err != nil {
			errs = append(errs, res.Err)
		}
	}
	return errors.Join(errs...)
}

// Result returns the result for id.
func (r *Report) Result(id manifest.ID) (Result, bool) {
	for _, res := range r.Results {
		if res.ID == id {
			return res, true
		}
	}
	return Result{}, false
}

// Count returns how many resources had the given outcome.
func (r *Report) Count(o Outcome) int {
	n := 0
	for _, res := range r.Results {
		if res.Outcome == o {
			n++
		}
	}
	return n
}
