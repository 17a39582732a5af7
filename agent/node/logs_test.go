package node_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/agenttest"
	"github.com/openctl/openctl/agent/node"
	"github.com/openctl/openctl/errcode"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLogsLinesOutOfRange(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	for _, q := range []string{"lines=0", "lines=5001", "lines=-1", "lines=abc", "lines=", "lines=%2B5", "lines=1e3",
		"lines=99999999999999999999", "lines=1&lines=2", "lines=1;x", "other=1", "lines=%zz"} {
		t.Run(q, func(t *testing.T) {
			_, ae, _ := call(t, env, http.MethodGet, "/v1/logs/k3s?"+q, "")
			assert.Equal(t, http.StatusBadRequest, ae.Status)
			assert.Equal(t, string(errcode.Invalid), ae.Code)
		})
	}
	for _, n := range []int{-1, 5001} {
		err := env.Client.Logs(t.Context(), n, io.Discard)
		assert.True(t, errcode.Is(err, errcode.Invalid), "client checks %d: %v", n, err)
	}
}

func numbered(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %05d: k3s did something", i+1)
	}
	return lines
}

func TestLogsFiveThousandLinesWhole(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	all := numbered(6000)
	env.System.SetLogs(all)
	var buf bytes.Buffer
	require.NoError(t, env.Client.Logs(t.Context(), 5000, &buf))
	want := strings.Join(all[1000:], "\n") + "\n"
	require.Equal(t, len(want), buf.Len())
	require.Equal(t, want, buf.String(), "whole and in order")

	buf.Reset()
	require.NoError(t, env.Client.Logs(t.Context(), 0, &buf))
	assert.Equal(t, agent.DefaultLogLines, strings.Count(buf.String(), "\n"), "default")
	assert.True(t, strings.HasPrefix(buf.String(), all[5900]))

	resp, _, body := call(t, env, http.MethodGet, "/v1/logs/k3s?lines=3", "")
	assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, strings.Join(all[5997:], "\n")+"\n", string(body))
}

// gatedLogs writes one line, then waits until the test has read it before
// writing the rest: the first line can only arrive if the server streams.
type gatedLogs struct {
	*agenttest.System
	gate chan struct{}
}

func (g gatedLogs) Logs(ctx context.Context, n int, w io.Writer) error {
	if _, err := io.WriteString(w, "first\n"); err != nil {
		return err
	}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
		return errors.New("first line never read: the response is not streamed")
	}
	_, err := io.WriteString(w, "second\n")
	return err
}

func TestLogsStreamed(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	cfg := env.ServerConfig()
	gate := make(chan struct{})
	cfg.System = gatedLogs{System: env.System, gate: gate}
	_, addr := agenttest.ServeOn(t, "127.0.0.1:0", cfg)
	c := env.NewClient(t, func(c *agent.ClientConfig) { c.Address = addr })

	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- c.Logs(t.Context(), 10, pw); pw.Close() }()
	first := make([]byte, len("first\n"))
	_, err := io.ReadFull(pr, first)
	require.NoError(t, err)
	assert.Equal(t, "first\n", string(first))
	close(gate)
	rest, err := io.ReadAll(pr)
	require.NoError(t, err)
	assert.Equal(t, "second\n", string(rest))
	require.NoError(t, <-done)
}

func TestLogsFailure(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	// Before anything was written: an ordinary error response.
	env.System.SetLogs(nil)
	env.System.FailLogs(errcode.New(errcode.Transient, "journalctl: busy"))
	err := env.Client.Logs(t.Context(), 10, io.Discard)
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Transient), "%v", err)

	// After the stream started: the Openctl-Error trailer.
	env.System.SetLogs(numbered(20))
	env.System.FailLogs(errors.New("journalctl: killed"))
	var buf bytes.Buffer
	err = env.Client.Logs(t.Context(), 10, &buf)
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Internal), "%v", err)
	assert.Contains(t, err.Error(), "journalctl: killed")
	assert.Equal(t, 10, strings.Count(buf.String(), "\n"), "the lines that were sent are kept")
}

// endlessJournal is a Runner whose journalctl never ends on its own: it
// writes numbered lines until its context is done or a write fails, then
// reports why on stopped.
type endlessJournal struct {
	mu      sync.Mutex // guards args
	args    []string
	stopped chan error
}

func (j *endlessJournal) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return nil, fmt.Errorf("unexpected %s %v", name, args)
}

func (j *endlessJournal) Stream(ctx context.Context, w io.Writer, name string, args ...string) error {
	j.mu.Lock()
	j.args = append([]string{name}, args...)
	j.mu.Unlock()
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			j.stopped <- err
			return err
		}
		if _, err := fmt.Fprintf(w, "line %d\n", i); err != nil {
			j.stopped <- err
			return err
		}
	}
}

// hostWithK3s is a HostSystem on systemd, with a k3s server unit, over
// runner.
func hostWithK3s(t *testing.T, runner node.Runner) *node.HostSystem {
	t.Helper()
	root := t.TempDir()
	unit := filepath.Join(root, "etc/systemd/system/k3s.service")
	require.NoError(t, os.MkdirAll(filepath.Dir(unit), 0o755))
	require.NoError(t, os.WriteFile(unit, []byte("[Service]\n"), 0o644))
	h, err := node.NewHostSystem(node.HostOptions{Root: root, Init: agent.Systemd, Runner: runner})
	require.NoError(t, err)
	return h
}

// cancelAfter cancels its context once it has received n bytes, as a
// controller whose user pressed ^C mid-stream.
type cancelAfter struct {
	n      int
	got    int
	cancel context.CancelFunc
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	c.got += len(p)
	if c.got >= c.n {
		c.cancel()
	}
	return len(p), nil
}

// A journald stream the client abandons mid-way stops on the node (the
// journalctl process is not left writing into a dead connection), and the
// request still leaves its audit line.
func TestJournalStreamCanceledByClient(t *testing.T) {
	log, buf := agenttest.NewLogger(-8)
	env := agenttest.Start(t, agenttest.Options{})
	j := &endlessJournal{stopped: make(chan error, 1)}
	cfg := env.ServerConfig()
	cfg.System = hostWithK3s(t, j)
	cfg.Logger = log
	_, addr := agenttest.ServeOn(t, "127.0.0.1:0", cfg)
	c := env.NewClient(t, func(c *agent.ClientConfig) { c.Address = addr })

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	err := c.Logs(ctx, agent.MaxLogLines, &cancelAfter{n: 64 << 10, cancel: cancel})
	require.Error(t, err)
	select {
	case why := <-j.stopped:
		t.Logf("journal stream stopped: %v", why)
	case <-time.After(10 * time.Second):
		t.Fatal("the journal stream kept running after the client went away")
	}
	j.mu.Lock()
	assert.Equal(t, []string{"journalctl", "-u", "k3s", "-n", "5000", "--no-pager", "-o", "cat"}, j.args)
	j.mu.Unlock()
	require.Eventually(t, func() bool { return len(buf.WithMsg(t, "agent: request")) == 1 }, 5*time.Second, 10*time.Millisecond)
	line := buf.WithMsg(t, "agent: request")[0]
	assert.Equal(t, "/v1/logs/k3s", line["path"])
	assert.EqualValues(t, 5000, line["lines"])
	t.Logf("audit line: %v", line)
	assert.NotEqual(t, "ok", line["outcome"], "an abandoned stream is not logged as a success")
}

// Log lines are passed through byte for byte: lines that start with "+",
// "-", white space or are empty, CRLF endings, and exactly MaxLogLines
// lines.
func TestLogsOddLinesWhole(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	odd := []string{"+k3s flag", " leading space", "\tleading tab", "", "-dash", "trailing space ", "crlf\r", "  ", "+", "é ünïcode ✓", "100%s %d"}
	all := make([]string, 0, agent.MaxLogLines+10)
	for i := 0; len(all) < agent.MaxLogLines+10; i++ {
		all = append(all, odd[i%len(odd)])
	}
	env.System.SetLogs(all)
	var got bytes.Buffer
	require.NoError(t, env.Client.Logs(t.Context(), agent.MaxLogLines, &got))
	want := strings.Join(all[10:], "\n") + "\n"
	require.Equal(t, want, got.String())
}

// The OpenRC log file path: the last MaxLogLines lines of a file with odd
// lines (empty, white space, "+", CRLF) and no final newline, across
// several of tailLines' 64 KiB blocks, arrive whole and in order.
func TestOpenRCLogFileOddLines(t *testing.T) {
	root := t.TempDir()
	for p, content := range map[string]string{"etc/init.d/k3s": "#!/sbin/openrc-run\n", "run/openrc/softlevel": ""} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, p), []byte(content), 0o755))
	}
	odd := []string{"", "+", " +x", "\t", "crlf\r", strings.Repeat("long ", 40)}
	var lines []string
	for i := range 7000 {
		lines = append(lines, fmt.Sprintf("%s%d", odd[i%len(odd)], i))
		if i%13 == 0 {
			lines = append(lines, "")
		}
	}
	file := strings.Join(lines, "\n") // no final newline
	require.Greater(t, len(file), 3*(64<<10))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "var/log"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "var/log/k3s.log"), []byte(file), 0o644))
	h, err := node.NewHostSystem(node.HostOptions{Root: root, Runner: &endlessJournal{stopped: make(chan error, 1)}})
	require.NoError(t, err)
	require.Equal(t, agent.OpenRC, h.Init())

	cfgEnv := agenttest.Start(t, agenttest.Options{})
	cfg := cfgEnv.ServerConfig()
	cfg.System = h
	_, addr := agenttest.ServeOn(t, "127.0.0.1:0", cfg)
	c := cfgEnv.NewClient(t, func(c *agent.ClientConfig) { c.Address = addr })
	for _, n := range []int{1, 2, agent.MaxLogLines} {
		var got bytes.Buffer
		require.NoError(t, c.Logs(t.Context(), n, &got))
		want := strings.Join(lines[len(lines)-n:], "\n") + "\n"
		require.Equal(t, want, got.String(), "n=%d", n)
	}
}

// The lines parameter takes ASCII digits only: Unicode digits, a sign
// ("+" in a query is a space) and white space are refused; 5000 exactly
// is accepted.
func TestLogsLinesParameter(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	env.System.SetLogs(make([]string, agent.MaxLogLines+1))
	for _, q := range []string{"lines=５", "lines=%EF%BC%95", "lines=١٠٠", "lines=+5", "lines=%2B5", "lines=%205",
		"lines=5%20", "lines=5%0A", "lines=05000", "lines=5000.0", "lines=0x10", "LINES=5", "lines=-0"} {
		_, ae, _ := call(t, env, "GET", "/v1/logs/k3s?"+q, "")
		assert.Equal(t, 400, ae.Status, q)
	}
	resp, _, body := call(t, env, "GET", "/v1/logs/k3s?lines=5000", "")
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, agent.MaxLogLines, strings.Count(string(body), "\n"))
}

// realJournal stands a real, endless process in for journalctl through
// ExecRunner, and reports when Stream returns (the process is gone).
type realJournal struct {
	node.ExecRunner
	done chan error
}

func (r realJournal) Stream(ctx context.Context, w io.Writer, name string, args ...string) error {
	err := r.ExecRunner.Stream(ctx, w, "/bin/sh", "-c", "while :; do echo journal line; done")
	r.done <- err
	return err
}

// The same with a real process: when the client abandons the stream, the
// process producing it is killed rather than left running.
func TestJournalProcessKilledWhenClientCancels(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	env := agenttest.Start(t, agenttest.Options{})
	j := realJournal{done: make(chan error, 1)}
	cfg := env.ServerConfig()
	cfg.System = hostWithK3s(t, j)
	_, addr := agenttest.ServeOn(t, "127.0.0.1:0", cfg)
	c := env.NewClient(t, func(c *agent.ClientConfig) { c.Address = addr })

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	require.Error(t, c.Logs(ctx, 10, &cancelAfter{n: 16 << 10, cancel: cancel}))
	select {
	case err := <-j.done:
		assert.Error(t, err, "the process was killed, it did not exit by itself")
	case <-time.After(10 * time.Second):
		t.Fatal("the log process kept running after the client went away")
	}
}

// slowLogs writes a line, waits past the server's write timeout, and
// writes another. The pause is the behaviour under test (a stream that
// outlasts the write timeout), not a synchronisation.
type slowLogs struct {
	*agenttest.System
	pause time.Duration
}

func (s slowLogs) Logs(ctx context.Context, n int, w io.Writer) error {
	if _, err := io.WriteString(w, "first\n"); err != nil {
		return err
	}
	select {
	case <-time.After(s.pause):
	case <-ctx.Done():
		return ctx.Err()
	}
	_, err := io.WriteString(w, "second\n")
	return err
}

// A log stream that outlasts the server's write timeout arrives whole.
func TestLogsOutlastWriteTimeout(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	const timeout = 150 * time.Millisecond
	cfg := env.ServerConfig()
	cfg.System = slowLogs{System: env.System, pause: 3 * timeout}
	addr := serveShort(t, cfg, timeout)
	c := env.NewClient(t, func(c *agent.ClientConfig) { c.Address = addr })
	var sb strings.Builder
	require.NoError(t, c.Logs(t.Context(), 10, &sb))
	assert.Equal(t, "first\nsecond\n", sb.String())
}
