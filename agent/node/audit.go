package node

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/errcode"
)

// auditRecord collects what the audit line says about a request beyond
// its status: the outcome a handler reports.
type auditRecord struct {
	mu      sync.Mutex // guards outcome and attrs
	outcome string
	attrs   []slog.Attr
}

type auditKey struct{}

// setOutcome records the request's outcome for its audit line: an error
// code, or an upgrade's status.
func setOutcome(r *http.Request, outcome string) {
	if rec, ok := r.Context().Value(auditKey{}).(*auditRecord); ok {
		rec.mu.Lock()
		rec.outcome = outcome
		rec.mu.Unlock()
	}
}

// auditAttrs adds request details (a line count, a version) to the
// request's audit line.
func auditAttrs(r *http.Request, attrs ...slog.Attr) {
	if rec, ok := r.Context().Value(auditKey{}).(*auditRecord); ok {
		rec.mu.Lock()
		rec.attrs = append(rec.attrs, attrs...)
		rec.mu.Unlock()
	}
}

// statusRecorder remembers the status and size of a response.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

// WriteHeader records the first status written.
func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write counts the bytes written (an implicit 200 if no status yet).
func (w *statusRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// audit wraps next: it caps the request body, stamps the agent version on
// the response, refuses (403) a client the current credentials no longer
// accept (recheckClient), turns a panic into a 500 and logs one audit
// line per request: who (client certificate CN), what (method and path),
// the outcome and how long it took.
func (s *Server) audit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &auditRecord{}
		sw := &statusRecorder{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), auditKey{}, rec))
		r.Body = http.MaxBytesReader(sw, r.Body, agent.MaxRequestBody)
		if s.version != "" {
			sw.Header().Set(agent.HeaderAgentVersion, s.version)
		}
		defer func() {
			p := recover()
			if p != nil {
				if p == http.ErrAbortHandler {
					// net/http's own signal to drop the connection, not a
					// bug: hand it back to the server, which expects it.
					panic(p)
				}
				s.log.Error("agent: handler panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
				if sw.status == 0 {
					writeError(sw, r, http.StatusInternalServerError, errcode.Internal, "internal error")
				}
				setOutcome(r, string(errcode.Internal))
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			rec.mu.Lock()
			outcome, extra := rec.outcome, rec.attrs
			rec.mu.Unlock()
			if outcome == "" {
				outcome = "ok"
				if status >= 400 {
					outcome = http.StatusText(status)
				}
			}
			level := slog.LevelInfo
			switch {
			case status >= 500:
				level = slog.LevelError
			case status >= 400:
				level = slog.LevelWarn
			}
			attrs := append([]slog.Attr{
				slog.String("client", clientName(r)),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", status),
				slog.String("outcome", outcome),
				slog.Duration("duration", time.Since(start)),
				slog.Int64("bytes", sw.bytes),
				slog.String("remote", r.RemoteAddr),
			}, extra...)
			s.log.LogAttrs(r.Context(), level, "agent: request", attrs...)
		}()
		if r.TLS != nil {
			if err := s.recheckClient(r.TLS); err != nil {
				sw.Header().Set("Connection", "close")
				writeError(sw, r, http.StatusForbidden, errcode.Unauthorized, err.Error())
				return
			}
		}
		next.ServeHTTP(sw, r)
	})
}

// clientName is the common name of the verified client certificate, or
// "-" for a request that did not come over mutual TLS (Handler used in
// process).
func clientName(r *http.Request) string {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		return r.TLS.PeerCertificates[0].Subject.CommonName
	}
	return "-"
}
