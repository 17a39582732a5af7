// Package remote runs commands on hosts over SSH, verifying every host
// key: what the K3s provider uses to install and operate k3s on VMs and
// existing machines.
//
//	pool := remote.NewPool(remote.Options{Logger: log})
//	defer pool.Close()
//	h, err := pool.Host(ctx, remote.Target{
//		Host: "10.0.0.11", User: "ubuntu", PrivateKeyPath: "~/.ssh/id_ed25519",
//		HostKeys: remote.HostKeys{Pinned: []string{vmStatusSSHHostKey}},
//	})
//	res, err := h.Run(ctx, remote.Command{Step: "k3s version", Script: "k3s --version"})
//	err = h.WriteFile(ctx, "/etc/rancher/k3s/config.yaml", 0o600, strings.NewReader(cfg))
//
// # Host keys
//
// A host key is always verified (HostKeys): against the keys pinned for
// the host (a Proxmox VM's key read through its guest agent, or one the
// user wrote down), else against known_hosts files in OpenSSH's format
// (DefaultKnownHosts: ~/.ssh/known_hosts; hashed names and markers
// understood). The server is asked for the kind of key that is pinned or
// known. An unknown host is refused with its fingerprint and what to do;
// with TrustOnFirstUse its key is recorded in the first known_hosts file
// (0600) and a warning logged. A key that differs from the pinned or
// known one is always refused. Both are a *HostKeyError matching
// errcode.Invalid.
//
// # Authentication
//
// The target's private key file, then the keys of the SSH agent
// ($SSH_AUTH_SOCK): a passphrase-protected key is used through the agent.
// The agent is never forwarded. A refused login matches
// errcode.Unauthorized; a host that cannot be reached, or does not
// complete the handshake within Options.DialTimeout, errcode.Transient.
//
// # Commands
//
// A Pool keeps one connection per target and user, opened on first use
// and shared by every command after it (Pool.Opened counts them). Each
// command runs in a session of its own as root: through "sudo -n" when
// the user is not root (a sudo that wants a password is
// errcode.Unauthorized). Secrets go on the command's standard input or
// through WriteFile, never on its command line. A command that fails is
// an *ExitError naming the host, the step, the exit status and the last
// lines of its output; one whose context ends is sent SIGTERM, which
// ends its whole process group on the host (SIGKILL after a grace).
//
// Pool and Host are safe for concurrent use.
package remote
