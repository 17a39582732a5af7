package node_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/agenttest"
	"github.com/openctl/openctl/agent/node"
)

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
func TestReviewJournalStreamCanceledByClient(t *testing.T) {
	log, buf := newLogger(-8)
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
	require.Eventually(t, func() bool { return len(buf.withMsg(t, "agent: request")) == 1 }, 5*time.Second, 10*time.Millisecond)
	line := buf.withMsg(t, "agent: request")[0]
	assert.Equal(t, "/v1/logs/k3s", line["path"])
	assert.EqualValues(t, 5000, line["lines"])
	t.Logf("audit line: %v", line)
	assert.NotEqual(t, "ok", line["outcome"], "an abandoned stream is not logged as a success")
}

// Log lines are passed through byte for byte: lines that start with "+",
// "-", white space or are empty, CRLF endings, and exactly MaxLogLines
// lines.
func TestReviewLogsOddLinesWhole(t *testing.T) {
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
func TestReviewOpenRCLogFileOddLines(t *testing.T) {
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
func TestReviewLogsLinesParameter(t *testing.T) {
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
func TestReviewJournalProcessKilledWhenClientCancels(t *testing.T) {
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
