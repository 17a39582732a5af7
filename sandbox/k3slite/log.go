package k3slite

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// levelFatal is logrus's fatal level: k3s logs it and exits 1.
const levelFatal = slog.Level(12)

// lockedWriter serialises writes from the program's goroutines to one
// standard stream.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// newLogger logs in logrus's text shape, as k3s does under systemd (and
// as the stand-in does): time=… level=info msg="…"; level=fatal before a
// fatal exit.
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(&lockedWriter{w: w}, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey:
				return slog.String("time", a.Value.Time().UTC().Format(time.RFC3339))
			case slog.LevelKey:
				if l, ok := a.Value.Any().(slog.Level); ok && l >= levelFatal {
					return slog.String("level", "fatal")
				}
				lvl := strings.ToLower(a.Value.String())
				if lvl == "warn" {
					lvl = "warning"
				}
				return slog.String("level", lvl)
			}
			return a
		},
	}))
}

func fatal(log *slog.Logger, msg string) { log.Log(context.Background(), levelFatal, msg) }
