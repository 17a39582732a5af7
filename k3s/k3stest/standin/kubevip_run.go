package standin

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/openctl/openctl/internal/k3semu"
)

// watchManifests runs kube-vip from server/manifests
// (k3semu.KubeVIPWatch) until ctx ends: the VIP goes on this machine's
// interface through rtnetlink and is announced by gratuitous ARP.
func watchManifests(ctx context.Context, dir, node string, nodeIP net.IP, client kubernetes.Interface, log *slog.Logger) {
	w := &k3semu.KubeVIPWatch{FS: osFS, Dir: dir, Node: node, NodeIP: nodeIP, Client: client, Log: log,
		Net: linkVIPNet{}, Poll: time.Second}
	w.Run(ctx)
}

// linkVIPNet is this machine's network (kubevip_net_linux.go).
type linkVIPNet struct{}

// Iface is vip_interface, or without one the interface that holds the
// node IP (kube-vip itself picks the default route's).
func (linkVIPNet) Iface(name string, nodeIP net.IP) (k3semu.VIPIface, error) {
	ifi, err := findIface(name, nodeIP)
	if err != nil {
		return k3semu.VIPIface{}, err
	}
	return k3semu.VIPIface{Name: ifi.Name, Index: ifi.Index, HardwareAddr: ifi.HardwareAddr.String()}, nil
}

func findIface(name string, nodeIP net.IP) (*net.Interface, error) {
	if name != "" {
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			return nil, fmt.Errorf("vip_interface %s: %w", name, err)
		}
		return ifi, nil
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	for i := range ifs {
		addrs, err := ifs[i].Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.Equal(nodeIP) {
				return &ifs[i], nil
			}
		}
	}
	return nil, fmt.Errorf("no vip_interface and no interface holds the node IP %s", nodeIP)
}

// HasAddr reports whether ifi carries addr.
func (linkVIPNet) HasAddr(ifi k3semu.VIPIface, addr netip.Addr) (bool, error) {
	i, err := net.InterfaceByIndex(ifi.Index)
	if err != nil {
		return false, err
	}
	return hasAddr(i, addr)
}

// AddAddr puts p on ifi.
func (linkVIPNet) AddAddr(ifi k3semu.VIPIface, p netip.Prefix) error {
	return addrChange(ifi.Index, p, true)
}

// RemoveAddr takes p off ifi.
func (linkVIPNet) RemoveAddr(ifi k3semu.VIPIface, p netip.Prefix) error {
	return addrChange(ifi.Index, p, false)
}

// Announce sends the gratuitous ARP frames for addr on ifi.
func (linkVIPNet) Announce(ifi k3semu.VIPIface, addr netip.Addr) error {
	i, err := net.InterfaceByIndex(ifi.Index)
	if err != nil {
		return err
	}
	return gratuitousARP(i, addr)
}
