package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/errcode"
)

// sysReply is what sysRunner answers for one command line.
type sysReply struct {
	out  string
	code int   // non-zero: an *ExitError with this status
	err  error // a failure to run at all
	errs string
}

// sysRunner is a fake Runner: it answers command lines ("systemctl
// is-active k3s") from a table and records every call.
type sysRunner struct {
	replies map[string]sysReply

	mu    sync.Mutex // guards calls
	calls []string
}

func (r *sysRunner) reply(name string, args []string) ([]byte, error) {
	line := strings.Join(append([]string{name}, args...), " ")
	r.mu.Lock()
	r.calls = append(r.calls, line)
	r.mu.Unlock()
	rep, ok := r.replies[line]
	if !ok {
		return nil, fmt.Errorf("sysRunner: unexpected command %q", line)
	}
	if rep.err != nil {
		return nil, rep.err
	}
	if rep.code != 0 {
		return []byte(rep.out), &ExitError{Cmd: line, Code: rep.code, Stderr: rep.errs}
	}
	return []byte(rep.out), nil
}

func (r *sysRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return r.reply(name, args)
}

func (r *sysRunner) Stream(ctx context.Context, w io.Writer, name string, args ...string) error {
	out, err := r.reply(name, args)
	if _, werr := w.Write(out); werr != nil {
		return werr
	}
	return err
}

func (r *sysRunner) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// sysWrite creates root/p (an absolute host path) with content.
func sysWrite(t *testing.T, root, p, content string, mode os.FileMode) {
	t.Helper()
	full := filepath.Join(root, p)
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(t, os.WriteFile(full, []byte(content), mode))
}

func sysMkdir(t *testing.T, root, p string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(root, p), 0o755))
}

// sysHost returns a HostSystem over a fresh temporary root prepared for
// init, with k3s installed in role (the unit file or init script present).
func sysHost(t *testing.T, init agent.InitSystem, role agent.Role, r *sysRunner) (*HostSystem, string) {
	t.Helper()
	root := t.TempDir()
	switch init {
	case agent.Systemd:
		sysMkdir(t, root, "/run/systemd/system")
		if role != agent.RoleNone {
			sysWrite(t, root, "/etc/systemd/system/"+role.ServiceName()+".service", "[Unit]\n", 0o644)
		}
	case agent.OpenRC:
		sysMkdir(t, root, "/run/openrc")
		if role != agent.RoleNone {
			sysWrite(t, root, "/etc/init.d/"+role.ServiceName(), "#!/sbin/openrc-run\n", 0o755)
		}
	}
	h, err := NewHostSystem(HostOptions{Root: root, Runner: r})
	require.NoError(t, err)
	require.Equal(t, init, h.Init())
	return h, root
}

func TestDetectInit(t *testing.T) {
	t.Setenv("PATH", "/usr/local/bin:/usr/bin:relative/bin")
	tests := []struct {
		name    string
		prepare func(t *testing.T, root string)
		want    agent.InitSystem
		wantErr error
	}{
		{"systemd", func(t *testing.T, root string) { sysMkdir(t, root, "/run/systemd/system") }, agent.Systemd, nil},
		{"systemd wins over openrc", func(t *testing.T, root string) {
			sysMkdir(t, root, "/run/systemd/system")
			sysMkdir(t, root, "/run/openrc")
		}, agent.Systemd, nil},
		{"systemd marker must be a directory", func(t *testing.T, root string) {
			sysWrite(t, root, "/run/systemd/system", "", 0o644)
		}, "", ErrNoInit},
		{"openrc run dir", func(t *testing.T, root string) { sysMkdir(t, root, "/run/openrc") }, agent.OpenRC, nil},
		{"rc-service on PATH", func(t *testing.T, root string) {
			sysWrite(t, root, "/usr/bin/rc-service", "#!/bin/sh\n", 0o755)
		}, agent.OpenRC, nil},
		{"rc-service in /sbin", func(t *testing.T, root string) {
			sysWrite(t, root, "/sbin/rc-service", "#!/bin/sh\n", 0o755)
		}, agent.OpenRC, nil},
		{"rc-service not executable", func(t *testing.T, root string) {
			sysWrite(t, root, "/sbin/rc-service", "", 0o644)
		}, "", ErrNoInit},
		{"rc-service in a relative PATH entry is ignored", func(t *testing.T, root string) {
			sysWrite(t, root, "/relative/bin/rc-service", "#!/bin/sh\n", 0o755)
		}, "", ErrNoInit},
		{"neither", func(t *testing.T, root string) {}, "", ErrNoInit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			tt.prepare(t, root)
			got, err := DetectInit(root)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				_, err = NewHostSystem(HostOptions{Root: root, Runner: &sysRunner{}})
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNewHostSystemOptions(t *testing.T) {
	root := t.TempDir() // no init markers: an explicit Init skips detection
	h, err := NewHostSystem(HostOptions{Root: root, Init: agent.OpenRC, Runner: &sysRunner{}})
	require.NoError(t, err)
	assert.Equal(t, agent.OpenRC, h.Init())
	assert.Equal(t, filepath.Join(root, "/usr/local/bin/k3s"), h.K3sBinary())

	h, err = NewHostSystem(HostOptions{Init: agent.Systemd, K3sBinary: "/opt/bin/k3s"})
	require.NoError(t, err)
	assert.Equal(t, "/opt/bin/k3s", h.K3sBinary())

	_, err = NewHostSystem(HostOptions{Init: "upstart"})
	require.ErrorIs(t, err, errcode.Invalid)
	_, err = NewHostSystem(HostOptions{Init: agent.Systemd, K3sBinary: "bin/k3s"})
	require.ErrorIs(t, err, errcode.Invalid)
}

func TestHostSystemRole(t *testing.T) {
	for _, init := range []agent.InitSystem{agent.Systemd, agent.OpenRC} {
		for _, role := range []agent.Role{agent.RoleServer, agent.RoleAgent, agent.RoleNone} {
			t.Run(fmt.Sprintf("%s/%s", init, role.ServiceName()), func(t *testing.T) {
				h, _ := sysHost(t, init, role, &sysRunner{})
				got, err := h.Role(t.Context())
				require.NoError(t, err)
				assert.Equal(t, role, got)
			})
		}
	}
	t.Run("server wins when both are installed", func(t *testing.T) {
		h, root := sysHost(t, agent.Systemd, agent.RoleAgent, &sysRunner{})
		sysWrite(t, root, "/lib/systemd/system/k3s.service", "", 0o644)
		got, err := h.Role(t.Context())
		require.NoError(t, err)
		assert.Equal(t, agent.RoleServer, got)
	})
	t.Run("an openrc host ignores systemd units", func(t *testing.T) {
		h, root := sysHost(t, agent.OpenRC, agent.RoleNone, &sysRunner{})
		sysWrite(t, root, "/etc/systemd/system/k3s.service", "", 0o644)
		got, err := h.Role(t.Context())
		require.NoError(t, err)
		assert.Equal(t, agent.RoleNone, got)
	})
	t.Run("read live, not cached", func(t *testing.T) {
		h, root := sysHost(t, agent.OpenRC, agent.RoleNone, &sysRunner{})
		got, err := h.Role(t.Context())
		require.NoError(t, err)
		require.Equal(t, agent.RoleNone, got)
		sysWrite(t, root, "/etc/init.d/k3s-agent", "", 0o755)
		got, err = h.Role(t.Context())
		require.NoError(t, err)
		assert.Equal(t, agent.RoleAgent, got)
	})
}

func TestHostSystemServiceStateSystemd(t *testing.T) {
	tests := []struct {
		reply   sysReply
		want    string
		wantErr bool
	}{
		{sysReply{out: "active\n"}, agent.StateActive, false},
		{sysReply{out: "reloading\n", code: 0}, agent.StateActive, false},
		{sysReply{out: "inactive\n", code: 3}, agent.StateInactive, false},
		{sysReply{out: "activating\n", code: 3}, agent.StateInactive, false},
		{sysReply{out: "deactivating\n", code: 3}, agent.StateInactive, false},
		{sysReply{out: "failed\n", code: 3}, agent.StateFailed, false},
		{sysReply{out: "something-new\n", code: 3}, agent.StateUnknown, false},
		{sysReply{code: 1, errs: "Failed to connect to bus"}, agent.StateUnknown, true},
		{sysReply{err: errors.New("exec: systemctl: not found")}, agent.StateUnknown, true},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSpace(tt.reply.out)+"/"+strconv.Itoa(tt.reply.code), func(t *testing.T) {
			r := &sysRunner{replies: map[string]sysReply{"systemctl is-active k3s-agent": tt.reply}}
			h, _ := sysHost(t, agent.Systemd, agent.RoleAgent, r)
			got, err := h.ServiceState(t.Context())
			assert.Equal(t, tt.want, got)
			if tt.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, []string{"systemctl is-active k3s-agent"}, r.Calls())
		})
	}
}

func TestHostSystemServiceStateOpenRC(t *testing.T) {
	tests := []struct {
		name    string
		reply   sysReply
		want    string
		wantErr bool
	}{
		{"started", sysReply{out: " * status: started\n"}, agent.StateActive, false},
		{"stopped", sysReply{out: " * status: stopped\n", code: 3}, agent.StateInactive, false},
		{"starting", sysReply{out: " * status: starting\n", code: 4}, agent.StateInactive, false},
		{"crashed on stderr", sysReply{code: 32, errs: " * status: crashed\n"}, agent.StateFailed, false},
		{"exit 0 silent", sysReply{}, agent.StateActive, false},
		{"exit 3 silent", sysReply{code: 3}, agent.StateInactive, false},
		{"exit 32 silent", sysReply{code: 32}, agent.StateFailed, false},
		{"odd status", sysReply{out: " * status: hibernating\n"}, agent.StateUnknown, false},
		{"odd exit", sysReply{code: 1, errs: "rc-service: service `k3s' does not exist"}, agent.StateUnknown, false},
		{"cannot run", sysReply{err: errors.New("exec: rc-service: not found")}, agent.StateUnknown, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &sysRunner{replies: map[string]sysReply{"rc-service k3s status": tt.reply}}
			h, _ := sysHost(t, agent.OpenRC, agent.RoleServer, r)
			got, err := h.ServiceState(t.Context())
			assert.Equal(t, tt.want, got)
			if tt.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
		})
	}
}

func TestHostSystemServiceStateNotInstalled(t *testing.T) {
	for _, init := range []agent.InitSystem{agent.Systemd, agent.OpenRC} {
		t.Run(string(init), func(t *testing.T) {
			r := &sysRunner{}
			h, _ := sysHost(t, init, agent.RoleNone, r)
			got, err := h.ServiceState(t.Context())
			require.NoError(t, err)
			assert.Equal(t, agent.StateUnknown, got)
			assert.Empty(t, r.Calls(), "nothing runs when k3s is not installed")
		})
	}
}

func TestHostSystemService(t *testing.T) {
	tests := []struct {
		init agent.InitSystem
		role agent.Role
		want map[agent.ServiceAction]string
	}{
		{agent.Systemd, agent.RoleServer, map[agent.ServiceAction]string{agent.Start: "systemctl start k3s", agent.Stop: "systemctl stop k3s", agent.Restart: "systemctl restart k3s"}},
		{agent.Systemd, agent.RoleAgent, map[agent.ServiceAction]string{agent.Restart: "systemctl restart k3s-agent"}},
		{agent.OpenRC, agent.RoleServer, map[agent.ServiceAction]string{agent.Start: "rc-service k3s start", agent.Stop: "rc-service k3s stop", agent.Restart: "rc-service k3s restart"}},
		{agent.OpenRC, agent.RoleAgent, map[agent.ServiceAction]string{agent.Stop: "rc-service k3s-agent stop"}},
	}
	for _, tt := range tests {
		for action, line := range tt.want {
			t.Run(line, func(t *testing.T) {
				r := &sysRunner{replies: map[string]sysReply{line: {}}}
				h, _ := sysHost(t, tt.init, tt.role, r)
				require.NoError(t, h.Service(t.Context(), action))
				assert.Equal(t, []string{line}, r.Calls())
			})
		}
	}
	t.Run("failure carries stderr", func(t *testing.T) {
		r := &sysRunner{replies: map[string]sysReply{"systemctl restart k3s": {code: 1, errs: "Job for k3s.service failed"}}}
		h, _ := sysHost(t, agent.Systemd, agent.RoleServer, r)
		err := h.Service(t.Context(), agent.Restart)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "Job for k3s.service failed")
		ee, ok := errors.AsType[*ExitError](err)
		require.True(t, ok)
		assert.Equal(t, 1, ee.Code)
	})
	t.Run("invalid action runs nothing", func(t *testing.T) {
		r := &sysRunner{}
		h, _ := sysHost(t, agent.Systemd, agent.RoleServer, r)
		for _, a := range []agent.ServiceAction{"", "enable", "restart; reboot", "status"} {
			require.ErrorIs(t, h.Service(t.Context(), a), errcode.Invalid, a)
		}
		assert.Empty(t, r.Calls())
	})
	t.Run("not installed", func(t *testing.T) {
		r := &sysRunner{}
		h, _ := sysHost(t, agent.OpenRC, agent.RoleNone, r)
		require.ErrorIs(t, h.Service(t.Context(), agent.Start), errcode.NotFound)
		assert.Empty(t, r.Calls())
	})
}

func TestHostSystemLogsSystemd(t *testing.T) {
	r := &sysRunner{replies: map[string]sysReply{
		"journalctl -u k3s -n 250 --no-pager -o cat": {out: "line 1\nline 2\n"},
	}}
	h, _ := sysHost(t, agent.Systemd, agent.RoleServer, r)
	var buf bytes.Buffer
	require.NoError(t, h.Logs(t.Context(), 250, &buf))
	assert.Equal(t, "line 1\nline 2\n", buf.String())

	require.ErrorIs(t, h.Logs(t.Context(), 0, &buf), errcode.Invalid)
	require.ErrorIs(t, h.Logs(t.Context(), -5, &buf), errcode.Invalid)
	assert.Len(t, r.Calls(), 1)
}

func TestHostSystemFollowLogsSystemd(t *testing.T) {
	r := &sysRunner{replies: map[string]sysReply{
		"journalctl -u k3s-agent -n 5 --no-pager -o cat -f": {out: "line 1\n"},
	}}
	h, _ := sysHost(t, agent.Systemd, agent.RoleAgent, r)
	var buf bytes.Buffer
	require.NoError(t, h.FollowLogs(t.Context(), 5, &buf))
	assert.Equal(t, "line 1\n", buf.String())
	require.ErrorIs(t, h.FollowLogs(t.Context(), 0, &buf), errcode.Invalid)
	assert.Len(t, r.Calls(), 1)
}

// sysLines returns "line 1\n" ... "line n\n".
func sysLines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestHostSystemLogsOpenRC(t *testing.T) {
	r := &sysRunner{}
	h, root := sysHost(t, agent.OpenRC, agent.RoleAgent, r)

	var buf bytes.Buffer
	require.ErrorIs(t, h.Logs(t.Context(), 10, &buf), errcode.NotFound, "no log file yet")

	sysWrite(t, root, "/var/log/k3s-agent.log", sysLines(1, 20), 0o644)
	require.NoError(t, h.Logs(t.Context(), 3, &buf))
	assert.Equal(t, sysLines(18, 20), buf.String())

	sysWrite(t, root, "/var/log/k3s.log", "server log\n", 0o644) // another role's log is not read
	buf.Reset()
	require.NoError(t, h.Logs(t.Context(), 1, &buf))
	assert.Equal(t, "line 20\n", buf.String())
	assert.Empty(t, r.Calls(), "OpenRC logs need no external program")
}

func TestTailLines(t *testing.T) {
	big := sysLines(1, 100000) // ~1.2 MB, many 64 KiB blocks
	tests := []struct {
		name    string
		content string
		n       int
		block   int
		want    string
	}{
		{"empty file", "", 10, tailBlock, ""},
		{"single newline", "\n", 1, tailBlock, "\n"},
		{"n bigger than the file", "a\nb\n", 10, tailBlock, "a\nb\n"},
		{"exactly n lines", "a\nb\nc\n", 3, tailBlock, "a\nb\nc\n"},
		{"no trailing newline", "a\nb\nc", 2, tailBlock, "b\nc\n"},
		{"no newline at all", "only", 5, tailBlock, "only\n"},
		{"blank lines count", "a\n\n\nb\n", 3, tailBlock, "\n\nb\n"},
		{"last line", "a\nb\nc\n", 1, tailBlock, "c\n"},
		{"tiny blocks", "alpha\nbeta\ngamma\ndelta\n", 2, 1, "gamma\ndelta\n"},
		{"block boundary on newline", "ab\ncd\nef\n", 2, 3, "cd\nef\n"},
		{"tiny blocks no trailing newline", "alpha\nbeta\ngamma", 2, 2, "beta\ngamma\n"},
		{"large file", big, 5000, tailBlock, sysLines(95001, 100000)},
		{"large file small blocks", big, 3, 7, sysLines(99998, 100000)},
		{"large file all lines", big, 200000, tailBlock, big},
		{"large file without trailing newline", strings.TrimSuffix(big, "\n"), 2, tailBlock, sysLines(99999, 100000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "k3s.log")
			require.NoError(t, os.WriteFile(p, []byte(tt.content), 0o644))
			f, err := os.Open(p)
			require.NoError(t, err)
			defer f.Close()
			var buf bytes.Buffer
			size, err := tailLines(t.Context(), &buf, f, tt.n, tt.block)
			require.NoError(t, err)
			assert.Equal(t, int64(len(tt.content)), size)
			assert.Equal(t, tt.want, buf.String())
		})
	}
}

func TestTailLinesCanceled(t *testing.T) {
	p := filepath.Join(t.TempDir(), "k3s.log")
	require.NoError(t, os.WriteFile(p, []byte(sysLines(1, 1000)), 0o644))
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = tailLines(ctx, io.Discard, f, 10, 16)
	require.ErrorIs(t, err, context.Canceled)
}

// TestTailLinesStreams checks that lines reach the writer while the file is
// still being copied: a writer that fails after the first write stops the
// copy early instead of after the whole tail was buffered.
func TestTailLinesStreams(t *testing.T) {
	p := filepath.Join(t.TempDir(), "k3s.log")
	require.NoError(t, os.WriteFile(p, []byte(sysLines(1, 200000)), 0o644))
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	w := &sysFailingWriter{}
	_, err = tailLines(t.Context(), w, f, 200000, tailBlock)
	require.ErrorIs(t, err, errSysWriter)
	assert.Equal(t, 2, w.writes, "one write accepted, the next refused, then the copy stops")
	assert.Less(t, w.bytes, 200000, "the first write is a chunk, not the whole tail")
}

var errSysWriter = errors.New("client went away")

type sysFailingWriter struct{ writes, bytes int }

func (w *sysFailingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes > 1 {
		return 0, errSysWriter
	}
	w.bytes += len(p)
	return len(p), nil
}

func TestHostSystemFacts(t *testing.T) {
	for _, init := range []agent.InitSystem{agent.Systemd, agent.OpenRC} {
		t.Run(string(init), func(t *testing.T) {
			h, root := sysHost(t, init, agent.RoleServer, &sysRunner{})
			sysWrite(t, root, "/proc/sys/kernel/osrelease", "6.8.0-45-generic\n", 0o444)
			sysWrite(t, root, "/etc/os-release", "NAME=\"Ubuntu\"\nPRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\nID=ubuntu\n", 0o644)
			got, err := h.Facts(t.Context())
			require.NoError(t, err)
			host, err := os.Hostname()
			require.NoError(t, err)
			assert.Equal(t, agent.Facts{
				Hostname: host,
				OS:       runtime.GOOS,
				Arch:     runtime.GOARCH,
				Kernel:   "6.8.0-45-generic",
				Distro:   "Ubuntu 24.04.1 LTS",
				Init:     init,
			}, got)
		})
	}
	t.Run("fallbacks", func(t *testing.T) {
		h, root := sysHost(t, agent.OpenRC, agent.RoleNone, &sysRunner{})
		got, err := h.Facts(t.Context())
		require.NoError(t, err)
		assert.Empty(t, got.Kernel, "missing osrelease is not an error")
		assert.Empty(t, got.Distro, "missing os-release is not an error")

		sysWrite(t, root, "/usr/lib/os-release", "NAME='Alpine Linux'\nVERSION_ID=3.20.3\n", 0o644)
		got, err = h.Facts(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "Alpine Linux", got.Distro, "/usr/lib/os-release, NAME without PRETTY_NAME")

		sysWrite(t, root, "/etc/os-release", "ID=custom\n", 0o644)
		got, err = h.Facts(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "Linux", got.Distro, "/etc/os-release wins; the os-release(5) default")
	})
	t.Run("unreadable kernel file is an error", func(t *testing.T) {
		h, root := sysHost(t, agent.Systemd, agent.RoleNone, &sysRunner{})
		sysMkdir(t, root, "/proc/sys/kernel/osrelease") // a directory cannot be read as a file
		_, err := h.Facts(t.Context())
		require.Error(t, err)
	})
}

func TestParseOSRelease(t *testing.T) {
	in := `# comment
NAME="Debian GNU/Linux"
  PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
VERSION_ID='12'
ID=debian
ESCAPED="say \"hi\" \$HOME \` + "`" + `x\` + "`" + ` back\\slash \n"
SINGLE='a "b" \n $c'
MIXED=one' two '"three"\ four
EMPTY=
UNTERMINATED="runs to end
not an assignment
1BAD=x
BAD-NAME=x
ID=overridden
`
	got := parseOSRelease([]byte(in))
	assert.Equal(t, map[string]string{
		"NAME":         "Debian GNU/Linux",
		"PRETTY_NAME":  "Debian GNU/Linux 12 (bookworm)",
		"VERSION_ID":   "12",
		"ID":           "overridden",
		"ESCAPED":      "say \"hi\" $HOME `x` back\\slash \\n",
		"SINGLE":       `a "b" \n $c`,
		"MIXED":        "one two three four",
		"EMPTY":        "",
		"UNTERMINATED": "runs to end",
	}, got)
}

func FuzzParseOSRelease(f *testing.F) {
	f.Add([]byte("PRETTY_NAME=\"Ubuntu 24.04 LTS\"\n"))
	f.Add([]byte("A='x'\"y\"\\z\nB=\"\\"))
	f.Add([]byte("X=\"unterminated\\\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		kv := parseOSRelease(b)
		for k := range kv {
			require.True(t, validEnvName(k), k)
		}
	})
}

// FuzzUnquoteShell checks that single-quoting any value that has no single
// quote or newline in it round-trips.
func FuzzUnquoteShell(f *testing.F) {
	f.Add("Ubuntu 24.04 LTS")
	f.Add(`a "b" $c \d`)
	f.Fuzz(func(t *testing.T, v string) {
		_ = unquoteShell(v)
		if strings.ContainsAny(v, "'\n\r") {
			return
		}
		got := parseOSRelease([]byte("K='" + v + "'\n"))
		require.Equal(t, strings.TrimSpace(v), strings.TrimSpace(got["K"]))
	})
}

func TestParseK3sVersion(t *testing.T) {
	tests := []struct {
		out     string
		want    string
		wantErr bool
	}{
		{"k3s version v1.30.2+k3s1 (abcdef12)\ngo version go1.22.4\n", "v1.30.2+k3s1", false},
		{"k3s version v1.31.0+k3s12 (aaaa)", "v1.31.0+k3s12", false},
		{"k3s version v1.29.10+k3s2\n", "v1.29.10+k3s2", false},
		{"  k3s version v1.30.2+k3s1 (abcdef12)\r\n", "v1.30.2+k3s1", false},
		{"k3s version v1.31.0-rc1+k3s1 (deadbeef)\n", "v1.31.0-rc1+k3s1", false},
		{"", "", true},
		{"go version go1.22.4\nk3s version v1.30.2+k3s1\n", "", true},
		{"k3s version 1.30.2+k3s1 (abc)", "", true},
		{"k3s version v1.30+k3s1 (abc)", "", true},
		{"k3s version v1.30.2 (abc)", "", true},
		{"k3s version v1.30.2+k3s1;rm -rf / (abc)", "", true},
		{"k3s version v1.30.2+k3s1x", "", true},
		{"K3S VERSION v1.30.2+k3s1", "", true},
		{"bash: k3s: command not found", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.out, func(t *testing.T) {
			got, err := parseK3sVersion([]byte(tt.out))
			if tt.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "unrecognised k3s --version output")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func FuzzParseK3sVersion(f *testing.F) {
	f.Add([]byte("k3s version v1.30.2+k3s1 (abcdef12)\n"))
	f.Add([]byte("k3s version v1.31.0-rc1+k3s1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseK3sVersion(b)
		if err != nil {
			return
		}
		require.Regexp(t, `^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?\+k3s[0-9]+$`, v)
	})
}

func TestHostSystemK3sVersion(t *testing.T) {
	r := &sysRunner{replies: map[string]sysReply{
		"/usr/local/bin/k3s --version":     {out: "k3s version v1.30.2+k3s1 (abcdef12)\ngo version go1.22.4\n"},
		"/usr/local/bin/k3s.new --version": {out: "Segmentation fault\n", code: 139},
		"/tmp/garbage --version":           {out: "hello\n"},
	}}
	h, err := NewHostSystem(HostOptions{Init: agent.Systemd, Runner: r})
	require.NoError(t, err)
	require.Equal(t, "/usr/local/bin/k3s", h.K3sBinary())

	v, err := h.K3sVersion(t.Context(), h.K3sBinary())
	require.NoError(t, err)
	assert.Equal(t, "v1.30.2+k3s1", v)

	_, err = h.K3sVersion(t.Context(), "/usr/local/bin/k3s.new")
	ee, ok := errors.AsType[*ExitError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, 139, ee.Code)

	_, err = h.K3sVersion(t.Context(), "/tmp/garbage")
	require.Error(t, err)
}

// TestHostSystemProbeTimeout checks that a hung probe is bounded even when
// the caller's context has no deadline.
func TestHostSystemProbeTimeout(t *testing.T) {
	h, err := NewHostSystem(HostOptions{Init: agent.Systemd, Runner: sysHangRunner{}, ProbeTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	start := time.Now()
	_, err = h.K3sVersion(t.Context(), "/usr/local/bin/k3s")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)
}

type sysHangRunner struct{}

func (sysHangRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (sysHangRunner) Stream(ctx context.Context, w io.Writer, name string, args ...string) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestExecRunner runs real programs (sh, from the test only) to check exit
// statuses, stderr capture and streaming.
func TestExecRunner(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	ctx := t.Context()
	var r ExecRunner

	out, err := r.Run(ctx, "/bin/sh", "-c", `echo "$LC_ALL"; echo out; echo oops >&2; exit 3`)
	assert.Equal(t, "C\nout\n", string(out))
	ee, ok := errors.AsType[*ExitError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, 3, ee.Code)
	assert.Equal(t, "oops\n", ee.Stderr)
	assert.Contains(t, ee.Error(), "exit status 3: oops")

	// A program killed by a signal says which, not "exit status -1".
	_, err = r.Run(ctx, "/bin/sh", "-c", `kill -SEGV $$`)
	ee, ok = errors.AsType[*ExitError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, -1, ee.Code)
	assert.Equal(t, "segmentation fault", ee.Signal)
	assert.Equal(t, "agent: /bin/sh -c kill -SEGV $$: killed by signal: segmentation fault", ee.Error())

	out, err = r.Run(ctx, "/bin/sh", "-c", "head -c 3000000 /dev/zero")
	require.NoError(t, err)
	assert.Len(t, out, maxRunOutput, "output is capped")

	_, err = r.Run(ctx, "/nonexistent/program")
	require.Error(t, err)
	_, isExit := errors.AsType[*ExitError](err)
	assert.False(t, isExit, "a program that cannot start is not an exit status")

	var buf bytes.Buffer
	require.NoError(t, r.Stream(ctx, &buf, "/bin/sh", "-c", "printf 'a\\nb\\n'"))
	assert.Equal(t, "a\nb\n", buf.String())

	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = r.Stream(tctx, io.Discard, "/bin/sh", "-c", "exec sleep 30")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 10*time.Second)
}
