package vmhost

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
)

// addrMu guards every host's addresses once New has returned: they
// change at run time through AddAddress and RemoveAddress (a VIP taken
// and let go by kube-vip).
var addrMu sync.RWMutex

// Addresses returns the host's addresses, lo's first, as `ip addr`
// lists them.
func (h *Host) Addresses() []Address {
	addrMu.RLock()
	defer addrMu.RUnlock()
	return slices.Clone(h.addrs)
}

// AddAddress adds a to the host's interface a.Interface, as `ip addr
// add` does: an interface not there yet is made (index: the next free
// one, unless a.Index is set). Adding an address the interface already
// has is an error ("RTNETLINK answers: File exists").
func (h *Host) AddAddress(a Address) error {
	if !a.Prefix.IsValid() || a.Interface == "" {
		return fmt.Errorf("vmhost: add address: want an interface and a prefix, got %q %v", a.Interface, a.Prefix)
	}
	addrMu.Lock()
	defer addrMu.Unlock()
	maxIndex := 0
	for _, old := range h.addrs {
		if old.Interface == a.Interface && old.Prefix.Addr() == a.Prefix.Addr() {
			return fmt.Errorf("vmhost: add %s to %s: RTNETLINK answers: File exists", a.Prefix, a.Interface)
		}
		if old.Interface == a.Interface && a.Index == 0 {
			a.Index = old.Index
		}
		maxIndex = max(maxIndex, old.Index)
	}
	if a.Index == 0 {
		a.Index = maxIndex + 1
	}
	// After the interface's last address, as the kernel lists a
	// secondary address.
	at := len(h.addrs)
	for i, old := range h.addrs {
		if old.Interface == a.Interface {
			at = i + 1
		}
	}
	h.addrs = slices.Insert(slices.Clone(h.addrs), at, a)
	return nil
}

// RemoveAddress removes addr from the host's interface iface, as `ip
// addr del` does; an address the interface does not have is an error
// ("RTNETLINK answers: Cannot assign requested address").
func (h *Host) RemoveAddress(iface string, addr netip.Addr) error {
	addrMu.Lock()
	defer addrMu.Unlock()
	i := slices.IndexFunc(h.addrs, func(a Address) bool { return a.Interface == iface && a.Prefix.Addr() == addr })
	if i < 0 {
		return fmt.Errorf("vmhost: del %s from %s: RTNETLINK answers: Cannot assign requested address", addr, iface)
	}
	h.addrs = slices.Delete(slices.Clone(h.addrs), i, i+1)
	return nil
}

// progIP is `ip [-o] [-4|-6] addr [show|list] [dev IFACE] [to PREFIX]`,
// printing the host's addresses the way iproute2 does (one line each
// with -o). Links, routes and changes are not simulated.
func progIP(_ context.Context, c *Call) int {
	args := c.Args[1:]
	oneline, family := false, 0
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-o", "-oneline":
			oneline = true
		case "-4":
			family = 4
		case "-6":
			family = 6
		case "-br", "-brief", "-j", "-json":
			fmt.Fprintf(c.Stderr, "ip: option \"%s\" is not supported by this host\n", args[0])
			return 255
		default:
			fmt.Fprintf(c.Stderr, "Option \"%s\" is unknown, try \"ip -help\".\n", args[0])
			return 255
		}
		args = args[1:]
	}
	if len(args) == 0 || !isPrefixOf(args[0], "address") {
		obj := "help"
		if len(args) > 0 {
			obj = args[0]
		}
		fmt.Fprintf(c.Stderr, "Object \"%s\" is unknown or not simulated, try \"ip help\".\n", obj)
		return 255
	}
	args = args[1:]
	if len(args) > 0 && (isPrefixOf(args[0], "show") || isPrefixOf(args[0], "list")) {
		args = args[1:]
	}
	var dev string
	var to *netip.Prefix
	for len(args) > 0 {
		switch {
		case args[0] == "dev" && len(args) > 1:
			dev, args = args[1], args[2:]
		case args[0] == "to" && len(args) > 1:
			p, err := parsePrefix(args[1])
			if err != nil {
				fmt.Fprintf(c.Stderr, "Error: any valid prefix is expected rather than \"%s\".\n", args[1])
				return 1
			}
			to, args = &p, args[2:]
		case len(args) == 1:
			dev, args = args[0], nil
		default:
			fmt.Fprintf(c.Stderr, "Error: either \"dev\" is duplicate, or \"%s\" is a garbage.\n", args[0])
			return 1
		}
	}
	addrs := c.Host.Addresses()
	if dev != "" && !hasInterface(addrs, dev) {
		fmt.Fprintf(c.Stderr, "Device \"%s\" does not exist.\n", dev)
		return 1
	}
	lastIface := ""
	for _, a := range addrs {
		addr := a.Prefix.Addr()
		switch {
		case dev != "" && a.Interface != dev,
			family == 4 && !addr.Is4(), family == 6 && !addr.Is6(),
			to != nil && !(to.Addr().BitLen() == addr.BitLen() && to.Contains(addr)):
			continue
		}
		inet := "inet"
		if addr.Is6() {
			inet = "inet6"
		}
		detail := a.Prefix.String()
		if addr.Is4() && a.Prefix.Bits() < 31 && !addr.IsLoopback() {
			detail += " brd " + broadcast(a.Prefix).String()
		}
		scope := "global"
		if addr.IsLoopback() {
			scope = "host"
		} else if addr.IsLinkLocalUnicast() {
			scope = "link"
		}
		detail += " scope " + scope
		if addr.Is4() {
			detail += " " + a.Interface
		} else {
			detail += " "
		}
		if oneline {
			fmt.Fprintf(c.Stdout, "%d: %s    %s %s\\       valid_lft forever preferred_lft forever\n", a.Index, a.Interface, inet, detail)
			continue
		}
		if a.Interface != lastIface {
			lastIface = a.Interface
			if a.Interface == "lo" {
				fmt.Fprintf(c.Stdout, "%d: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000\n    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n", a.Index)
			} else {
				fmt.Fprintf(c.Stdout, "%d: %s: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc fq_codel state UP group default qlen 1000\n    link/ether %s brd ff:ff:ff:ff:ff:ff\n", a.Index, a.Interface, mac(a.Index))
			}
		}
		fmt.Fprintf(c.Stdout, "    %s %s\n       valid_lft forever preferred_lft forever\n", inet, strings.TrimSuffix(detail, " "))
	}
	return 0
}

// isPrefixOf reports whether s abbreviates word, as iproute2 accepts
// ("a", "addr", "address").
func isPrefixOf(s, word string) bool { return s != "" && strings.HasPrefix(word, s) }

// parsePrefix parses ADDR or ADDR/BITS.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		return netip.ParsePrefix(s)
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func hasInterface(addrs []Address, name string) bool {
	for _, a := range addrs {
		if a.Interface == name {
			return true
		}
	}
	return false
}

// broadcast is an IPv4 prefix's broadcast address.
func broadcast(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	for i := p.Bits(); i < 32; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	return netip.AddrFrom4(b)
}

// mac is a made-up, stable MAC address for interface index i.
func mac(i int) string { return fmt.Sprintf("52:54:00:00:00:%02x", i&0xff) }
