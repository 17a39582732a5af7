package proxmox

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/registry"
)

// agentIface is one interface of the guest agent's network-get-interfaces.
type agentIface struct {
	Name        string `json:"name"`
	HardwareAdr string `json:"hardware-address"`
	IPAddresses []struct {
		Type    string `json:"ip-address-type"`
		Address string `json:"ip-address"`
		Prefix  int    `json:"prefix"`
	} `json:"ip-addresses"`
}

// agentState classifies a guest agent error.
type agentState int

const (
	agentOK agentState = iota
	agentNotConfigured
	agentVMNotRunning
	agentNotRunning
	agentOther
)

func classifyAgentErr(err error) agentState {
	if err == nil {
		return agentOK
	}
	s := err.Error()
	switch {
	case strings.Contains(s, "No QEMU guest agent configured"):
		return agentNotConfigured
	case strings.Contains(s, "is not running") && strings.Contains(s, "VM "):
		return agentVMNotRunning
	case strings.Contains(s, "guest agent is not running"), strings.Contains(s, "QEMU guest agent"):
		return agentNotRunning
	}
	return agentOther
}

// agentIPs asks the guest agent once for the VM's addresses. ips lists the
// usable ones (no loopback, no link-local), primary is the IPv4 (else IPv6)
// address of the interface whose MAC is the VM's first network's; ips is
// empty while the guest has only loopback or link-local addresses.
func (p *Provider) agentIPs(ctx context.Context, v vmRef, conf vmConfig, s *VMSpec) (ips []string, primary string, err error) {
	var res struct {
		Result []agentIface `json:"result"`
	}
	if err := v.c.client.Get(ctx, v.path("/agent/network-get-interfaces"), &res); err != nil {
		return nil, "", err
	}
	mac := primaryMAC(conf, s)
	var primary4, primary6, any4, any6 string
	for _, ifc := range res.Result {
		onPrimary := mac != "" && strings.EqualFold(ifc.HardwareAdr, mac)
		for _, a := range ifc.IPAddresses {
			addr, err := netip.ParseAddr(a.Address)
			if err != nil || addr.IsLoopback() || addr.IsLinkLocalUnicast() || addr.IsUnspecified() || addr.IsMulticast() {
				continue
			}
			ips = append(ips, addr.String())
			switch {
			case addr.Is4() && onPrimary && primary4 == "":
				primary4 = addr.String()
			case addr.Is6() && onPrimary && primary6 == "":
				primary6 = addr.String()
			case addr.Is4() && any4 == "":
				any4 = addr.String()
			case addr.Is6() && any6 == "":
				any6 = addr.String()
			}
		}
	}
	for _, c := range []string{primary4, primary6, any4, any6} {
		if c != "" {
			return ips, c, nil
		}
	}
	return nil, "", nil
}

// primaryMAC is the MAC of the VM's first network in the spec (else net0).
func primaryMAC(conf vmConfig, s *VMSpec) string {
	key := "net0"
	if s != nil && len(s.Networks) > 0 {
		key = s.Networks[0].Name
	}
	return parseNet(conf[key]).MAC
}

// waitForIP polls the guest agent with backoff until it reports a usable
// address or Timeouts.GuestAgent passes. An agent that is not configured
// fails at once with advice; a VM that stopped fails at once.
func (p *Provider) waitForIP(ctx context.Context, v vmRef, conf vmConfig, s *VMSpec) ([]string, string, error) {
	timeout := p.cfg.Timeouts.GuestAgent
	deadline := time.Now().Add(timeout)
	b := pollPolicy(p.tune.AgentMin, p.tune.AgentMax).Start()
	step := ""
	report := func(msg string) {
		if msg != step {
			step = msg
			registry.CallOf(ctx).ReportStep(msg)
		}
	}
	var last string
	began := time.Now()
	_ = backoff.Sleep(ctx, p.expected("agent-ip")) // ctx's end is handled below
	for {
		ips, ip, err := p.agentIPs(ctx, v, conf, s)
		switch classifyAgentErr(err) {
		case agentOK:
			if ip != "" {
				p.learn("agent-ip", time.Since(began))
				return ips, ip, nil
			}
			report("waiting for an IP address (the guest has only loopback or link-local addresses)")
			last = "the guest reported only loopback or link-local addresses"
		case agentNotConfigured:
			return nil, "", errcode.New(errcode.Invalid, fmt.Sprintf("VM %d has no QEMU guest agent configured, so its address cannot be discovered: "+
				"set spec.agent.enabled: true (and run qemu-guest-agent in the image) or give a static spec.cloudInit.ipConfig.net0.ip", v.vmid))
		case agentVMNotRunning:
			return nil, "", errcode.New(errcode.Internal, fmt.Sprintf("VM %d stopped while openctl waited for its address", v.vmid))
		case agentNotRunning:
			report("waiting for guest agent")
			last = "the QEMU guest agent did not answer (is qemu-guest-agent installed and enabled in the image?)"
		default:
			cerr := classify(err)
			if !isTransient(cerr) {
				return nil, "", fmt.Errorf("asking the guest agent for addresses: %w", cerr)
			}
			last = cerr.Error()
		}
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		interval := b.Next()
		if time.Now().Add(interval).After(deadline) {
			return nil, "", errcode.New(errcode.Transient, fmt.Sprintf("VM %d has no address after %s: %s", v.vmid, timeout, last))
		}
		if err := backoff.Sleep(ctx, interval); err != nil {
			return nil, "", err
		}
	}
}

// hostKeyPath is where the VM's ED25519 SSH host key is read from.
const hostKeyPath = "/etc/ssh/ssh_host_ed25519_key.pub"

// hostKey reads the guest's SSH host key through the agent's file-read,
// best effort: "" when the agent cannot read it (or the token may not).
func (p *Provider) hostKey(ctx context.Context, v vmRef) string {
	var res struct {
		Content   string `json:"content"`
		Truncated bool   `json:"truncated"`
	}
	q := url.Values{"file": {hostKeyPath}}
	if err := v.c.client.Get(ctx, v.path("/agent/file-read?"+q.Encode()), &res); err != nil || res.Truncated {
		return ""
	}
	key := strings.TrimSpace(res.Content)
	if !strings.HasPrefix(key, "ssh-") || strings.Contains(key, "\n") {
		return ""
	}
	return key
}
