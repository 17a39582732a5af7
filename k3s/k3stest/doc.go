// Package k3stest provides test hosts for the K3s provider: Linux
// namespaces that behave like small machines reached over SSH.
//
//	n := k3stest.NewNetwork(t)                                     // skips without root (fails under CI=true)
//	h, err := n.AddHost(ctx, "cp-0", k3stest.HostOptions{})        // systemd flavour; or Flavour: k3stest.OpenRC
//	c, err := h.Dial(ctx, h.ClientConfig(k3stest.DefaultUser))     // real OpenSSH, host key pinned
//	out, err := h.Run(ctx, "systemctl", "is-active", "k3s")        // as root inside the host, no SSH
//	err = h.PowerOff(ctx); err = h.PowerOn(ctx)                    // disk kept, /run and processes gone
//	key, err := h.ReplaceHostKey(ctx)                              // pinned clients are now refused
//
// # What a host is
//
// A [Network] is a bridge octk<N> in the root network namespace holding
// 10.213.N.1/24; nothing routes to or from that /24 and the hosts have no
// other route. Each [Host] is a named network namespace octk<N>-<name>
// whose eth0 (10.213.N.10+i) is a veth on the bridge, and a pid 1
// (k3stest-hostd init) started by the test process in new mount, UTS,
// IPC and PID namespaces: nsenter joins the network namespace and execs
// it, so it is pid 1 and its death kills every process of the host.
// Pid 1 mounts overlays on /etc, /usr and /var (lower layer: the
// machine's; upper layer: the host's, under [StateDir]), the host's own
// /root, /home, /var/log and /etc/systemd/system, and fresh /run, /tmp,
// /proc and /sys; sets the hostname; and runs the supervisor, which keeps
// Debian's /usr/sbin/sshd running (ed25519 host key per host, root login
// by key, the login user [DefaultUser] with an authorized key and
// NOPASSWD sudo) and stands in for the init system. [Host.Run] enters the
// host with nsenter (all five namespaces and its root).
//
// # The init system stand-in
//
// A systemd host has /run/systemd/system (so the openctl agent detects
// systemd) and systemctl and journalctl at /usr/bin. systemctl enable
// (units by name or path; links into the [Install] targets' .wants),
// disable, is-enabled, daemon-reload, start, stop, restart (also
// --no-block, --now), is-active, is-failed, status and reset-failed act
// on units in /etc/systemd/system, /run/systemd/system and
// /usr/local/lib/systemd/system (drop-ins included): ExecStartPre (with
// "-"), ExecStart (systemd quoting, continuation lines, %N/%n, $VAR),
// Environment=, EnvironmentFile= (with "-"), Type=simple/exec/notify/
// oneshot, TimeoutStartSec (0: forever), TimeoutStopSec, Restart=no/
// always/on-failure with RestartSec, KillMode. A Type=notify unit is
// "activating" until READY=1 arrives on $NOTIFY_SOCKET, and start or
// restart return only then — with TimeoutStartSec=0 they hang, exactly as
// install.sh's systemctl restart does with a k3s that never gets ready.
// Output goes to the journal stand-in, read with journalctl -u UNIT [-n N]
// [--no-pager] [-o short|cat] [-f]. Enabled units start at power-on.
//
// An OpenRC host has /run/openrc, /sbin/openrc-run, rc-service NAME
// start|stop|restart|status and rc-update add|del; no systemctl. Init
// scripts in /etc/init.d are sourced by /bin/sh as openrc-run does;
// command, command_args (evaluated, so redirections work),
// output_log/error_log, supervisor=supervise-daemon and respawn_delay are
// honoured. Services in /etc/runlevels/* start at power-on.
//
// # The package's own tests
//
// Besides the harness itself, the tests run the unmodified openctl-agent
// (cmd/openctl-agent, built once per test binary) installed as the K3s
// provider will install it (agent.InstallFiles, agent.EnableCommands)
// and call it over mTLS. TestAgentOnHosts puts it next to a shell-script
// k3s on a systemd and an OpenRC host. With $K3S_STANDIN_BINARY set (make
// test builds the stand-in, k3s/k3stest/standin, and sets it; unset, these
// tests skip, or fail under CI=true), TestStandinClusterOnHosts forms a
// 2-server + 1-agent cluster under systemd, and TestAgentStandin runs a
// `k3s server --cluster-init` under systemd and under OpenRC, side by
// side: the agent reports the stand-in's version and service state,
// streams its log, stops and restarts it, and upgrades it from a release
// the test serves on the bridge address (copies of the stand-in with a
// version trailer): a good release is kept and the Node's kubeletVersion
// follows; a checksum mismatch installs nothing; a mislabelled, a cut-short
// and a crashing-at-start binary are rolled back. It takes 2–2.5 min under
// -race on 2 cores, most of it k3s restarts and, under OpenRC, two 30 s
// health timeouts.
//
// # Cleanup
//
// Everything is named with [Prefix]; each network holds a flock on
// StateDir/n<N>/owner.lock for as long as its test binary lives, and pid 1
// of every host has PR_SET_PDEATHSIG=SIGKILL. NewNetwork first removes
// every network whose lock is free (a killed test binary's), and any
// octk namespace or link no live network owns. Networks are created and
// removed whole under one machine-wide lock (StateDir/lock), so that test
// binaries running at once never take a network being removed for a
// dead one, nor its id while its links still exist.
//
// Everything here is safe for concurrent use; hosts may be added and
// powered in parallel.
package k3stest
