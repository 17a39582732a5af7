package k3semu

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// kubeVIPAnnouncements is how many gratuitous ARP rounds follow taking the
// VIP, one per retry period.
const kubeVIPAnnouncements = 3

// VIPIface is a network interface the VIP goes on.
type VIPIface struct {
	Name         string
	Index        int
	HardwareAddr string // as the gratuitous ARP log line shows it
}

// VIPNet is the host network a kube-vip emulation changes: the real
// one through netlink (the stand-in) or a simulated host's (the sandbox).
type VIPNet interface {
	// Iface is the interface called name, or with an empty name the one
	// that holds nodeIP.
	Iface(name string, nodeIP net.IP) (VIPIface, error)
	// HasAddr reports whether ifi carries addr.
	HasAddr(ifi VIPIface, addr netip.Addr) (bool, error)
	// AddAddr and RemoveAddr put p on ifi and take it off.
	AddAddr(ifi VIPIface, p netip.Prefix) error
	RemoveAddr(ifi VIPIface, p netip.Prefix) error
	// Announce sends one round of gratuitous ARP for the IPv4 addr.
	Announce(ifi VIPIface, addr netip.Addr) error
}

// KubeVIPWatch runs kube-vip as k3s would from server/manifests: the
// manifests are polled, and while one holds kube-vip's control-plane
// mode with leader election (ParseKubeVIP), its emulation runs: leader
// election through a coordination.k8s.io/v1 Lease (client-go's
// leaderelection, as kube-vip uses it; identity: the node name), and on
// the leader the VIP on the interface plus gratuitous ARP.
type KubeVIPWatch struct {
	FS     FS
	Dir    string // server/manifests
	Node   string
	NodeIP net.IP
	Client kubernetes.Interface // the server's admin client
	Log    *slog.Logger
	Net    VIPNet
	// Poll is how often Dir is read.
	Poll time.Duration
	// Listen, when set, makes the leader listen on the VIP before the
	// address goes on the interface (the sandbox's proxy to its API); the
	// listener is closed when the VIP is taken off.
	Listen func(cfg KubeVIPConfig) (io.Closer, error)
	// Released, when set, gives a channel closed the next time another
	// holder lets a VIP go: a leader waiting for the previous one's
	// listener takes the VIP then, not a retry period later.
	Released func() <-chan struct{}
	// Failed, when set, is told of every failure of the emulation, logged
	// or not (each error is logged once until another one happens).
	Failed func(msg string)
}

// Run polls w.Dir until ctx ends. Every file k3s would apply (*.yaml,
// *.yml, *.json, subdirectories included) is recorded in the log when it
// appears, changes or goes; none is applied. While one of them holds
// kube-vip with cp_enable and vip_leaderelection, the emulation runs with
// that configuration: a changed configuration restarts it, a removed
// manifest stops it (releasing the VIP and the Lease). Run returns after
// stopping the emulation, so the caller keeps the API up until then.
func (w *KubeVIPWatch) Run(ctx context.Context) {
	log := w.Log
	type parsed struct {
		sum [32]byte
		cfg KubeVIPConfig
		err error
	}
	seen := map[string]parsed{}
	var (
		running  bool
		current  KubeVIPConfig
		stop     context.CancelFunc
		done     chan struct{}
		warnedOn KubeVIPConfig
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
	tick := time.NewTicker(w.Poll)
	defer tick.Stop()
	for {
		files, err := manifestFiles(w.FS, w.Dir)
		if msg := fmt.Sprint(err); err != nil && msg != dirErr {
			log.Warn("reading manifests", "dir", w.Dir, "err", err)
			dirErr = msg
		} else if err == nil {
			dirErr = ""
		}
		var (
			want  KubeVIPConfig
			from  string
			found bool
		)
		for _, file := range files {
			data, err := w.FS.ReadFile(file)
			if err != nil {
				continue // removed meanwhile; seen next round
			}
			sum := sha256.Sum256(data)
			p, ok := seen[file]
			if !ok || p.sum != sum {
				prev := p
				p = parsed{sum: sum}
				p.cfg, p.err = ParseKubeVIP(data)
				log.Info("Recorded manifest " + file + " (the k3s stand-in does not apply manifests)")
				if p.err != nil && !errors.Is(p.err, ErrNoKubeVIP) {
					log.Error(fmt.Sprintf("kube-vip: %s: %v", file, p.err))
					// k3s fails to apply such a file and leaves what it
					// applied before running.
					if ok && prev.err == nil {
						p.cfg, p.err = prev.cfg, nil
						log.Warn("kube-vip: " + file + ": keeping the configuration read before")
					}
				}
				seen[file] = p
			}
			if p.err != nil {
				continue
			}
			if !found {
				want, from, found = p.cfg, file, true
			} else if !ok || p.sum != sum {
				log.Warn("kube-vip: " + file + " ignored: " + from + " already configures kube-vip")
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
			k := &kubeVIP{w: w, cfg: want}
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
func manifestFiles(f FS, dir string) ([]string, error) {
	var out []string
	var walk func(d string, top bool) error
	walk = func(d string, top bool) error {
		ents, err := f.ReadDir(d)
		if err != nil {
			if top {
				return err
			}
			return nil // a subdirectory that went away meanwhile
		}
		for _, e := range ents {
			p := path.Join(d, e.Name())
			if e.IsDir() {
				walk(p, false)
				continue
			}
			switch strings.ToLower(path.Ext(p)) {
			case ".yaml", ".yml", ".json":
				if e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0 {
					out = append(out, p)
				}
			}
		}
		return nil
	}
	err := walk(dir, true)
	return out, err
}

// kubeVIP is one run of the emulation. Losing the lease or stopping
// removes the VIP. Its methods are safe for concurrent use; run is
// called once.
type kubeVIP struct {
	w   *KubeVIPWatch
	cfg KubeVIPConfig

	mu        sync.Mutex // guards the fields below
	leading   bool       // between OnStartedLeading and OnStoppedLeading
	term      int        // counts OnStartedLeading calls
	stopping  bool       // run's ctx ended: never add the VIP again
	announced int        // gratuitous ARP rounds since the VIP was added
	lastErr   string     // the last error logged, to log each error once
	listener  io.Closer  // the VIP's listener while this node holds it (with w.Listen)
}

// run elects until ctx ends, then removes the VIP and releases the Lease
// (in that order, so that the next leader never overlaps with this one).
func (k *kubeVIP) run(ctx context.Context) {
	k.mu.Lock()
	k.removeLocked("it is left from an earlier run and this node is not the leader")
	k.mu.Unlock()
	// The elector outlives ctx by the release of the Lease. kube-vip logs
	// in its own pod, not in k3s's journal.
	ectx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), logr.Discard()))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ectx.Err() == nil {
			le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
				Lock: &resourcelock.LeaseLock{
					LeaseMeta:  metav1.ObjectMeta{Namespace: k.cfg.Namespace, Name: k.cfg.LeaseName},
					Client:     k.w.Client.CoordinationV1(),
					LockConfig: resourcelock.ResourceLockConfig{Identity: k.w.Node},
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
						if id != k.w.Node {
							k.w.Log.Info("kube-vip: node " + id + " is the leader")
						}
					},
				},
			})
			if err != nil {
				k.w.Log.Error("kube-vip: " + err.Error())
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
	k.w.Log.Info(fmt.Sprintf("kube-vip: this node is the leader, adding %s to %s", k.cfg.Prefix(), k.ifaceName()))
	t := time.NewTicker(k.cfg.RetryPeriod)
	defer t.Stop()
	for {
		// Asked before ensure, so that a release while ensure waits for
		// it is not missed; waited for only while the VIP is not held.
		var freed <-chan struct{}
		if k.w.Released != nil {
			freed = k.w.Released()
		}
		if k.ensure() {
			freed = nil
		}
		select {
		case <-freed:
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
// there (listening on it first, with w.Listen), and sends the pending
// announcements. It reports whether this node holds the VIP, or is not
// to (not leading).
func (k *kubeVIP) ensure() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	held := k.ensureLocked()
	return held || !k.leading || k.stopping
}

func (k *kubeVIP) ensureLocked() bool {
	if !k.leading || k.stopping {
		return false
	}
	ifi, err := k.w.Net.Iface(k.cfg.Interface, k.w.NodeIP)
	if err != nil {
		k.fail(err)
		return false
	}
	// The listener first: the VIP appears on the interface once it
	// answers (a previous holder still listening makes this wait).
	if k.w.Listen != nil && k.listener == nil {
		l, err := k.w.Listen(k.cfg)
		if err != nil {
			k.fail(err)
			return false
		}
		k.listener = l
	}
	has, err := k.w.Net.HasAddr(ifi, k.cfg.Address)
	if err != nil {
		k.fail(fmt.Errorf("reading the addresses of %s: %w", ifi.Name, err))
		return false
	}
	if !has {
		if err := k.w.Net.AddAddr(ifi, k.cfg.Prefix()); err != nil {
			k.fail(fmt.Errorf("adding %s to %s: %w", k.cfg.Prefix(), ifi.Name, err))
			return false
		}
		k.announced = 0
		k.w.Log.Info(fmt.Sprintf("kube-vip: added %s to %s", k.cfg.Prefix(), ifi.Name))
	}
	if k.cfg.ARP && k.announced < kubeVIPAnnouncements {
		if !k.cfg.Address.Is4() {
			k.announced = kubeVIPAnnouncements
			k.w.Log.Warn("kube-vip: IPv6 neighbour advertisements are not emulated")
			return true
		}
		if err := k.w.Net.Announce(ifi, k.cfg.Address); err != nil {
			k.fail(err)
			return true
		}
		k.announced++
		k.w.Log.Info(fmt.Sprintf("kube-vip: gratuitous ARP %d/%d: %s is at %s on %s", k.announced, kubeVIPAnnouncements, k.cfg.Address, ifi.HardwareAddr, ifi.Name))
	}
	k.lastErr = ""
	return true
}

// removeLocked stops listening on the VIP and takes it off the interface
// if it is there. Call with k.mu held.
func (k *kubeVIP) removeLocked(why string) {
	if k.listener != nil {
		k.listener.Close()
		k.listener = nil
	}
	ifi, err := k.w.Net.Iface(k.cfg.Interface, k.w.NodeIP)
	if err != nil {
		return // no interface, no VIP on it
	}
	if has, err := k.w.Net.HasAddr(ifi, k.cfg.Address); err != nil || !has {
		return
	}
	k.w.Log.Info(fmt.Sprintf("kube-vip: removing %s from %s: %s", k.cfg.Prefix(), ifi.Name, why))
	if err := k.w.Net.RemoveAddr(ifi, k.cfg.Prefix()); err != nil {
		k.fail(fmt.Errorf("removing %s from %s: %w", k.cfg.Prefix(), ifi.Name, err))
	}
}

// fail logs err unless it is the error logged last. Call with k.mu held.
func (k *kubeVIP) fail(err error) {
	msg := err.Error()
	if msg != k.lastErr {
		k.lastErr = msg
		k.w.Log.Error("kube-vip: " + msg + " (retrying)")
	}
	if k.w.Failed != nil {
		k.w.Failed(msg)
	}
}

// ifaceName names the interface for the logs.
func (k *kubeVIP) ifaceName() string {
	if k.cfg.Interface != "" {
		return k.cfg.Interface
	}
	if ifi, err := k.w.Net.Iface("", k.w.NodeIP); err == nil {
		return ifi.Name
	}
	return "the node IP's interface"
}
