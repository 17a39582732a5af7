package node

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/errcode"
)

// Limits of GET /v1/logs/k3s.
const (
	logsWriteTimeout = 2 * time.Minute       // the stream's write deadline
	logsFlushEvery   = 50 * time.Millisecond // how often the stream is flushed
)

// parseLogsQuery parses the query of GET /v1/logs/k3s: lines, a decimal
// number in MinLogLines..MaxLogLines (default DefaultLogLines), and
// follow, true or false (default false); nothing else, each at most once.
func parseLogsQuery(rawQuery string) (n int, follow bool, err error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return 0, false, errcode.Wrap(errcode.Invalid, "agent: malformed query", err)
	}
	for k, vals := range q {
		if k != "lines" && k != "follow" {
			return 0, false, fmt.Errorf("agent: unknown query parameter %q: %w", k, errcode.Invalid)
		}
		if len(vals) > 1 {
			return 0, false, fmt.Errorf("agent: %s given %d times: %w", k, len(vals), errcode.Invalid)
		}
	}
	switch v := q.Get("follow"); v {
	case "", "false":
	case "true":
		follow = true
	default:
		return 0, false, fmt.Errorf("agent: follow=%q: want true or false: %w", v, errcode.Invalid)
	}
	vals := q["lines"]
	if len(vals) == 0 {
		return agent.DefaultLogLines, follow, nil
	}
	v := vals[0]
	n = 0
	if v == "" || len(v) > 4 {
		n = -1
	}
	for _, c := range v {
		if n < 0 || c < '0' || c > '9' {
			n = -1
			break
		}
		n = n*10 + int(c-'0')
	}
	if n < agent.MinLogLines || n > agent.MaxLogLines {
		return 0, false, fmt.Errorf("agent: lines=%q: want a number in %d..%d: %w", v, agent.MinLogLines, agent.MaxLogLines, errcode.Invalid)
	}
	return n, follow, nil
}

func (s *Server) handleLogs(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	n, follow, err := parseLogsQuery(r.URL.RawQuery)
	if err != nil {
		writeErr(w, r, err)
		return
	}
	auditAttrs(r, slog.Int("lines", n), slog.Bool("follow", follow))
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Trailer", agent.TrailerLogsError)
	fw := &flushWriter{w: w, rc: rc}
	if follow {
		// Until the client goes: no deadline, each line sent at once.
		_ = rc.SetWriteDeadline(time.Time{})
		fw.eager = true
		err = s.sys.FollowLogs(r.Context(), n, fw)
	} else {
		_ = rc.SetWriteDeadline(time.Now().Add(logsWriteTimeout))
		err = s.sys.Logs(r.Context(), n, fw)
	}
	if err == nil {
		err = fw.flush()
		if err != nil {
			setOutcome(r, string(errcode.Transient))
		}
		return
	}
	err = fmt.Errorf("agent: k3s logs: %w", err)
	if !fw.started {
		h.Del("Trailer")
		writeErr(w, r, err)
		return
	}
	code := errcode.Of(err)
	setOutcome(r, string(code))
	h.Set(agent.TrailerLogsError, string(code)+": "+oneLine(err.Error()))
}

// flushWriter sends what is written to an HTTP response without waiting
// for the buffers to fill, flushing at most every logsFlushEvery.
type flushWriter struct {
	w         io.Writer
	rc        *http.ResponseController
	eager     bool // flush every write (a followed log: lines come seldom)
	started   bool
	lastFlush time.Time
}

// Write writes p and flushes if the last flush is old enough.
func (f *flushWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	f.started = true
	n, err := f.w.Write(p)
	if err != nil {
		return n, err
	}
	if f.eager || time.Since(f.lastFlush) >= logsFlushEvery {
		if err := f.flush(); err != nil {
			return n, err
		}
	}
	return n, nil
}

func (f *flushWriter) flush() error {
	f.lastFlush = time.Now()
	if !f.started {
		return nil
	}
	return f.rc.Flush()
}
