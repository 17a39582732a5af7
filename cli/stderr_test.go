package cli

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/progress"
)

// TestStderrThroughLiveView: while apply or delete shows its live view,
// what goes to standard error — the engine's log lines, the Ctrl-C notice
// — is written above the view (the live lines erased, then drawn again
// below it), not across it; afterwards it goes straight through again.
func TestStderrThroughLiveView(t *testing.T) {
	var term bytes.Buffer // stdout and stderr on one terminal
	stderr := newSwitchWriter(&term)
	assert.Same(t, stderr, newSwitchWriter(stderr), "main's writer is reused by run")
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))

	pr := progress.New(&term, progress.TTY, progress.WithInterval(0), progress.WithWidth(80))
	restore := stderr.through(pr.Interleave)
	pr.Start("apply", []manifest.ID{{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: "web-01"}})
	pr.Refresh()
	n := term.Len()
	log.Warn("transient error; retrying")
	assert.Equal(t, "\x1b[1A\r\x1b[J"+
		"level=WARN msg=\"transient error; retrying\"\n"+
		"\r\x1b[2K· virtualmachine/web-01          pending\n", term.String()[n:])
	pr.Close()
	restore()

	n = term.Len()
	log.Warn("after")
	assert.Equal(t, "level=WARN msg=after\n", term.String()[n:])
}
