package k3semu

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

// NewLogger logs to w in logrus's text shape, as k3s does under
// systemd: time=… level=info msg="…" (level=fatal before a fatal exit;
// logrus prints FATA[…] only on a terminal). Writes are serialised.
func NewLogger(w io.Writer) *slog.Logger {
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

// Fatal logs msg at logrus's fatal level; the caller exits 1.
func Fatal(log *slog.Logger, msg string) { log.Log(context.Background(), levelFatal, msg) }

// Usage is what `k3s` prints for --help or a missing or unknown command.
const Usage = `NAME:
   k3s - Kubernetes, but small and simple (openctl test stand-in)

USAGE:
   k3s [global options] command [command options] [arguments...]

COMMANDS:
   server   Run management server
   agent    Run node agent
   kubectl  Run kubectl
   token    Manage tokens (create, list, delete, generate, rotate)
   certificate rotate  Rotate the leaf certificates (k3s stopped)

GLOBAL OPTIONS:
   --version, -v  print the version
`
