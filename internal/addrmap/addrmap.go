// Package addrmap moves IPv4 addresses into a prefix, keeping their host
// bits: how the K3s provider's addressMap option (and the sandbox, whose
// hosts live on loopback addresses) turns a LAN's addresses into ones on
// another network without root.
package addrmap

import "net/netip"

// Into returns the map that moves IPv4 addresses into prefix p, keeping
// their host bits: with 127.80.0.0/16, 192.168.1.50 becomes 127.80.1.50.
// Loopback and IPv6 addresses are kept, so mapping twice changes nothing
// more.
func Into(p netip.Prefix) func(netip.Addr) netip.Addr {
	p = p.Masked()
	return func(a netip.Addr) netip.Addr {
		if !a.Is4() || a.IsLoopback() || !p.Addr().Is4() {
			return a
		}
		n, b := p.Addr().As4(), a.As4()
		for i := range 4 {
			bits := min(max(p.Bits()-8*i, 0), 8)
			mask := byte(0xff << (8 - bits))
			b[i] = n[i]&mask | b[i]&^mask
		}
		return netip.AddrFrom4(b)
	}
}
