package progress

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/openctl/openctl/errcode"
)

// Mode says how a [Renderer] shows progress.
type Mode string

// The modes.
const (
	// Auto is TTY when the writer is a terminal (and TERM is not "dumb"),
	// Plain otherwise.
	Auto Mode = "auto"
	// TTY redraws a live view with one line per resource.
	TTY Mode = "tty"
	// Plain writes one timestamped line per event, for logs and CI.
	Plain Mode = "plain"
	// Quiet writes nothing but the failures at the end.
	Quiet Mode = "quiet"
)

// Modes lists the modes, in the order help text shows them.
func Modes() []Mode { return []Mode{Auto, TTY, Plain, Quiet} }

// ParseMode reads a mode name, as given to "--progress". The empty string
// is [Auto]; case and surrounding spaces are ignored. An unknown name is
// an [errcode.Invalid] error that lists the modes.
func ParseMode(s string) (Mode, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return Auto, nil
	}
	for _, m := range Modes() {
		if string(m) == s {
			return m, nil
		}
	}
	return "", errcode.New(errcode.Invalid, fmt.Sprintf("progress: unknown mode %q: want one of auto, tty, plain, quiet", s))
}

// terminal returns w's file descriptor and whether it is a terminal.
func terminal(w io.Writer) (int, bool) {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return 0, false
	}
	fd := int(f.Fd())
	return fd, term.IsTerminal(fd)
}

// resolve turns Auto (or an unknown mode) into TTY or Plain for w.
func resolve(m Mode, isTerm bool) Mode {
	switch m {
	case TTY, Plain, Quiet:
		return m
	}
	if isTerm && os.Getenv("TERM") != "dumb" {
		return TTY
	}
	return Plain
}
