package k3s

import (
	"context"
	"fmt"

	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/remote"
)

// rotateAgentCA replaces a cluster's agent CA with a new one, without a
// moment where the PKI the state records cannot reach a node:
//
//  1. A new CA is made and recorded as the signer, accepted alongside the
//     old one; the controller keeps its old client certificate.
//  2. Every node, one at a time, gets the two-CA bundle and a server
//     certificate from the new CA, over its verified SSH connection (the
//     agent takes no files), and reloads its credentials (SIGHUP: no
//     restart); the step ends when the agent reports both.
//  3. The controller's client certificate is reissued from the new CA
//     and recorded: every agent accepts it now.
//  4. Every node gets the bundle of the new CA alone and reloads; the old
//     CA is dropped from the record.
//
// Each step is recorded before the next starts, in every node's status
// and the cluster's. A run interrupted anywhere leaves a PKI that reaches
// every node; the next run sees the two CAs and finishes the rotation
// from step 2, whose writes and reloads are skipped where already done.
func (p *Provider) rotateAgentCA(ctx context.Context, req registry.ActionRequest) (*registry.ActionResult, error) {
	id := req.ID
	_, rec, err := recordedCluster(ctx, id)
	if err != nil {
		return nil, err
	}
	a, err := p.actionPKI(ctx, req)
	if err != nil {
		return nil, err
	}
	record := func(a *agentPKI, step string) error {
		enc, err := a.encode()
		if err != nil {
			return err
		}
		updates := []registry.StatusUpdate{{ID: id, Status: map[string]any{"agentPKI": enc}}}
		for _, m := range rec.Nodes {
			updates = append(updates, registry.StatusUpdate{
				ID:     manifest.ID{APIVersion: APIVersion, Kind: KindNode, Name: m.Name},
				Status: map[string]any{"agentPKI": enc},
			})
		}
		if err := req.Record(ctx, updates...); err != nil {
			return err
		}
		p.pkis.Store(id.Name, a)
		registry.CallOf(ctx).ReportStep(step)
		return nil
	}
	nodes, err := p.agentHosts(ctx, rec)
	if err != nil {
		return nil, err
	}
	resumed := a.accepted.Len() > 1
	if !resumed {
		ca, overlap, err := pki.Rotate(a.accepted, "openctl agent CA for cluster "+id.Name)
		if err != nil {
			return nil, err
		}
		a = &agentPKI{accepted: overlap, signer: ca, client: a.client}
		if err := record(a, "new CA made and recorded, accepted alongside the old one"); err != nil {
			return nil, err
		}
	}
	// Every node: both CAs, a certificate from the new one.
	if err := p.pushAgentCredentials(ctx, nodes, a, "now accepts both CAs and serves a certificate from the new one"); err != nil {
		return nil, err
	}
	client, err := a.signer.IssueClient(pki.ControllerName)
	if err != nil {
		return nil, err
	}
	a = &agentPKI{accepted: a.accepted, signer: a.signer, client: client}
	if err := record(a, "controller certificate reissued from the new CA"); err != nil {
		return nil, err
	}
	// Every node: the new CA alone.
	final := &agentPKI{accepted: pki.NewBundle(a.signer.Cert), signer: a.signer, client: a.client}
	if err := p.pushAgentCredentials(ctx, nodes, final, "now accepts the new CA only"); err != nil {
		return nil, err
	}
	if err := record(final, "old CA dropped"); err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("%s: agent CA rotated on %d nodes (new CA %.16s…)", id.Name, len(rec.Nodes), pki.Fingerprint(a.signer.Cert))
	if resumed {
		msg += ", finishing an interrupted rotation"
	}
	return &registry.ActionResult{Message: msg}, nil
}

// actionPKI is the agent PKI of the cluster an action that goes through
// the agents and records what it changes works on: INVALID when the
// cluster has no agents.
func (p *Provider) actionPKI(ctx context.Context, req registry.ActionRequest) (*agentPKI, error) {
	if req.Record == nil {
		return nil, errcode.New(errcode.Internal, "k3s: "+req.Action+" needs an engine that records actions (registry.ActionSpec.Records)")
	}
	a, err := p.clusterPKI(ctx, req.ID.Name)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("k3s: %s has no agents: it was applied without providers.k3s.agent", req.ID.Short()))
	}
	return a, nil
}

// agentHost is a node whose agent a rotation brings to new credentials:
// its connection and what its host runs, read once.
type agentHost struct {
	m           nodeRef
	h           *remote.Host
	init, uname string
}

// agentHosts connects to every node of rec and reads its init system and
// architecture, which installAgent needs.
func (p *Provider) agentHosts(ctx context.Context, rec *clusterNodes) ([]agentHost, error) {
	out := make([]agentHost, 0, len(rec.Nodes))
	for _, m := range rec.Nodes {
		_, h, err := p.memberHost(ctx, m, rec.SSH)
		if err != nil {
			return nil, err
		}
		pr, err := probeHost(ctx, h, service(m.Role), m.Address)
		if err != nil {
			return nil, p.nodeErr(m.Name, "inspect the host", err)
		}
		out = append(out, agentHost{m: m, h: h, init: pr.init, uname: pr.uname})
	}
	return out, nil
}

// pushAgentCredentials brings every node's agent to the PKI a — accepted
// bundle, a certificate from its signer — one node at a time, over SSH.
func (p *Provider) pushAgentCredentials(ctx context.Context, nodes []agentHost, a *agentPKI, done string) error {
	for _, n := range nodes {
		if _, err := p.installAgent(ctx, n.h, n.init, n.uname, n.m.Name, n.m.Address, a); err != nil {
			return p.nodeErr(n.m.Name, "rotate the agent's credentials", err)
		}
		registry.CallOf(ctx).ReportStep(n.m.Name + ": " + done)
	}
	return nil
}
