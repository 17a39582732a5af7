package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/errcode"
)

func sysAppend(t *testing.T, root, p, content string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(root, p), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString(content)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestWatchReadySystemdTrustsNotify(t *testing.T) {
	r := &sysRunner{}
	h, _ := sysHost(t, agent.Systemd, agent.RoleServer, r)
	ready, err := h.WatchReady(t.Context())
	require.NoError(t, err)
	ok, err := ready(t.Context())
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Empty(t, r.Calls(), "nothing is read")
}

func TestWatchReadyOpenRC(t *testing.T) {
	const up = `time="2026-01-01T00:00:00Z" level=info msg="k3s is up and running"` + "\n"
	for _, tt := range []struct {
		role        agent.Role
		log, line   string
		otherRoleUp string
	}{
		{agent.RoleServer, "/var/log/k3s.log", up, `msg="k3s agent is up and running"` + "\n"},
		{agent.RoleAgent, "/var/log/k3s-agent.log", `level=info msg="k3s agent is up and running"` + "\n", up},
	} {
		t.Run(string(tt.role), func(t *testing.T) {
			h, root := sysHost(t, agent.OpenRC, tt.role, &sysRunner{})
			// An earlier start's readiness does not count.
			sysWrite(t, root, tt.log, "old start\n"+tt.line, 0o644)
			ready, err := h.WatchReady(t.Context())
			require.NoError(t, err)
			poll := func() bool {
				t.Helper()
				ok, err := ready(t.Context())
				require.NoError(t, err)
				return ok
			}
			assert.False(t, poll())
			sysAppend(t, root, tt.log, "starting\n"+tt.otherRoleUp)
			assert.False(t, poll(), "the other role's line")
			half := len(tt.line) / 2
			sysAppend(t, root, tt.log, tt.line[:half])
			assert.False(t, poll(), "half a line")
			sysAppend(t, root, tt.log, tt.line[half:])
			assert.True(t, poll(), "the line, read across two polls")
			sysWrite(t, root, tt.log, "", 0o644)
			assert.True(t, poll(), "once ready, ready")
		})
	}
}

func TestWatchReadyOpenRCLogRotated(t *testing.T) {
	h, root := sysHost(t, agent.OpenRC, agent.RoleServer, &sysRunner{})
	sysWrite(t, root, "/var/log/k3s.log", strings.Repeat("an earlier start\n", 100), 0o644)
	ready, err := h.WatchReady(t.Context())
	require.NoError(t, err)
	ok, err := ready(t.Context())
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, os.Remove(filepath.Join(root, "/var/log/k3s.log")))
	ok, err = ready(t.Context())
	require.NoError(t, err)
	assert.False(t, ok, "no log file yet")
	sysWrite(t, root, "/var/log/k3s.log", "msg=\"k3s is up and running\"\n", 0o644)
	ok, err = ready(t.Context())
	require.NoError(t, err)
	assert.True(t, ok, "a shorter file is read from its start")
}

func TestWatchReadyOpenRCLongLine(t *testing.T) {
	h, root := sysHost(t, agent.OpenRC, agent.RoleServer, &sysRunner{})
	ready, err := h.WatchReady(t.Context())
	require.NoError(t, err)
	sysWrite(t, root, "/var/log/k3s.log", strings.Repeat("x", 3*maxLogLine), 0o644)
	ok, err := ready(t.Context())
	require.NoError(t, err)
	assert.False(t, ok)
	sysAppend(t, root, "/var/log/k3s.log", "\nk3s is up and running\n")
	ok, err = ready(t.Context())
	require.NoError(t, err)
	assert.True(t, ok)
}

func TestWatchReadyNotInstalled(t *testing.T) {
	h, _ := sysHost(t, agent.OpenRC, agent.RoleNone, &sysRunner{})
	_, err := h.WatchReady(t.Context())
	require.ErrorIs(t, err, errcode.NotFound)
}
