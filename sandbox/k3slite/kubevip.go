package k3slite

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/openctl/openctl/internal/k3semu"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// manifestPoll is how often server/manifests is read (or the pod sync
// interval when that is shorter).
const manifestPoll = time.Second

// watchManifests runs kube-vip from server/manifests (k3semu.KubeVIPWatch)
// on h until ctx ends: the VIP goes on the simulated host's interface,
// and its leader listens on the VIP, passing connections to apiHost (its
// own API).
func (n *Network) watchManifests(ctx context.Context, h *vmhost.Host, dir, node string, nodeIP net.IP, apiHost string, client kubernetes.Interface, log *slog.Logger) {
	w := &k3semu.KubeVIPWatch{
		FS: hostFS{h: h}, Dir: dir, Node: node, NodeIP: nodeIP, Client: client, Log: log,
		Net:  hostVIPNet{h},
		Poll: min(manifestPoll, n.opts.PodSyncInterval),
		Listen: func(cfg k3semu.KubeVIPConfig) (io.Closer, error) {
			return n.listenVIP(cfg.Address, cfg.Port, apiHost, node)
		},
		Released: n.vipReleased,
	}
	w.Run(ctx)
}

// hostVIPNet is a simulated host's network as kube-vip changes it.
type hostVIPNet struct{ h *vmhost.Host }

// Iface finds the interface by name, or the one holding nodeIP.
func (v hostVIPNet) Iface(name string, nodeIP net.IP) (k3semu.VIPIface, error) {
	for _, a := range v.h.Addresses() {
		if (name != "" && a.Interface == name) || (name == "" && net.IP(a.Prefix.Addr().AsSlice()).Equal(nodeIP)) {
			return k3semu.VIPIface{Name: a.Interface, Index: a.Index, HardwareAddr: fmt.Sprintf("52:54:00:00:00:%02x", a.Index&0xff)}, nil
		}
	}
	if name != "" {
		return k3semu.VIPIface{}, fmt.Errorf("vip_interface %s: route ip+net: no such network interface", name)
	}
	return k3semu.VIPIface{}, fmt.Errorf("no vip_interface and no interface holds the node IP %s", nodeIP)
}

// HasAddr reports whether ifi carries addr.
func (v hostVIPNet) HasAddr(ifi k3semu.VIPIface, addr netip.Addr) (bool, error) {
	for _, a := range v.h.Addresses() {
		if a.Interface == ifi.Name && a.Prefix.Addr() == addr {
			return true, nil
		}
	}
	return false, nil
}

// AddAddr puts p on ifi.
func (v hostVIPNet) AddAddr(ifi k3semu.VIPIface, p netip.Prefix) error {
	return v.h.AddAddress(vmhost.Address{Interface: ifi.Name, Prefix: p})
}

// RemoveAddr takes p off ifi.
func (v hostVIPNet) RemoveAddr(ifi k3semu.VIPIface, p netip.Prefix) error {
	return v.h.RemoveAddress(ifi.Name, p.Addr())
}

// Announce does nothing: the simulated network has no ARP caches; the
// round is logged.
func (hostVIPNet) Announce(k3semu.VIPIface, netip.Addr) error { return nil }
