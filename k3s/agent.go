package k3s

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/remote"
)

// AgentConfig makes the provider install openctl's node agent
// (cmd/openctl-agent) next to k3s on every node, reached over mutual TLS
// for day-2 operations.
type AgentConfig struct {
	// BinaryDir holds the agent's static binaries, one per architecture:
	// openctl-agent-linux-amd64, -arm64 or -arm. Required.
	BinaryDir string
	// Port is the agent's port on every node (default 9443).
	Port int
	// ReleaseURL is where agents download k3s releases for upgrades
	// (<url>/<version>/k3s…, sha256sum-<arch>.txt): default the
	// provider's Config.ReleaseURL, else the agent's own default (k3s's
	// GitHub releases). Air-gapped nodes need a mirror they can reach.
	ReleaseURL string
}

// agentReleaseURL is the --release-url agents get ("" for their default).
func (p *Provider) agentReleaseURL() string {
	if p.cfg.Agent != nil && p.cfg.Agent.ReleaseURL != "" {
		return p.cfg.Agent.ReleaseURL
	}
	return p.cfg.ReleaseURL
}

// agentBinaryName is the agent binary of an architecture (a k3s one,
// from archs).
func agentBinaryName(arch string) string { return "openctl-agent-linux-" + arch }

// agentPort is the port agents listen on.
func (p *Provider) agentPort() int {
	if p.cfg.Agent == nil || p.cfg.Agent.Port == 0 {
		return 9443
	}
	return p.cfg.Agent.Port
}

// agentPKI is a cluster's agent PKI: the CAs agents and the controller
// accept, the CA that signs (the newest), and the controller's client
// certificate. It lives sealed in state: in the first server's status
// (status.agentPKI, made at its first apply) and, through a $ref, in
// every other node's spec.
type agentPKI struct {
	accepted pki.Bundle
	signer   *pki.CA
	client   *pki.Leaf
}

// agentPKIDoc is agentPKI's serialized form.
type agentPKIDoc struct {
	Accepted   string `json:"accepted"`
	CACert     string `json:"caCert"`
	CAKey      string `json:"caKey"`
	ClientCert string `json:"clientCert"`
	ClientKey  string `json:"clientKey"`
}

// newAgentPKI makes a cluster's agent CA and the controller's client
// certificate.
func newAgentPKI(cluster string) (*agentPKI, error) {
	ca, err := pki.NewCA("openctl agent CA for cluster " + cluster)
	if err != nil {
		return nil, err
	}
	client, err := ca.IssueClient(pki.ControllerName)
	if err != nil {
		return nil, err
	}
	return &agentPKI{accepted: pki.NewBundle(ca.Cert), signer: ca, client: client}, nil
}

// parseAgentPKI reads what encode wrote.
func parseAgentPKI(s string) (*agentPKI, error) {
	var d agentPKIDoc
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "k3s: the agent PKI", err)
	}
	accepted, err := pki.ParseBundle([]byte(d.Accepted))
	if err != nil {
		return nil, err
	}
	ca, err := pki.ParseCA([]byte(d.CACert), []byte(d.CAKey))
	if err != nil {
		return nil, err
	}
	client, err := pki.ParseLeaf([]byte(d.ClientCert), []byte(d.ClientKey))
	if err != nil {
		return nil, err
	}
	return &agentPKI{accepted: accepted, signer: ca, client: client}, nil
}

// encode serializes the PKI, private keys included: a secret field.
func (a *agentPKI) encode() (string, error) {
	caKey, err := a.signer.KeyPEM()
	if err != nil {
		return "", err
	}
	clientKey, err := a.client.KeyPEM()
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(agentPKIDoc{
		Accepted: string(a.accepted.PEM()), CACert: string(a.signer.CertPEM()), CAKey: string(caKey),
		ClientCert: string(a.client.CertPEM()), ClientKey: string(clientKey),
	})
	return string(b), err
}

// nodePKI returns the agent PKI a node uses: its spec's (a $ref to the
// first server's), else the one it recorded, else — on the first server —
// a new one. ok is false when agents are off or the node has none (a Node
// applied alone, outside its Cluster). Every node keeps it in its status
// (status.agentPKI, sealed in state), where reads find it.
func (p *Provider) nodePKI(ctx context.Context, cluster string, s *NodeSpec) (a *agentPKI, ok bool, err error) {
	if p.cfg.Agent == nil {
		return nil, false, nil
	}
	if s.AgentPKI != "" {
		a, err := parseAgentPKI(s.AgentPKI)
		return a, err == nil, err
	}
	if a, ok := priorPKI(ctx); ok {
		return a, true, nil
	}
	if !s.Init {
		return nil, false, nil
	}
	a, err = newAgentPKI(cluster)
	return a, err == nil, err
}

// priorPKI is the agent PKI a recorded node used, if any.
func priorPKI(ctx context.Context) (*agentPKI, bool) {
	prior := registry.CallOf(ctx).Prior
	if prior == nil {
		return nil, false
	}
	if s, _ := prior.Status["agentPKI"].(string); s != "" {
		if a, err := parseAgentPKI(s); err == nil {
			return a, true
		}
	}
	return nil, false
}

// clusterPKI is a cluster's agent PKI: the one its nodes used in this run,
// else its record's; nil when it has none (agents off).
func (p *Provider) clusterPKI(ctx context.Context, cluster string) (*agentPKI, error) {
	if p.cfg.Agent == nil {
		return nil, nil
	}
	if a, ok := p.pkis.Load(cluster); ok {
		return a.(*agentPKI), nil
	}
	if prior := registry.CallOf(ctx).Prior; prior != nil {
		if s, _ := prior.Status["agentPKI"].(string); s != "" {
			return parseAgentPKI(s)
		}
	}
	return nil, nil
}

// agentClients keeps one agent client — one kept mTLS connection — per
// node address and PKI.
type agentClients struct {
	mu sync.Mutex
	m  map[string]*agent.Client
}

// agentClient returns the agent client of the node at address.
func (p *Provider) agentClient(address string, a *agentPKI) (*agent.Client, error) {
	k := address + "\x00" + string(a.client.Cert.Raw) + "\x00" + string(a.accepted.PEM())
	p.agents.mu.Lock()
	defer p.agents.mu.Unlock()
	if c, ok := p.agents.m[k]; ok {
		return c, nil
	}
	clientKey, err := a.client.KeyPEM()
	if err != nil {
		return nil, err
	}
	c, err := agent.NewClient(agent.ClientConfig{
		Address:  net.JoinHostPort(address, strconv.Itoa(p.agentPort())),
		CABundle: a.accepted.PEM(), CertPEM: a.client.CertPEM(), KeyPEM: clientKey,
		Logger: p.log, Retries: -1,
	})
	if err != nil {
		return nil, err
	}
	if p.agents.m == nil {
		p.agents.m = map[string]*agent.Client{}
	}
	p.agents.m[k] = c
	return c, nil
}

// closeAgents closes every agent client.
func (p *Provider) closeAgents() {
	p.agents.mu.Lock()
	defer p.agents.mu.Unlock()
	for k, c := range p.agents.m {
		c.Close()
		delete(p.agents.m, k)
	}
}

// agentProbe is what the host holds of the agent, read in one command.
type agentProbe struct {
	binary, unit, ca string // sha256 of each file; "" when absent
	cert             string // the server certificate's PEM
	active           bool
}

const agentProbeScript = `unit=$1 dir=$2
sum() { [ -e "$1" ] && sha256sum -- "$1" | cut -d' ' -f1; }
echo "binary=$(sum ` + agent.DefaultBinaryPath + `)"
echo "unit=$(sum "$unit")"
echo "ca=$(sum "$dir/` + pki.CACertFile + `")"
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  systemctl is-active --quiet ` + agent.ServiceName + ` && echo active=1
else
  rc-service ` + agent.ServiceName + ` status >/dev/null 2>&1 && echo active=1
fi
echo "--- cert"
cat "$dir/` + pki.ServerCertFile + `" 2>/dev/null
exit 0`

func probeAgent(ctx context.Context, h *remote.Host, init agent.InitSystem) (*agentProbe, error) {
	unit := agent.SystemdUnitPath
	if init == agent.OpenRC {
		unit = agent.OpenRCScriptPath
	}
	res, err := h.Run(ctx, remote.Command{Step: "inspect the agent", Script: "set -- " + unit + " " + agent.DefaultConfigDir + "\n" + agentProbeScript})
	if err != nil {
		return nil, err
	}
	head, cert, _ := strings.Cut(string(res.Stdout), "--- cert\n")
	pr := &agentProbe{cert: cert}
	for _, line := range strings.Split(head, "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "binary":
			pr.binary = v
		case "unit":
			pr.unit = v
		case "ca":
			pr.ca = v
		case "active":
			pr.active = v == "1"
		}
	}
	return pr, nil
}

// certFits reports whether a node's agent certificate can stay: it is
// signed by the CA that signs now (during a CA rotation, the new one),
// names the node and its address, and is not within 30 days of expiring.
func certFits(certPEM string, a *agentPKI, name, address string) bool {
	cert, err := pki.ParseCert([]byte(certPEM))
	if err != nil {
		return false
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pki.NewBundle(a.signer.Cert).Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return false
	}
	if time.Until(cert.NotAfter) < 30*24*time.Hour || cert.VerifyHostname(name) != nil {
		return false
	}
	return cert.VerifyHostname(address) == nil
}

// installAgent puts the agent on a node — binary, accepted CAs, its
// server certificate, service — writing only what differs; restarts it
// when its binary or service changed or it is stopped, makes it reload
// its credentials when only they changed, and waits until it answers over
// mutual TLS with exactly those credentials.
func (p *Provider) installAgent(ctx context.Context, h *remote.Host, init, uname, name, address string, a *agentPKI) (*agent.Info, error) {
	ai := agent.Systemd
	if init == initOpenRC {
		ai = agent.OpenRC
	}
	arch, ok := archs[uname]
	if !ok {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("k3s: no agent for architecture %q", uname))
	}
	binPath := filepath.Join(p.cfg.Agent.BinaryDir, agentBinaryName(arch.arch))
	binSum, err := fileSHA256(binPath)
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, fmt.Sprintf("k3s: the agent binary for %s (%s: `make cross` builds it)", arch.arch, binPath), err)
	}
	pr, err := probeAgent(ctx, h, ai)
	if err != nil {
		return nil, err
	}
	files, err := agent.InstallFiles(agent.InstallOptions{Init: ai, Listen: ":" + strconv.Itoa(p.agentPort()), ReleaseURL: p.agentReleaseURL()})
	if err != nil {
		return nil, err
	}
	ca := a.accepted.PEM()
	restart, reload := false, false
	for _, f := range files {
		var data []byte
		switch f.Kind {
		case agent.KindDir:
			if _, err := h.Run(ctx, remote.Command{Step: "make " + f.Path, Script: "install -d -m 0700 " + remote.Quote(f.Path)}); err != nil {
				return nil, err
			}
			continue
		case agent.KindBinary:
			if pr.binary == binSum {
				continue
			}
			bf, err := os.Open(binPath)
			if err != nil {
				return nil, errcode.Wrap(errcode.Internal, "k3s: agent binary", err)
			}
			err = h.WriteFile(ctx, f.Path, f.Mode, bf)
			bf.Close()
			if err != nil {
				return nil, err
			}
			restart = true
			continue
		case agent.KindCA:
			if pr.ca == sha256Hex(ca) {
				continue
			}
			data, reload = ca, true
		case agent.KindServerCert, agent.KindServerKey:
			continue // below, together
		case agent.KindService:
			if pr.unit == sha256Hex(f.Content) {
				continue
			}
			data, restart = f.Content, true
		}
		if err := h.WriteFile(ctx, f.Path, f.Mode, bytes.NewReader(data)); err != nil {
			return nil, err
		}
	}
	certPEM := []byte(pr.cert)
	// An agent that does not run gets fresh credentials too: an install
	// interrupted between its key and its certificate leaves a pair that
	// does not load (a key missing, or not the certificate's), and the
	// service fails on it however often it is restarted.
	if !pr.active || !certFits(pr.cert, a, name, address) {
		var ips []net.IP
		if ip, err := netip.ParseAddr(address); err == nil {
			ips = append(ips, net.IP(ip.AsSlice()))
		}
		leaf, err := a.signer.IssueServer(name, ips)
		if err != nil {
			return nil, err
		}
		key, err := leaf.KeyPEM()
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			switch f.Kind {
			case agent.KindServerKey:
				err = h.WriteFile(ctx, f.Path, f.Mode, bytes.NewReader(key))
			case agent.KindServerCert:
				err = h.WriteFile(ctx, f.Path, f.Mode, bytes.NewReader(leaf.CertPEM()))
			}
			if err != nil {
				return nil, err
			}
		}
		certPEM, reload = leaf.CertPEM(), true
	}
	var cmds [][]string
	switch {
	case restart || !pr.active:
		cmds, err = agent.EnableCommands(ai)
	case reload:
		var c []string
		c, err = agent.ReloadCommand(ai)
		cmds = [][]string{c}
	}
	if err != nil {
		return nil, err
	}
	if len(cmds) > 0 {
		step := "start the agent"
		if !restart && pr.active {
			step = "reload the agent's credentials"
		}
		if _, err := h.Run(ctx, remote.Command{Step: step, Script: commandScript(cmds)}); err != nil {
			return nil, err
		}
	}
	cert, err := pki.ParseCert(certPEM)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "k3s: the agent certificate", err)
	}
	return p.waitAgent(ctx, address, a, pki.Fingerprint(cert))
}

// waitAgent polls the agent's /v1/info until it answers using the
// credentials a and the server certificate whose fingerprint is cert
// (a restart or a reload takes effect a moment after the command that
// asked for it), or the ready timeout passes. An agent that does not
// report its credentials (an older build) is taken at its word.
func (p *Provider) waitAgent(ctx context.Context, address string, a *agentPKI, cert string) (*agent.Info, error) {
	c, err := p.agentClient(address, a)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, p.cfg.ReadyTimeout)
	defer cancel()
	b := backoff.Policy{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.1}.Start()
	want := a.accepted.Fingerprints()
	for {
		info, err := c.Info(wctx)
		if err == nil {
			if info.ServerCert == "" || info.ServerCert == cert && slices.Equal(info.AcceptedCAs, want) {
				return info, nil
			}
			err = fmt.Errorf("it still uses its previous credentials (certificate %.12s…, %d accepted CAs)", info.ServerCert, len(info.AcceptedCAs))
		}
		if werr := b.Wait(wctx); werr != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, errcode.New(errcode.Internal, fmt.Sprintf("k3s: the agent at %s does not answer after %s: %v", address, p.cfg.ReadyTimeout, err))
		}
	}
}

// agentStatus asks a node's agent for its state, once: the status fields
// it adds, and why the node is not Ready because of it ("" when fine).
func (p *Provider) agentStatus(ctx context.Context, address string, a *agentPKI) (map[string]any, string) {
	c, err := p.agentClient(address, a)
	if err != nil {
		return nil, "its agent: " + err.Error()
	}
	info, err := c.Info(ctx)
	if err != nil {
		return nil, "its agent does not answer: " + err.Error()
	}
	return map[string]any{"version": info.AgentVersion, "address": net.JoinHostPort(address, strconv.Itoa(p.agentPort()))}, ""
}

// nodeAgent is the agent client of a recorded node (registry.Call.Prior).
func (p *Provider) nodeAgent(ctx context.Context, id manifest.ID) (*agent.Client, error) {
	loc, err := priorLocation(ctx, id)
	if err != nil {
		return nil, err
	}
	a, ok := priorPKI(ctx)
	if !ok {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("k3s: node %s has no agent: it was installed without one (providers.k3s.agent) or outside its Cluster", id.Name))
	}
	return p.agentClient(loc.Address, a)
}

// writeNodeTable prints a cluster status's nodes, one line each.
func writeNodeTable(w io.Writer, st map[string]any) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tREADY\tVERSION\tAGENT\tADDRESS")
	nodes, _ := st["nodes"].([]any)
	for _, n := range nodes {
		m, _ := n.(map[string]any)
		get := func(k string) string {
			if v, ok := m[k]; ok && v != nil && v != "" {
				return fmt.Sprint(v)
			}
			return "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%s\n", get("name"), get("role"), m["phase"] == PhaseReady, get("version"), get("agentVersion"), get("address"))
	}
	return tw.Flush()
}

// commandScript runs argument vectors one after the other, quoted, their
// output discarded, stopping at the first that fails.
func commandScript(cmds [][]string) string {
	var b strings.Builder
	b.WriteString("set -e\n")
	for _, c := range cmds {
		for i, w := range c {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(remote.Quote(w))
		}
		b.WriteString(" >/dev/null\n")
	}
	return b.String()
}
