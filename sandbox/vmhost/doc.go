// Package vmhost simulates, in process and without root, the Linux host
// of a sandbox VM: a directory is its whole file system, a POSIX shell
// (mvdan.cc/sh's interpreter, confined to that directory) runs the
// command lines it is sent, and ServeSSH answers them over SSH the way
// OpenSSH does for openctl's remote package.
//
//	h, err := vmhost.New(dir, vmhost.Options{Hostname: "cp-0", Init: vmhost.InitSystemd})
//	status, err := h.Run(ctx, "uname -m; sha256sum /etc/hostname", nil, os.Stdout, os.Stderr, nil, "root")
//	go vmhost.ServeSSH(ctx, ln, vmhost.SSHConfig{HostKey: signer, AuthorizedKeys: keys, Host: h})
//
// # Confinement
//
// Every file a script or program touches is reached through an os.Root
// opened on the host's directory, after the host resolves the path
// itself as a chroot would: ".." stops at the root, a symbolic link's
// absolute target starts again at the root. Nothing a command line
// does reads or writes outside the directory, and no real program is
// ever executed: a command runs only if a Program of its name is
// registered and an executable file of that name is on PATH in the
// host's file system (the built-in ones have empty marker files in
// /usr/bin). A file with an interpreter line (#!) runs its interpreter
// as the kernel would — the registered program of that path, given the
// file as its argument — so a sandbox binary can be a small file naming
// the program that implements it, under any name; a text file without
// one runs in a nested shell; any other file fails as an unknown format.
//
// A program run as a service's main process reaches its init system
// through Call.NotifyReady and Call.Reloads (see WithService).
//
// # Init systems
//
// Options.Init gives a host systemd or OpenRC, each with its programs
// and a service manager of its own. A service's programs (ExecStart,
// ExecStartPre, ExecReload; an init script's command) are found and run
// as the shell would run them — a registered program by path or base
// name, a #! file's interpreter — in goroutines, each with a context of
// its own: stopping a service (or killing its process) cancels that
// context and waits for the program to return, up to the stop timeout
// (TimeoutStopSec, default 90 s; OpenRC: retry, default 5 s), then gives
// up on it and leaves it behind. A program returning ends its process;
// its status is the exit status. Processes have PIDs (MainPID) that
// kill reaches: HUP is sent to Call.Reloads, TERM, INT, QUIT and KILL
// end the process (systemd sees code=killed; TERM and INT are clean
// ends for Restart=on-failure). The Reloads channel holds one request:
// a request that the program has not taken yet is not queued twice
// (standard signals are not queued either), and a program that never
// receives from it ignores reloads — a real daemon without a SIGHUP
// handler would die instead.
//
// systemd: systemctl daemon-reload, enable [--now], disable [--now],
// start, stop, restart, try-restart, reload, reset-failed, is-active,
// is-enabled, is-failed, status and show, with --no-block and --quiet;
// journalctl -u, -n, -f, -o, --since and --until. Units are read from
// /etc/systemd/system, /run/systemd/system and /lib/systemd/system (with
// drop-ins) when first used and by daemon-reload (which enable and
// disable do too); a unit changed on disk keeps its loaded version,
// with systemd's warning, until then. Honoured: Description, Type
// (simple, exec, notify, oneshot), ExecStart, ExecStartPre, ExecReload
// (with "-"), Environment, EnvironmentFile (with "-"), Restart,
// RestartSec, TimeoutStartSec, TimeoutStopSec, StartLimitBurst,
// StartLimitIntervalSec, RemainAfterExit,
// WorkingDirectory and WantedBy (enable links the unit from
// /etc/systemd/system/TARGET.wants); %n, %N, %p and %% are expanded, $X
// and ${X} in Exec lines. A Type=notify start returns once the program
// calls Call.NotifyReady, or fails when it exits first or
// TimeoutStartSec passes; the start limit (StartLimitBurst= starts in
// StartLimitIntervalSec=, 5 in 10 s by default) applies to every start,
// as systemd's does. The journal is kept in memory (the
// last 20000 entries) with systemd's own messages ("Started k3s.service
// - Lightweight Kubernetes.", "k3s.service: Main process exited,
// code=exited, status=1/FAILURE", "Scheduled restart job, restart
// counter is at 1.") next to the programs' output lines, each program
// line under its command's base name and PID; times are UTC.
//
// OpenRC: rc-service NAME start|stop|restart|status|reload (and any
// extra command of the script), rc-update add|del NAME [RUNLEVEL],
// /etc/init.d/NAME ACTION (the openrc-run interpreter), and
// supervise-daemon NAME --signal SIG, which init scripts' reload()
// functions use. An init script is sourced in the host's shell with
// openrc-run's helpers (ebegin, eend, einfo, ewarn, eerror, yesno,
// checkpath, the depend() words), as openrc-run does, for every action;
// start runs start_pre, then the command with command_args evaluated by
// the shell (its redirections apply to the evaluation, as with
// supervise-daemon.sh's eval), the script's exported variables as its
// environment, output appended to output_log and error_log; then
// start_post. supervisor=supervise-daemon respawns the command after
// respawn_delay, up to respawn_max times (0: forever; default 10);
// without a supervisor a command that exits leaves the service
// crashed. A script's own start() and stop() replace the supervisor's.
// rc-service status prints " * status: started" (0), stopped (3) or
// crashed (32). OpenRC has no journal: the logs are the files.
//
// Host.Boot starts the enabled services (systemd: the *.wants links;
// OpenRC: the sysinit, boot and default runlevels) and Host.PowerOff
// stops them all at once, as a power cut does; Close powers off.
//
// # Users
//
// root may do anything. Another user may write only under /tmp,
// /var/tmp and /home/USER, and read only files readable by "other"
// (mode 0600 files are root's); `sudo -n` (every user may use it,
// without a password) runs a command as root.
//
// # Programs
//
// Built in: sh and dash, sudo, cat, sha256sum, cut, head, tail, uname,
// mkdir, rm, mv, cp, chmod, ln, install, touch, truncate, mktemp, dirname,
// basename, sleep, id, whoami, hostname, env, tr, wc, grep, readlink,
// kill and `ip addr`, each with the options documented on it; with
// Options.Init, the init system's programs (above). The shell's
// builtins (echo, printf, test, command, set, trap, cd, read, …) are
// the interpreter's; command -v, type, umask and kill are the host's
// own, so that they look at the host's file system and services. k3s
// and the like are not built in: register them with Options.Programs,
// which may also replace a built-in program (a stand-in systemctl).
//
// # Limits
//
//   - No awk, sed or perl: openctl's scripts do not use them, and a
//     script that does fails here as on a host without them (127).
//   - No processes, no signals: trap takes EXIT and ERR only (other
//     conditions are accepted and ignored), a command whose context ends
//     simply stops (status 143). kill reaches the services' main and
//     control processes only (not $$, not a command run by a shell);
//     there is no pkill or ps.
//   - Services: the hooks (NotifyReady, Reloads) reach the program that
//     ExecStart or command names (through a #! line too), not a program
//     a shell script started there runs. ExecStop, ExecStartPost,
//     ExecStopPost, User=, KillMode=, resource limits, sockets, timers,
//     targets other than as WantedBy= names, dependencies (Wants=,
//     After=, depend()) and ordering are not simulated: Boot starts the
//     enabled services by name. systemctl has no list-units, cat, edit,
//     mask or link; journalctl no field matches, -p, -k or boots (the
//     journal lives as long as the Host value; a host made again on the
//     same directory starts with an empty one). A program that does not
//     return when its context ends is given up on after the stop
//     timeout and keeps running as a goroutine. OpenRC's state is in
//     memory (no /run/openrc/started links); supervise-daemon takes
//     --signal only (rc-service starts and stops); only root may
//     change services (systemctl says "Interactive authentication
//     required.", rc-service "superuser access required"); the journal
//     may be read by anyone.
//   - PowerOff stops the services but not the host: Run still answers
//     (the sandbox stops serving SSH to a VM that is off).
//   - Descriptors above 2 exist only as copies of standard input
//     (exec 3<&0 … <&3 3<&-), which stay standard input.
//   - command -v does not see shell functions.
//   - No resource limits: a script that recurses or loops without end
//     runs until its context ends.
//   - SSH "env" requests are taken before "exec" only; environment
//     variables are not filtered as sshd's AcceptEnv would.
//   - File ownership is not kept; the users' rule above stands in for it.
//   - Redirection errors are printed by the interpreter without dash's
//     "sh: LINE: " prefix.
package vmhost
