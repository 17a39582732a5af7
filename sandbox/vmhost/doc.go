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
// mkdir, rm, mv, cp, chmod, ln, install, touch, mktemp, dirname,
// basename, sleep, id, whoami, hostname, env, tr, wc, grep, readlink
// and `ip addr`, each with the options
// documented on it. The shell's builtins (echo, printf, test, command,
// set, trap, cd, read, …) are the interpreter's; command -v, type and
// umask are the host's own, so that they look at the host's file
// system. systemctl, rc-service, journalctl, k3s and the like are not
// built in: register them with Options.Programs.
//
// # Limits
//
//   - No awk, sed or perl: openctl's scripts do not use them, and a
//     script that does fails here as on a host without them (127).
//   - No processes, no signals: trap takes EXIT and ERR only (other
//     conditions are accepted and ignored), kill and pkill are not
//     there, a command whose context ends simply stops (status 143).
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
