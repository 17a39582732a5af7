package standin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The VIP's address and its announcements, on Linux: RTM_NEWADDR and
// RTM_DELADDR over an rtnetlink socket (what `ip addr add|del` sends), and
// gratuitous ARP on an AF_PACKET socket. Both need CAP_NET_ADMIN /
// CAP_NET_RAW in the network namespace, as kube-vip's container has.

// addrChange adds (add=true) or deletes pfx on the interface with index
// ifindex. Adding an address that is there, or deleting one that is not,
// is not an error.
func addrChange(ifindex int, pfx netip.Prefix, add bool) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("standin: netlink socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("standin: netlink bind: %w", err)
	}
	// Replies time out rather than block forever.
	tv := unix.NsecToTimeval(int64(5 * time.Second))
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)

	addr := pfx.Addr().AsSlice()
	family := unix.AF_INET
	if pfx.Addr().Is6() {
		family = unix.AF_INET6
	}
	typ, flags := uint16(unix.RTM_DELADDR), uint16(unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	if add {
		typ, flags = unix.RTM_NEWADDR, flags|unix.NLM_F_CREATE|unix.NLM_F_EXCL
	}
	attr := func(t uint16, data []byte) []byte {
		n := unix.SizeofRtAttr + len(data)
		b := make([]byte, (n+3)&^3)
		binary.NativeEndian.PutUint16(b[0:], uint16(n))
		binary.NativeEndian.PutUint16(b[2:], t)
		copy(b[unix.SizeofRtAttr:], data)
		return b
	}
	body := make([]byte, unix.SizeofIfAddrmsg)
	body[0] = byte(family)
	body[1] = byte(pfx.Bits())
	body[2] = 0 // flags
	body[3] = unix.RT_SCOPE_UNIVERSE
	binary.NativeEndian.PutUint32(body[4:], uint32(ifindex))
	body = append(body, attr(unix.IFA_LOCAL, addr)...)
	body = append(body, attr(unix.IFA_ADDRESS, addr)...)
	const seq = 1
	msg := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+len(body))
	binary.NativeEndian.PutUint32(msg[0:], uint32(unix.SizeofNlMsghdr+len(body)))
	binary.NativeEndian.PutUint16(msg[4:], typ)
	binary.NativeEndian.PutUint16(msg[6:], flags)
	binary.NativeEndian.PutUint32(msg[8:], seq)
	msg = append(msg, body...)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("standin: netlink send: %w", err)
	}
	buf := make([]byte, 8192)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return fmt.Errorf("standin: netlink receive: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return fmt.Errorf("standin: netlink: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != seq || m.Header.Type != unix.NLMSG_ERROR {
				continue
			}
			if len(m.Data) < 4 {
				return errors.New("standin: netlink: short error message")
			}
			errno := -int32(binary.NativeEndian.Uint32(m.Data[0:4]))
			switch {
			case errno == 0:
				return nil
			case add && unix.Errno(errno) == unix.EEXIST:
				return nil
			case !add && unix.Errno(errno) == unix.EADDRNOTAVAIL:
				return nil
			}
			return unix.Errno(errno)
		}
	}
}

// hasAddr reports whether ifi carries addr.
func hasAddr(ifi *net.Interface, addr netip.Addr) (bool, error) {
	addrs, err := ifi.Addrs()
	if err != nil {
		return false, err
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if x, ok := netip.AddrFromSlice(ipn.IP); ok && x.Unmap() == addr {
				return true, nil
			}
		}
	}
	return false, nil
}

// gratuitousARP broadcasts two ARP frames on ifi announcing that addr (an
// IPv4 address) is at ifi's hardware address: an ARP announcement (a
// request whose sender and target IP are both addr, RFC 5227) and a
// gratuitous reply. Neighbours that already have an entry for addr update
// it; this is what lets peers reach a VIP that moved to another machine
// without waiting for their entry to expire.
func gratuitousARP(ifi *net.Interface, addr netip.Addr) error {
	if !addr.Is4() {
		return fmt.Errorf("standin: gratuitous ARP: %s is not IPv4", addr)
	}
	if len(ifi.HardwareAddr) != 6 {
		return fmt.Errorf("standin: gratuitous ARP: %s has no Ethernet address", ifi.Name)
	}
	proto := htons(unix.ETH_P_ARP)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(proto))
	if err != nil {
		return fmt.Errorf("standin: gratuitous ARP: socket: %w", err)
	}
	defer unix.Close(fd)
	bcast := [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	sa := &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifi.Index, Halen: 6, Addr: bcast}
	ip := addr.As4()
	for _, op := range []uint16{1, 2} { // request (announcement), reply
		f := make([]byte, 60) // the Ethernet minimum, zero-padded
		copy(f[0:6], bcast[:6])
		copy(f[6:12], ifi.HardwareAddr)
		binary.BigEndian.PutUint16(f[12:], unix.ETH_P_ARP)
		a := f[14:]
		binary.BigEndian.PutUint16(a[0:], 1)             // hardware type: Ethernet
		binary.BigEndian.PutUint16(a[2:], unix.ETH_P_IP) // protocol type: IPv4
		a[4], a[5] = 6, 4
		binary.BigEndian.PutUint16(a[6:], op)
		copy(a[8:14], ifi.HardwareAddr) // sender hardware address
		copy(a[14:18], ip[:])           // sender IP
		if op == 2 {
			copy(a[18:24], bcast[:6]) // target hardware address of a gratuitous reply
		}
		copy(a[24:28], ip[:]) // target IP
		if err := unix.Sendto(fd, f, 0, sa); err != nil {
			return fmt.Errorf("standin: gratuitous ARP on %s: %w", ifi.Name, err)
		}
	}
	return nil
}

// htons is v in network byte order, as AF_PACKET wants the protocol.
func htons(v uint16) uint16 {
	return binary.NativeEndian.Uint16(binary.BigEndian.AppendUint16(nil, v))
}
