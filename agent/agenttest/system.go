package agenttest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/node"
)

// DefaultVersion is the k3s version a new System has installed.
const DefaultVersion = "v1.30.4+k3s1"

// FakeBinary returns the contents of a fake k3s binary of version: a
// shell script whose --version output has the shape of the real one
// ("k3s version v1.30.4+k3s1 (fake)"), so it can also be run.
func FakeBinary(version string) []byte {
	return []byte("#!/bin/sh\necho 'k3s version " + version + " (fake)'\necho 'go version go1.22.0'\n")
}

// System is a fake node.System. Its k3s binary is a real file in a
// temporary directory (so an upgrade's swap can be observed), its version
// is read back from that file, and its service is a small state machine:
// Start and Restart make it active unless the installed version was
// marked broken (then it is failed), Stop makes it inactive.
//
// A System is safe for concurrent use.
type System struct {
	bin string

	mu         sync.Mutex // guards the fields below
	facts      agent.Facts
	role       agent.Role
	state      string
	lines      []string
	broken     map[string]bool
	silent     map[string]bool
	serviceErr error
	logsErr    error
	actions    []agent.ServiceAction
}

var (
	_ node.System       = (*System)(nil)
	_ node.ReadyWatcher = (*System)(nil)
)

// NewSystem returns a fake host: a k3s server of DefaultVersion, active,
// on "node-1" (linux/amd64, systemd), with a binary in a temporary
// directory of tb and a few log lines.
func NewSystem(tb testing.TB) *System {
	tb.Helper()
	s := &System{
		bin: filepath.Join(tb.TempDir(), "k3s"),
		facts: agent.Facts{
			Hostname: "node-1", OS: "linux", Arch: "amd64",
			Kernel: "6.1.0-fake", Distro: "Fake Linux 1.0", Init: agent.Systemd,
		},
		role:   agent.RoleServer,
		state:  agent.StateActive,
		lines:  []string{"k3s: starting", "k3s: running"},
		broken: map[string]bool{},
		silent: map[string]bool{},
	}
	if err := s.Install(DefaultVersion); err != nil {
		tb.Fatal(err)
	}
	return s
}

// Install writes a fake k3s binary of version at the binary path, as if
// k3s had been installed by hand. It does not touch the service.
func (s *System) Install(version string) error {
	return os.WriteFile(s.bin, FakeBinary(version), 0o755)
}

// InstalledVersion reads the version of the binary at the binary path
// ("" if it cannot be read).
func (s *System) InstalledVersion() string {
	v, _ := readVersion(s.bin)
	return v
}

// SetFacts replaces the host facts.
func (s *System) SetFacts(f agent.Facts) { s.mu.Lock(); s.facts = f; s.mu.Unlock() }

// SetArch changes the architecture reported in the facts.
func (s *System) SetArch(arch string) { s.mu.Lock(); s.facts.Arch = arch; s.mu.Unlock() }

// SetRole sets the installed role (agent.RoleNone: k3s not installed).
func (s *System) SetRole(r agent.Role) { s.mu.Lock(); s.role = r; s.mu.Unlock() }

// SetState sets the service state.
func (s *System) SetState(st string) { s.mu.Lock(); s.state = st; s.mu.Unlock() }

// SetLogs replaces the service log.
func (s *System) SetLogs(lines []string) { s.mu.Lock(); s.lines = slices.Clone(lines); s.mu.Unlock() }

// Break marks version as broken: started or restarted with that version
// installed, the service fails, so an upgrade to it fails the health gate.
func (s *System) Break(version string) { s.mu.Lock(); s.broken[version] = true; s.mu.Unlock() }

// NeverReady marks version as one that never reports it is up and
// running: started with that version installed, the service is active
// (as OpenRC reports a k3s that supervise-daemon keeps respawning) but
// the function WatchReady returns reports false.
func (s *System) NeverReady(version string) { s.mu.Lock(); s.silent[version] = true; s.mu.Unlock() }

// FailService makes every service action fail with err (nil: succeed).
func (s *System) FailService(err error) { s.mu.Lock(); s.serviceErr = err; s.mu.Unlock() }

// FailLogs makes Logs fail with err after writing the log (nil: succeed).
func (s *System) FailLogs(err error) { s.mu.Lock(); s.logsErr = err; s.mu.Unlock() }

// Actions returns the service actions run so far, in order.
func (s *System) Actions() []agent.ServiceAction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.actions)
}

// Facts returns the host facts.
func (s *System) Facts(ctx context.Context) (agent.Facts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.facts, ctx.Err()
}

// Role returns the installed role.
func (s *System) Role(ctx context.Context) (agent.Role, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.role, ctx.Err()
}

// ServiceState returns the service state.
func (s *System) ServiceState(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, ctx.Err()
}

// Service runs action on the fake service.
func (s *System) Service(ctx context.Context, action agent.ServiceAction) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	v := s.InstalledVersion()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.actions = append(s.actions, action)
	if s.serviceErr != nil {
		return s.serviceErr
	}
	switch action {
	case agent.Start, agent.Restart:
		if s.broken[v] || v == "" {
			s.state = agent.StateFailed
		} else {
			s.state = agent.StateActive
		}
	case agent.Stop:
		s.state = agent.StateInactive
	default:
		return fmt.Errorf("agenttest: unknown action %q", action)
	}
	return nil
}

// Logs writes the last n log lines to w, one Write per line.
func (s *System) Logs(ctx context.Context, n int, w io.Writer) error {
	s.mu.Lock()
	lines := s.lines[max(0, len(s.lines)-n):]
	lines = slices.Clone(lines)
	logsErr := s.logsErr
	s.mu.Unlock()
	for _, l := range lines {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := io.WriteString(w, l+"\n"); err != nil {
			return err
		}
	}
	return logsErr
}

// FollowLogs writes the last n log lines like Logs, then each line added
// later (AppendLog), until ctx ends.
func (s *System) FollowLogs(ctx context.Context, n int, w io.Writer) error {
	s.mu.Lock()
	next := max(0, len(s.lines)-n)
	s.mu.Unlock()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		lines := slices.Clone(s.lines[min(next, len(s.lines)):])
		logsErr := s.logsErr
		s.mu.Unlock()
		for _, l := range lines {
			if _, err := io.WriteString(w, l+"\n"); err != nil {
				return err
			}
		}
		next += len(lines)
		if logsErr != nil {
			return logsErr
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// AppendLog adds a line to the log, as k3s logging it.
func (s *System) AppendLog(line string) { s.mu.Lock(); s.lines = append(s.lines, line); s.mu.Unlock() }

// WatchReady implements node.ReadyWatcher: the function reports whether
// the installed version is ready, which it is unless marked NeverReady
// or the service is not active.
func (s *System) WatchReady(ctx context.Context) (func(context.Context) (bool, error), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return func(ctx context.Context) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		v := s.InstalledVersion()
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.state == agent.StateActive && !s.silent[v], nil
	}, nil
}

// K3sBinary returns the path of the fake binary.
func (s *System) K3sBinary() string { return s.bin }

// K3sVersion reads the version out of the fake binary at path.
func (s *System) K3sVersion(ctx context.Context, path string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return readVersion(path)
}

func readVersion(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("agenttest: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.Trim(strings.TrimPrefix(sc.Text(), "echo "), "'")
		if v, ok := strings.CutPrefix(line, "k3s version "); ok {
			if f := strings.Fields(v); len(f) > 0 {
				return f[0], nil
			}
		}
	}
	return "", errors.New("agenttest: " + path + " is not a fake k3s binary")
}
