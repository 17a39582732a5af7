// Package agenttest provides test doubles for packages agent and
// agent/node: a fake host ([System], a node.System) whose k3s binary is a
// file in a temporary directory, a fake k3s release server
// ([ReleaseServer]) and [Start], which runs a real agent server
// (node.Server) over mutual TLS on loopback with an agent.Client for it.
//
//	env := agenttest.Start(t, agenttest.Options{})
//	info, err := env.Client.Info(ctx)       // over mTLS, against env.System
//	env.System.SetState(agent.StateFailed)  // change the fake host
//
// Upgrades are observable end to end:
//
//	rel := agenttest.NewReleaseServer(t)
//	rel.Publish("v1.31.0+k3s1")
//	env := agenttest.Start(t, agenttest.Options{ReleaseURL: rel.URL()})
//	res, err := env.Client.Upgrade(ctx, "v1.31.0+k3s1")
//	env.System.InstalledVersion() // "v1.31.0+k3s1", read back from the binary file
//
// Everything here is safe for concurrent use.
package agenttest
