//go:build !linux

package standin

import (
	"errors"
	"net"
	"net/netip"
)

var errVIPUnsupported = errors.New("standin: the kube-vip emulation needs Linux (rtnetlink, AF_PACKET)")

func addrChange(int, netip.Prefix, bool) error         { return errVIPUnsupported }
func hasAddr(*net.Interface, netip.Addr) (bool, error) { return false, errVIPUnsupported }
func gratuitousARP(*net.Interface, netip.Addr) error   { return errVIPUnsupported }
