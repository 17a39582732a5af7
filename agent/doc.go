// Package agent is the controller's side of openctl's per-node agent for
// k3s clusters. The agent is a small HTTPS server on every node, reached
// over mutual TLS with a per-cluster CA, that does the day-2 host
// operations the Kubernetes API cannot (service state and control, the k3s
// log, the k3s binary) without an SSH handshake per call and without
// needing a healthy API server. This package holds what a controller (the
// K3s provider) needs: the [Client], the wire types the client and the
// server share ([Info], [UpgradeResult], [ErrorBody] and the constants of
// the protocol) and the install helpers ([InstallFiles], [SystemdUnit],
// [OpenRCScript], [EnableCommands]) that put the agent on a node.
//
//	c, err := agent.NewClient(agent.ClientConfig{
//		Address:  "192.168.1.50:9443",
//		CABundle: caPEM, CertPEM: clientPEM, KeyPEM: clientKeyPEM,
//	})
//	info, err := c.Info(ctx)                     // facts, k3s version, role, service state
//	err = c.Logs(ctx, 500, os.Stdout)            // streamed
//	err = c.Restart(ctx)
//	res, err := c.Upgrade(ctx, "v1.31.2+k3s1")   // errors.Is(err, agent.ErrRolledBack) if rolled back
//
// The node side, the server itself, is package agent/node: node.NewServer
// with a node.System, the host abstraction (node.HostSystem drives systemd
// or OpenRC and the k3s binary; agenttest.System is a fake for tests). It
// is a separate package so that importing this one does not compile the
// server, the host code or the upgrader into the controller.
// cmd/openctl-agent is the binary.
//
// # Versions
//
// There is no global version. The server reports the version it is
// given (node.ServerConfig.Version; cmd/openctl-agent passes its build
// version) in /v1/info and in the Openctl-Agent-Version header of every
// response; a client compares it with [ClientConfig.ExpectVersion] and,
// when they differ, logs a warning once and carries on, because a fleet
// being upgraded has mixed versions for a while.
//
// # Endpoints
//
//	GET  /v1/info                         Info: host facts, k3s version, role, service state, agent version, capabilities
//	GET  /v1/logs/k3s?lines=N             the last N lines (1..5000, default 100) of the k3s log, streamed as text/plain
//	GET  /v1/logs/k3s?lines=N&follow=true  the same, then each line logged later, until the client goes (Client.FollowLogs)
//	POST /v1/service/k3s/{start,stop,restart}
//	POST /v1/upgrade/k3s {"version":"vX.Y.Z+k3sN"}
//
// Errors are JSON, {"code": "INVALID_REQUEST", "message": "..."}, with
// the codes of package errcode; the client turns them back into
// *errcode.Error values, so errors.Is(err, errcode.Conflict) works on the
// controller. A log stream that fails after it has started reports the
// failure in the Openctl-Error trailer ([TrailerLogsError]). Every
// response carries the agent's version in the [HeaderAgentVersion]
// header.
//
// Service actions and upgrades are serialised: while one runs, another
// gets 409 CONFLICT. Neither is abandoned halfway when the client goes
// away.
//
// # Security
//
// The server speaks TLS 1.3 only and requires a client certificate that
// chains to the cluster's CA bundle (ca.pem; no system roots) and carries
// the ClientAuth extended key usage, so a node's server certificate,
// which carries ServerAuth only, cannot be replayed as a client. The
// bundle may hold two CAs during a rotation (see package agent/pki);
// node.Server.Reload swaps credentials without a restart, and every
// request, also on a connection opened before, is checked against the current
// bundle, so a dropped CA is refused at once. The client trusts
// only the bundle too and checks the agent's name or IP against its
// certificate.
//
// Request bodies are capped at [MaxRequestBody] bytes and decoded
// strictly (unknown fields and trailing data are rejected); the server
// sets read-header, read, write and idle timeouts. Every request leaves
// one audit line in the logger: the client certificate's common name,
// method and path, status and outcome (an error code, or an upgrade's
// status), duration and size.
//
// There is no exec, shell or file-upload endpoint, and there will not be
// one. The agent runs as root on every node and its client certificate
// sits on operators' laptops; an endpoint that runs a command or writes a
// file would turn one stolen certificate into root on the whole cluster,
// and the audit log into a list of opaque command lines. Each endpoint
// instead does one named thing whose arguments are validated (an action
// from a fixed list, a line count in a range, a version matching a
// pattern). Anything kubectl can do from the controller is done with
// kubectl, not through the agent.
//
// # Upgrades
//
// POST /v1/upgrade/k3s checks the version against
// ^v[0-9]+\.[0-9]+\.[0-9]+\+k3s[0-9]+$ before it is used anywhere
// ([ValidateK3sVersion]). It then downloads sha256sum-<arch>.txt and the
// binary (k3s, k3s-arm64 or k3s-armhf) from <ReleaseURL>/<version>/
// within DownloadTimeout (both node.ServerConfig), verifies the binary's
// SHA-256, writes it beside the installed one (same directory, mode 0755,
// synced), keeps the installed one as <binary>.previous and renames the
// new one over it. k3s is restarted and a health gate waits, within
// HealthTimeout, for the service to be active, the binary to report the
// new version and k3s to be up and running: under systemd the restart of
// the Type=notify unit waits for that; under OpenRC, which reports a k3s
// that supervise-daemon keeps respawning as started, the gate waits for
// the line k3s logs when it is ready in /var/log/k3s.log (or
// k3s-agent.log). A binary reporting another version fails it at once.
// If it does not pass, the previous binary is renamed back and k3s
// restarted: the answer is {"status":"rolled-back",...} with the reason,
// which also says if the previous k3s did not come back up within
// HealthTimeout.
// A checksum mismatch or a failed download installs nothing. On a node,
// both settings are flags of cmd/openctl-agent (--release-url,
// --health-timeout), which [InstallOptions] ReleaseURL and HealthTimeout
// put into the service definition.
package agent
