package standin

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/openctl/openctl/internal/k3semu"
)

// manifestPoll is how often server/manifests is read.
const manifestPoll = time.Second

// kubeVIPAnnouncements is how many gratuitous ARP rounds follow taking the
// VIP, one per retry period.
const kubeVIPAnnouncements = 3

// watchManifests polls dir (server/manifests) until ctx ends. Every file
// k3s would apply (*.yaml, *.yml, *.json, subdirectories included) is recorded in the log when it
// appears, changes or goes; the stand-in applies none of them. While one
// of them holds kube-vip (k3semu.ParseKubeVIP) with cp_enable and
// vip_leaderelection, it runs the kube-vip emulation (kubeVIP) with that
// configuration: a changed configuration restarts it, a removed manifest
// stops it (releasing the VIP and the Lease). It returns after stopping
// the emulation, so the caller keeps the API up until then.
func watchManifests(ctx context.Context, dir, node string, nodeIP net.IP, client kubernetes.Interface, log *slog.Logger) {
	type parsed struct {
		sum [32]byte
		cfg k3semu.KubeVIPConfig
		err error
	}
	seen := map[string]parsed{}
	var (
		running  bool
		current  k3semu.KubeVIPConfig
		stop     context.CancelFunc
		done     chan struct{}
		warnedOn k3semu.KubeVIPConfig
		dirErr   string // the last error reading dir, logged once
	)
	halt := func() {
		if running {
			stop()
			<-done
			running = false
		}
	}
	defer halt()
	tick := time.NewTicker(manifestPoll)
	defer tick.Stop()
	for {
		files, err := manifestFiles(dir)
		if msg := fmt.Sprint(err); err != nil && msg != dirErr {
			log.Warn("reading manifests", "dir", dir, "err", err)
			dirErr = msg
		} else if err == nil {
			dirErr = ""
		}
		var (
			want  k3semu.KubeVIPConfig
			from  string
			found bool
		)
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				continue // removed meanwhile; seen next round
			}
			sum := sha256.Sum256(data)
			p, ok := seen[f]
			if !ok || p.sum != sum {
				prev := p
				p = parsed{sum: sum}
				p.cfg, p.err = k3semu.ParseKubeVIP(data)
				log.Info("Recorded manifest " + f + " (the k3s stand-in does not apply manifests)")
				if p.err != nil && !errors.Is(p.err, k3semu.ErrNoKubeVIP) {
					log.Error(fmt.Sprintf("kube-vip: %s: %v", f, p.err))
					// k3s fails to apply such a file and leaves what it
					// applied before running.
					if ok && prev.err == nil {
						p.cfg, p.err = prev.cfg, nil
						log.Warn("kube-vip: " + f + ": keeping the configuration read before")
					}
				}
				seen[f] = p
			}
			if p.err != nil {
				continue
			}
			if !found {
				want, from, found = p.cfg, f, true
			} else if !ok || p.sum != sum {
				log.Warn("kube-vip: " + f + " ignored: " + from + " already configures kube-vip")
			}
		}
		for f := range seen {
			if !slices.Contains(files, f) {
				delete(seen, f)
				log.Info("Manifest " + f + " removed")
			}
		}
		if found && (!want.ControlPlane || !want.LeaderElection) {
			if want != warnedOn {
				warnedOn = want
				log.Warn("kube-vip: " + from + ": only the control-plane VIP with leader election (cp_enable and vip_leaderelection true) is emulated; not starting it")
			}
			found = false
		}
		if running && (!found || want != current) {
			log.Info("kube-vip: configuration removed or changed; stopping")
			halt()
		}
		if found && !running {
			kctx, cancel := context.WithCancel(ctx)
			k := &kubeVIP{cfg: want, node: node, nodeIP: nodeIP, client: client, log: log}
			running, current, stop, done = true, want, cancel, make(chan struct{})
			log.Info(fmt.Sprintf("kube-vip: starting from %s: VIP %s on %s, port %d, leader election through Lease %s/%s (lease %s, renew deadline %s, retry %s)",
				from, want.Prefix(), k.ifaceName(), want.Port, want.Namespace, want.LeaseName, want.LeaseDuration, want.RenewDeadline, want.RetryPeriod))
			go func(done chan struct{}) {
				defer close(done)
				k.run(kctx)
			}(done)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// manifestFiles lists the files under dir, subdirectories included, that
// k3s's deploy controller reads, in lexical order.
func manifestFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // a subdirectory that went away meanwhile
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			if d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0 {
				out = append(out, p)
			}
		}
		return nil
	})
	return out, err
}

// kubeVIP emulates kube-vip's control-plane mode on one server: leader
// election through a coordination.k8s.io/v1 Lease (client-go's
// leaderelection, as kube-vip uses it; identity: the node name), and on
// the leader the VIP on the interface plus gratuitous ARP. Losing the
// lease or stopping removes the VIP. Its methods are safe for concurrent
// use; run is called once.
type kubeVIP struct {
	cfg    k3semu.KubeVIPConfig
	node   string
	nodeIP net.IP
	client kubernetes.Interface
	log    *slog.Logger

	mu        sync.Mutex // guards the fields below
	leading   bool       // between OnStartedLeading and OnStoppedLeading
	term      int        // counts OnStartedLeading calls
	stopping  bool       // run's ctx ended: never add the VIP again
	announced int        // gratuitous ARP rounds since the VIP was added
	lastErr   string     // the last error logged, to log each error once
}

// run elects until ctx ends, then removes the VIP and releases the Lease
// (in that order, so that the next leader never overlaps with this one).
func (k *kubeVIP) run(ctx context.Context) {
	k.mu.Lock()
	k.removeLocked("it is left from an earlier run and this node is not the leader")
	k.mu.Unlock()
	// The elector outlives ctx by the release of the Lease.
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ectx.Err() == nil {
			le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
				Lock: &resourcelock.LeaseLock{
					LeaseMeta:  metav1.ObjectMeta{Namespace: k.cfg.Namespace, Name: k.cfg.LeaseName},
					Client:     k.client.CoordinationV1(),
					LockConfig: resourcelock.ResourceLockConfig{Identity: k.node},
				},
				LeaseDuration:   k.cfg.LeaseDuration,
				RenewDeadline:   k.cfg.RenewDeadline,
				RetryPeriod:     k.cfg.RetryPeriod,
				ReleaseOnCancel: true,
				Name:            "kube-vip",
				Callbacks: leaderelection.LeaderCallbacks{
					OnStartedLeading: k.lead,
					OnStoppedLeading: k.stopLeading,
					OnNewLeader: func(id string) {
						if id != k.node {
							k.log.Info("kube-vip: node " + id + " is the leader")
						}
					},
				},
			})
			if err != nil {
				k.log.Error("kube-vip: " + err.Error())
				return
			}
			le.Run(ectx)
			// kube-vip exits when it loses the lease and its pod restarts;
			// here the election starts again after a retry period.
			select {
			case <-ectx.Done():
			case <-time.After(k.cfg.RetryPeriod):
			}
		}
	}()
	<-ctx.Done()
	k.mu.Lock()
	k.stopping = true
	k.removeLocked("kube-vip is stopping")
	k.mu.Unlock()
	cancel()
	<-done
}

// lead holds the VIP while lctx lasts: added at once, checked every retry
// period (and put back if it went missing), announced by gratuitous ARP
// kubeVIPAnnouncements times.
func (k *kubeVIP) lead(lctx context.Context) {
	k.mu.Lock()
	if lctx.Err() != nil { // the term ended before this callback ran
		k.mu.Unlock()
		return
	}
	k.term++
	term := k.term
	k.leading = true
	k.announced = 0
	k.mu.Unlock()
	k.log.Info(fmt.Sprintf("kube-vip: this node is the leader, adding %s to %s", k.cfg.Prefix(), k.ifaceName()))
	t := time.NewTicker(k.cfg.RetryPeriod)
	defer t.Stop()
	for {
		k.ensure()
		select {
		case <-lctx.Done():
			// Normally stopLeading has already removed the VIP; this
			// covers a term that ended while ensure was adding it.
			k.mu.Lock()
			if k.term == term && k.leading {
				k.leading = false
				k.removeLocked("this node is no longer the leader")
			}
			k.mu.Unlock()
			return
		case <-t.C:
		}
	}
}

// stopLeading is called whenever an election ends, led or not.
func (k *kubeVIP) stopLeading() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.leading {
		k.leading = false
		k.removeLocked("this node is no longer the leader")
	}
}

// ensure puts the VIP on the interface if this node leads and it is not
// there, and sends the pending announcements.
func (k *kubeVIP) ensure() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.leading || k.stopping {
		return
	}
	ifi, err := k.iface()
	if err != nil {
		k.fail(err)
		return
	}
	has, err := hasAddr(ifi, k.cfg.Address)
	if err != nil {
		k.fail(fmt.Errorf("reading the addresses of %s: %w", ifi.Name, err))
		return
	}
	if !has {
		if err := addrChange(ifi.Index, k.cfg.Prefix(), true); err != nil {
			k.fail(fmt.Errorf("adding %s to %s: %w", k.cfg.Prefix(), ifi.Name, err))
			return
		}
		k.announced = 0
		k.log.Info(fmt.Sprintf("kube-vip: added %s to %s", k.cfg.Prefix(), ifi.Name))
	}
	if k.cfg.ARP && k.announced < kubeVIPAnnouncements {
		if !k.cfg.Address.Is4() {
			k.announced = kubeVIPAnnouncements
			k.log.Warn("kube-vip: IPv6 neighbour advertisements are not emulated")
			return
		}
		if err := gratuitousARP(ifi, k.cfg.Address); err != nil {
			k.fail(err)
			return
		}
		k.announced++
		k.log.Info(fmt.Sprintf("kube-vip: gratuitous ARP %d/%d: %s is at %s on %s", k.announced, kubeVIPAnnouncements, k.cfg.Address, ifi.HardwareAddr, ifi.Name))
	}
	k.lastErr = ""
}

// removeLocked takes the VIP off the interface if it is there. Call with
// k.mu held.
func (k *kubeVIP) removeLocked(why string) {
	ifi, err := k.iface()
	if err != nil {
		return // no interface, no VIP on it
	}
	has, err := hasAddr(ifi, k.cfg.Address)
	if err != nil || !has {
		return
	}
	k.log.Info(fmt.Sprintf("kube-vip: removing %s from %s: %s", k.cfg.Prefix(), ifi.Name, why))
	if err := addrChange(ifi.Index, k.cfg.Prefix(), false); err != nil {
		k.fail(fmt.Errorf("removing %s from %s: %w", k.cfg.Prefix(), ifi.Name, err))
	}
}

// fail logs err unless it is the error logged last. Call with k.mu held.
func (k *kubeVIP) fail(err error) {
	msg := err.Error()
	if msg != k.lastErr {
		k.lastErr = msg
		k.log.Error("kube-vip: " + msg + " (retrying)")
	}
	if f := kubeVIPFailed.Load(); f != nil {
		(*f)(msg)
	}
}

// kubeVIPFailed, when set, is told of every failure of the emulation,
// logged or not: how a test sees retries that log nothing.
var kubeVIPFailed atomic.Pointer[func(msg string)]

// iface is vip_interface, or without one the interface that holds the
// node IP (kube-vip itself picks the default route's).
func (k *kubeVIP) iface() (*net.Interface, error) {
	if k.cfg.Interface != "" {
		ifi, err := net.InterfaceByName(k.cfg.Interface)
		if err != nil {
			return nil, fmt.Errorf("vip_interface %s: %w", k.cfg.Interface, err)
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
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.Equal(k.nodeIP) {
				return &ifs[i], nil
			}
		}
	}
	return nil, fmt.Errorf("no vip_interface and no interface holds the node IP %s", k.nodeIP)
}

// ifaceName names the interface for the logs.
func (k *kubeVIP) ifaceName() string {
	if k.cfg.Interface != "" {
		return k.cfg.Interface
	}
	if ifi, err := k.iface(); err == nil {
		return ifi.Name
	}
	return "the node IP's interface"
}
