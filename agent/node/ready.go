package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/errcode"
)

// ReadyWatcher is an optional interface of a [System], found by type
// assertion. The upgrade's health gate calls WatchReady just before it
// restarts k3s, and then calls the returned function on each poll: it
// reports whether k3s has said, since WatchReady, that it is up and
// running. A System without it is trusted once the service is active.
//
// The returned function is called from one goroutine at a time.
type ReadyWatcher interface {
	WatchReady(ctx context.Context) (ready func(ctx context.Context) (bool, error), err error)
}

var _ ReadyWatcher = (*HostSystem)(nil)

// The lines k3s logs when it is ready: just before it sends systemd
// READY=1.
const (
	serverReadyLine = "k3s is up and running"
	agentReadyLine  = "k3s agent is up and running"
)

// maxLogLine is the longest line WatchReady's function holds over from
// one poll to the next; a longer one is cut (it is not a readiness line).
const maxLogLine = 64 << 10

// WatchReady implements [ReadyWatcher].
//
// With systemd it watches nothing: the k3s units install.sh writes are
// Type=notify and k3s sends READY=1 only once it is up and running, so a
// restart that returned and an active service already say so.
//
// With OpenRC, "rc-service k3s restart" returns once supervise-daemon has
// started k3s, and the service stays "started" while supervise-daemon
// respawns a k3s that keeps dying. So the function reads what k3s
// appended to its log, /var/log/<svc>.log, after WatchReady, and reports
// true once it holds the line k3s logs when it is ready: "k3s is up and
// running" for a server, "k3s agent is up and running" for an agent. A log
// file that shrank (rotated or truncated) is read from its start.
func (h *HostSystem) WatchReady(ctx context.Context) (func(context.Context) (bool, error), error) {
	if h.init == agent.Systemd {
		return func(context.Context) (bool, error) { return true, nil }, nil
	}
	role, err := h.Role(ctx)
	if err != nil {
		return nil, err
	}
	line := serverReadyLine
	switch role {
	case agent.RoleServer:
	case agent.RoleAgent:
		line = agentReadyLine
	default:
		return nil, fmt.Errorf("agent: no k3s or k3s-agent service is installed: %w", errcode.NotFound)
	}
	w := &logWatcher{path: h.path(filepath.Join("/var/log", role.ServiceName()+".log")), want: []byte(line)}
	fi, err := os.Stat(w.path)
	switch {
	case err == nil:
		w.pos = fi.Size()
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("agent: k3s log: %w", err)
	}
	return w.ready, nil
}

// logWatcher looks for a line in what is appended to a log file after pos.
type logWatcher struct {
	path  string
	want  []byte
	pos   int64  // how far the file has been read
	carry []byte // the start of a line not yet ended
	found bool
}

func (w *logWatcher) ready(ctx context.Context) (bool, error) {
	if w.found {
		return true, nil
	}
	f, err := os.Open(w.path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("agent: k3s log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("agent: k3s log: %w", err)
	}
	if fi.Size() < w.pos {
		w.pos, w.carry = 0, nil
	}
	r := &cancelableReader{ctx: ctx, r: io.NewSectionReader(f, w.pos, fi.Size()-w.pos)}
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		w.pos += int64(n)
		data := buf[:n]
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				w.carry = append(w.carry, data[:min(len(data), max(0, maxLogLine-len(w.carry)))]...)
				break
			}
			if bytes.Contains(append(w.carry, data[:i]...), w.want) {
				w.found = true
				return true, nil
			}
			w.carry, data = w.carry[:0], data[i+1:]
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("agent: k3s log: %w", err)
		}
	}
}
