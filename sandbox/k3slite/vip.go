package k3slite

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// vipHold is who holds a VIP on the network.
type vipHold struct {
	node string
}

// vipProxy is a VIP's listener: it forwards every connection, TLS and
// all, to the holder's own API port, so the VIP answers with the
// holder's certificate as kube-vip's VIP on the holder's interface does.
type vipProxy struct {
	n    *Network
	key  string
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	open map[net.Conn]bool
}

// listenVIP starts listening on vip:port for node, forwarding to target.
func (n *Network) listenVIP(vip netip.Addr, port int, target, node string) (*vipProxy, error) {
	key := net.JoinHostPort(vip.String(), strconv.Itoa(port))
	n.mu.Lock()
	if h, ok := n.vips[key]; ok && h.node != node {
		n.mu.Unlock()
		return nil, fmt.Errorf("listen %s: node %s still holds it", key, h.node)
	}
	n.vips[key] = &vipHold{node: node}
	n.mu.Unlock()
	ln, err := net.Listen("tcp", key)
	if err != nil {
		n.mu.Lock()
		delete(n.vips, key)
		n.mu.Unlock()
		return nil, err
	}
	p := &vipProxy{n: n, key: key, ln: ln, open: map[net.Conn]bool{}}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.forward(c, target)
			}()
		}
	}()
	return p, nil
}

func (p *vipProxy) track(c net.Conn, on bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open == nil {
		return false
	}
	if on {
		p.open[c] = true
	} else {
		delete(p.open, c)
	}
	return true
}

func (p *vipProxy) forward(c net.Conn, target string) {
	defer c.Close()
	if !p.track(c, true) {
		return
	}
	defer p.track(c, false)
	up, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	if !p.track(up, true) {
		return
	}
	defer p.track(up, false)
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); done <- struct{}{} }()
	go func() { io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// Close stops listening and drops the connections through the VIP, as a
// VIP leaving the interface does.
func (p *vipProxy) Close() error {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.open {
		c.Close()
	}
	p.open = nil
	p.mu.Unlock()
	p.wg.Wait()
	p.n.mu.Lock()
	delete(p.n.vips, p.key)
	if p.n.vipFreed != nil {
		close(p.n.vipFreed)
		p.n.vipFreed = nil
	}
	p.n.mu.Unlock()
	return nil
}

// vipReleased returns a channel closed the next time a holder lets a VIP
// go: a new leader waiting for the previous one's listener takes the VIP
// then, not a retry period later (kube-vip does not wait for the previous
// holder at all).
func (n *Network) vipReleased() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.vipFreed == nil {
		n.vipFreed = make(chan struct{})
	}
	return n.vipFreed
}

// VIPHolder returns the node whose kube-vip holds vip (port 6443 unless
// vip is host:port), or "" when none does.
func (n *Network) VIPHolder(vip string) string {
	if _, _, err := net.SplitHostPort(vip); err != nil {
		vip = net.JoinHostPort(vip, "6443")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if h, ok := n.vips[vip]; ok {
		return h.node
	}
	return ""
}
