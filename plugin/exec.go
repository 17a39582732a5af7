package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/openctl/openctl/errcode"
)

// DefaultMaxResponse bounds a plugin's standard output.
const DefaultMaxResponse = 16 << 20

// DefaultTimeout bounds one call of a plugin; DefaultCapabilitiesTimeout
// bounds --capabilities.
const (
	DefaultTimeout             = 5 * time.Minute
	DefaultCapabilitiesTimeout = 10 * time.Second
)

// stderrTail is how much of a plugin's standard error is kept, its end.
const stderrTail = 4 << 10

// ErrTooLarge is matched by the error for a response larger than the
// limit.
var ErrTooLarge = errors.New("plugin: response too large")

// result is what one run of a plugin produced.
type result struct {
	stdout []byte
	stderr string // the tail
	err    error  // from Wait: an *exec.ExitError, or nil
}

// run runs path with args, stdin as its input, within timeout (0: none),
// and returns its output. Cancelling ctx or the timeout kills the
// process group. A start failure and a cancellation are errors; an exit
// status is in result.err.
func run(ctx context.Context, path string, args []string, stdin []byte, timeout time.Duration, maxOut int64) (*result, error) {
	cctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeoutCause(ctx, timeout, fmt.Errorf("plugin %s: no answer within %s: %w", path, timeout, context.DeadlineExceeded))
		defer cancel()
	}
	cmd := exec.CommandContext(cctx, path, args...)
	setGroup(cmd)
	cmd.WaitDelay = 2 * time.Second
	cmd.Stdin = bytes.NewReader(stdin)
	out := &limitBuffer{max: maxOut}
	tail := &tailBuffer{max: stderrTail}
	cmd.Stdout, cmd.Stderr = out, tail
	err := cmd.Run()
	res := &result{stdout: out.buf.Bytes(), stderr: tail.String()}
	switch {
	case out.over:
		return res, fmt.Errorf("%w: more than %d bytes on standard output", ErrTooLarge, maxOut)
	case cctx.Err() != nil:
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, errcode.Wrap(errcode.Internal, "plugin "+path, context.Cause(cctx))
	}
	var exit *exec.ExitError
	switch {
	case err == nil, errors.As(err, &exit):
		res.err = err
		return res, nil
	}
	return res, err
}

// limitBuffer keeps up to max bytes and fails writes beyond them.
type limitBuffer struct {
	buf  bytes.Buffer
	max  int64
	over bool
}

func (b *limitBuffer) Write(p []byte) (int, error) {
	if int64(b.buf.Len()+len(p)) > b.max {
		b.over = true
		return 0, ErrTooLarge
	}
	return b.buf.Write(p)
}

// tailBuffer keeps the last max bytes written to it. It is safe for
// concurrent use (mu guards buf).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = b.buf[len(b.buf)-b.max:]
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(string(b.buf))
}

var _ io.Writer = (*limitBuffer)(nil)
