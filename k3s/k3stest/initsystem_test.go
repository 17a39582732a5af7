package k3stest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/openctl/openctl/k3s/k3stest"
)

// notifyScript starts, says so, waits for /run/go-<name> (the test's
// go-ahead) and then signals READY=1, as k3s does once its API is up.
const notifyScript = `#!/bin/sh
echo "starting with GREETING=$GREETING FROM_ENV=$FROM_ENV"
echo $$ > /run/$1.pid
while [ ! -e /run/go-$1 ]; do sleep 0.05; done
systemd-notify --ready
echo "ready"
exec sleep 100000
`

// notifyUnit is shaped like the unit install.sh writes for k3s.
const notifyUnit = `[Unit]
Description=Notify test service %N
[Service]
Type=notify
EnvironmentFile=-/etc/default/%N
EnvironmentFile=-/etc/systemd/system/%N.service.env
Environment="GREETING=hello world"
KillMode=process
TimeoutStartSec=0
Restart=always
RestartSec=1s
ExecStartPre=-/sbin/modprobe br_netfilter
ExecStart=/usr/local/bin/notifier \
    '%N'
[Install]
WantedBy=multi-user.target
`

func TestSystemdStandIn(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	n := k3stest.NewNetwork(t)
	h := addHosts(ctx, t, n, k3stest.Systemd, "sd")[0]
	require.NoError(t, h.WriteFile(ctx, "/usr/local/bin/notifier", []byte(notifyScript), 0o755))
	for _, name := range []string{"ready", "never"} {
		require.NoError(t, h.WriteFile(ctx, "/etc/systemd/system/"+name+".service", []byte(notifyUnit), 0o644))
	}
	require.NoError(t, h.WriteFile(ctx, "/etc/systemd/system/ready.service.env", []byte("FROM_ENV='from the env file'\n"), 0o600))
	assert.Equal(t, "", mustSSH(ctx, t, h, "root", "test -d /run/systemd/system && systemctl daemon-reload"))
	out := mustSSH(ctx, t, h, "root", "systemctl enable /etc/systemd/system/ready.service 2>&1; systemctl is-enabled ready; systemctl is-enabled never || true")
	assert.Equal(t, "Created symlink /etc/systemd/system/multi-user.target.wants/ready.service → /etc/systemd/system/ready.service.\nenabled\ndisabled\n", out)

	t.Run("restart returns once the service is ready", func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			_, _, err := sshRun(ctx, t, h, k3stest.DefaultUser, "sudo systemctl restart ready")
			done <- err
		}()
		eventually(t, 10*time.Second, "ready.service activating", func() (bool, string) {
			out, _, _ := sshRun(ctx, t, h, "root", "systemctl is-active ready")
			return out == "activating\n", out
		})
		select {
		case err := <-done:
			t.Fatalf("systemctl restart returned before READY=1: %v", err)
		case <-time.After(500 * time.Millisecond): // a bound on how long it must keep waiting
		}
		mustSSH(ctx, t, h, "root", "touch /run/go-ready")
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("systemctl restart did not return after READY=1")
		}
		assert.Equal(t, "active\n", mustSSH(ctx, t, h, "root", "systemctl is-active ready"))
		status := mustSSH(ctx, t, h, "root", "systemctl status ready")
		assert.Contains(t, status, "Active: active (running)")
		logs := mustSSH(ctx, t, h, "root", "journalctl -u ready -n 20 --no-pager -o cat")
		assert.Contains(t, logs, "starting with GREETING=hello world FROM_ENV=from the env file\n")
		assert.Contains(t, logs, "ready\n")
	})

	t.Run("restart hangs when the service never signals", func(t *testing.T) {
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, _, err := sshRun(rctx, t, h, "root", "systemctl restart never")
			done <- err
		}()
		select {
		case err := <-done:
			t.Fatalf("systemctl restart of a service that never signals returned: %v", err)
		case <-time.After(2 * time.Second): // the bound: TimeoutStartSec=0 means forever
		}
		assert.Equal(t, "activating\n", mustSSH(ctx, t, h, "root", "systemctl is-active never || true"))
		cancel()
		<-done
		// Stopping it cancels the start job.
		mustSSH(ctx, t, h, "root", "systemctl stop never")
		assert.Equal(t, "inactive\n", mustSSH(ctx, t, h, "root", "systemctl is-active never || true"))
	})

	t.Run("Restart=always brings a killed service back after RestartSec", func(t *testing.T) {
		pid1 := strings.TrimSpace(mustSSH(ctx, t, h, "root", "cat /run/ready.pid"))
		killed := time.Now()
		mustSSH(ctx, t, h, "root", "kill -9 "+pid1)
		eventually(t, 10*time.Second, "ready.service restarted", func() (bool, string) {
			out, _, _ := sshRun(ctx, t, h, "root", "systemctl is-active ready; cat /run/ready.pid")
			f := strings.Fields(out)
			return len(f) == 2 && f[0] == "active" && f[1] != pid1, out
		})
		assert.GreaterOrEqual(t, time.Since(killed), time.Second, "RestartSec=1s")
		logs := mustSSH(ctx, t, h, "root", "journalctl -u ready.service --no-pager")
		assert.Contains(t, logs, "ready.service: Main process exited, code=killed, status=9/KILL")
		assert.Contains(t, logs, "ready.service: Scheduled restart job.")
		assert.Contains(t, logs, " sd notifier[") // short format: host and ident
	})

	t.Run("start --no-block returns at once", func(t *testing.T) {
		mustSSH(ctx, t, h, "root", "systemctl start --no-block never")
		assert.Equal(t, "activating\n", mustSSH(ctx, t, h, "root", "systemctl is-active never || true"))
		mustSSH(ctx, t, h, "root", "systemctl stop never")
	})

	t.Run("stop, disable, unknown units", func(t *testing.T) {
		out, _, err := sshRun(ctx, t, h, "root", "systemctl stop ready; systemctl is-active ready; systemctl disable ready 2>&1; systemctl is-enabled ready")
		require.Error(t, err)
		assert.Equal(t, "inactive\nRemoved \"/etc/systemd/system/multi-user.target.wants/ready.service\".\ndisabled\n", out)
		_, errOut, err := sshRun(ctx, t, h, "root", "systemctl start nosuch")
		require.Error(t, err)
		assert.Equal(t, "Failed to start nosuch.service: Unit nosuch.service not found.\n", errOut)
	})
}

const respawnScript = `#!/sbin/openrc-run
supervisor=supervise-daemon
command=/bin/sh
command_args="-c 'echo respawner \\$\\$ up; exec sleep 100000'"
output_log=/var/log/respawner.log
error_log=/var/log/respawner.log
respawn_delay=1
`

func TestOpenRCStandIn(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	n := k3stest.NewNetwork(t)
	h := addHosts(ctx, t, n, k3stest.OpenRC, "rc")[0]
	require.NoError(t, h.WriteFile(ctx, "/etc/init.d/respawner", []byte(respawnScript), 0o755))
	out := mustSSH(ctx, t, h, k3stest.DefaultUser, "sudo rc-update add respawner default && sudo rc-service respawner start && sudo rc-service respawner status")
	assert.Equal(t, " * service respawner added to runlevel default\n * Starting respawner ...\n [ ok ]\n * status: started\n", out)
	pid := func() string {
		out, _, _ := sshRun(ctx, t, h, "root", "pgrep -x sleep")
		return strings.TrimSpace(out)
	}
	var first string
	eventually(t, 5*time.Second, "respawner running", func() (bool, string) { first = pid(); return first != "", first })
	killed := time.Now()
	mustSSH(ctx, t, h, "root", "kill -9 "+first)
	eventually(t, 10*time.Second, "supervise-daemon respawns it", func() (bool, string) {
		p := pid()
		return p != "" && p != first, p
	})
	assert.GreaterOrEqual(t, time.Since(killed), time.Second, "respawn_delay=1")
	logs := mustSSH(ctx, t, h, "root", "cat /var/log/respawner.log")
	assert.Equal(t, 2, strings.Count(logs, "up\n"), logs)

	// Enabled services start at power-on; stopped ones say so.
	require.NoError(t, h.PowerOff(ctx))
	require.NoError(t, h.PowerOn(ctx))
	eventually(t, 5*time.Second, "respawner started at boot", func() (bool, string) {
		out, _, _ := sshRun(ctx, t, h, "root", "rc-service respawner status")
		return out == " * status: started\n", out
	})
	_, _, err := sshRun(ctx, t, h, "root", "rc-service respawner stop && rc-service respawner status")
	var ee *ssh.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 3, ee.ExitStatus())
}
