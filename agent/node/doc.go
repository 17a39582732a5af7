// Package node is the node side of openctl's agent: the HTTPS server that
// runs on every k3s node ([Server]), the host abstraction it acts through
// ([System], implemented for real hosts by [HostSystem] over a [Runner])
// and the k3s upgrader with its health gate and rollback. The binary is
// cmd/openctl-agent; the protocol, the client and the wire types are in
// package agent, whose documentation describes the endpoints, the
// security model and why there is no exec endpoint.
//
//	host, err := node.NewHostSystem(node.HostOptions{}) // systemd or OpenRC, detected
//	srv, err := node.NewServer(node.ServerConfig{
//		CABundle: caPEM, CertPEM: serverPEM, KeyPEM: serverKeyPEM,
//		System:  host,
//		Version: "v1.2.3", // reported in /v1/info and every response
//	})
//	err = srv.ListenAndServe(":9443")   // until srv.Shutdown(ctx)
//	err = srv.Reload(caPEM, certPEM, keyPEM) // after a CA rotation step (SIGHUP)
//
// # Why a separate package
//
// A controller imports package agent for the client and the install
// files; it never serves the agent. Keeping the server, the host code
// (systemctl, journalctl, rc-service, os-release parsing, log tailing) and
// the upgrader (downloads, checksums, binary swaps) here means the
// controller neither compiles nor links them, and package agent's API is
// only what crosses the wire. This package imports agent for those wire
// types; agent never imports it.
//
// # Files
//
// command.go holds Command, the agent as a program (cmd/openctl-agent's
// flags, exit statuses and lifecycle, which a sandbox also runs in
// process); server.go holds the configuration and the lifecycle (NewServer, Serve,
// Shutdown); mtls.go the credentials, Reload and the per-request re-check
// of the client certificate; routes.go the routing; info.go, logs.go,
// service.go and upgrade.go (with release.go, the downloads) one endpoint
// family each; respond.go the JSON and error answers; audit.go the
// middleware that caps bodies, stamps the version and logs one audit line
// per request. system.go is the System interface, host.go and runner.go
// its real implementation, ready.go the optional ReadyWatcher.
//
// # Implementing System
//
// A System must be safe for concurrent use: the server calls it from
// concurrent requests. Errors carrying a code of package errcode
// (errcode.NotFound, errcode.Invalid, ...) are answered with that code;
// others are INTERNAL. agenttest.System is a fake for tests.
//
// Optional abilities are separate interfaces found by type assertion:
// a [ReadyWatcher] tells the upgrade's health gate when a restarted k3s
// is up and running, where an active service does not say so (OpenRC);
// HostSystem implements it.
package node
