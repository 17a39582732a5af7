package node

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/errcode"
)

// statusError gives an error an HTTP status other than its code's.
type statusError struct {
	status int
	err    error
}

// Error returns the wrapped error's message.
func (e *statusError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e *statusError) Unwrap() error { return e.err }

// httpStatus maps an error code to an HTTP status.
func httpStatus(c errcode.Code) int {
	switch c {
	case errcode.NotFound:
		return http.StatusNotFound
	case errcode.AlreadyExists, errcode.Conflict:
		return http.StatusConflict
	case errcode.Invalid:
		return http.StatusBadRequest
	case errcode.Unauthorized:
		return http.StatusForbidden
	case errcode.Transient, errcode.Canceled:
		// Cancelled: the agent is shutting down or the caller went away.
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeErr answers with err's code, message and status.
func writeErr(w http.ResponseWriter, r *http.Request, err error) {
	code := errcode.Of(err)
	status := httpStatus(code)
	var se *statusError
	if errors.As(err, &se) {
		status = se.status
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		status, code = http.StatusRequestEntityTooLarge, errcode.Invalid
	}
	writeError(w, r, status, code, err.Error())
}

func writeError(w http.ResponseWriter, r *http.Request, status int, code errcode.Code, msg string) {
	setOutcome(r, string(code))
	writeJSON(w, status, agent.ErrorBody{Code: string(code), Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
