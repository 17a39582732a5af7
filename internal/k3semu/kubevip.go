package k3semu

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// KubeVIPConfig is what a kube-vip manifest asks of kube-vip's control-plane
// mode, read from its container's environment (kube-vip's own variable
// names; kv/docs: address, port, vip_interface, vip_arp, vip_subnet,
// cp_enable, cp_namespace, vip_leaderelection, vip_leasename and the three
// lease timings). It is comparable with ==, which is how the twins see
// that a rewritten manifest changed. Safe for concurrent use (a value).
type KubeVIPConfig struct {
	Address        netip.Addr // address (or vip_address): the VIP
	Subnet         int        // vip_subnet (or vip_cidr): prefix length; default 32 (IPv4) or 128 (IPv6)
	Port           int        // port: default 6443
	Interface      string     // vip_interface; empty: the interface holding the node IP
	ARP            bool       // vip_arp: gratuitous ARP on taking the VIP
	ControlPlane   bool       // cp_enable: the control-plane VIP
	Services       bool       // svc_enable: Service load-balancing (not emulated)
	Namespace      string     // cp_namespace: the Lease's namespace; default kube-system
	LeaderElection bool       // vip_leaderelection
	LeaseName      string     // vip_leasename: default plndr-cp-lock
	LeaseDuration  time.Duration
	RenewDeadline  time.Duration
	RetryPeriod    time.Duration
}

// Prefix is the VIP with its prefix length, as it goes on the interface.
func (c KubeVIPConfig) Prefix() netip.Prefix { return netip.PrefixFrom(c.Address, c.Subnet) }

// kube-vip's defaults for the variables the twins read.
const (
	kubeVIPDefaultPort      = 6443
	kubeVIPDefaultNamespace = "kube-system"
	kubeVIPDefaultLeaseName = "plndr-cp-lock"
	kubeVIPDefaultLease     = 5 * time.Second
	kubeVIPDefaultRenew     = 3 * time.Second
	kubeVIPDefaultRetry     = 1 * time.Second
)

// ErrNoKubeVIP is returned by ParseKubeVIP, checked with errors.Is, when
// the manifest holds no kube-vip DaemonSet or Pod.
var ErrNoKubeVIP = errors.New("no kube-vip container in the manifest")

// ParseKubeVIP finds kube-vip in a manifest (one or more YAML or JSON
// documents, as k3s reads server/manifests) and returns its configuration:
// the first container, in a DaemonSet's pod template or a Pod, whose image
// contains "kube-vip" and whose args include "manager". Values come from
// the container's env `value`s; `valueFrom` entries are ignored. A
// manifest without one is ErrNoKubeVIP; a document that does not decode,
// or a kube-vip variable with a bad value, is an error naming it.
func ParseKubeVIP(data []byte) (KubeVIPConfig, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return KubeVIPConfig{}, ErrNoKubeVIP
		}
		if err != nil {
			return KubeVIPConfig{}, fmt.Errorf("kube-vip manifest: document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return KubeVIPConfig{}, fmt.Errorf("kube-vip manifest: document %d: %w", i, err)
		}
		var containers []corev1.Container
		switch meta.Kind {
		case "DaemonSet":
			var ds appsv1.DaemonSet
			if err := yaml.Unmarshal(doc, &ds); err != nil {
				return KubeVIPConfig{}, fmt.Errorf("kube-vip manifest: document %d (DaemonSet): %w", i, err)
			}
			containers = ds.Spec.Template.Spec.Containers
		case "Pod":
			var pod corev1.Pod
			if err := yaml.Unmarshal(doc, &pod); err != nil {
				return KubeVIPConfig{}, fmt.Errorf("kube-vip manifest: document %d (Pod): %w", i, err)
			}
			containers = pod.Spec.Containers
		default:
			continue
		}
		for _, c := range containers {
			if strings.Contains(c.Image, "kube-vip") && slices.Contains(c.Args, "manager") {
				cfg, err := kubeVIPFromEnv(c.Env)
				if err != nil {
					return KubeVIPConfig{}, fmt.Errorf("kube-vip manifest: document %d (%s), container %q: %w", i, meta.Kind, c.Name, err)
				}
				return cfg, nil
			}
		}
	}
}

// kubeVIPFromEnv reads kube-vip's variables, with kube-vip's defaults.
func kubeVIPFromEnv(env []corev1.EnvVar) (KubeVIPConfig, error) {
	vars := map[string]string{}
	for _, e := range env {
		if e.ValueFrom == nil {
			vars[e.Name] = e.Value
		}
	}
	get := func(names ...string) (string, bool) {
		for _, n := range names {
			if v, ok := vars[n]; ok {
				return v, true
			}
		}
		return "", false
	}
	cfg := KubeVIPConfig{
		Port:      kubeVIPDefaultPort,
		Namespace: kubeVIPDefaultNamespace,
		LeaseName: kubeVIPDefaultLeaseName,
	}
	addr, ok := get("address", "vip_address")
	if !ok || addr == "" {
		return cfg, errors.New("address is not set")
	}
	a, err := netip.ParseAddr(addr)
	if err != nil || a.Zone() != "" {
		return cfg, fmt.Errorf("address %q is not an IP address (DNS names are not emulated)", addr)
	}
	cfg.Address = a.Unmap()
	cfg.Subnet = cfg.Address.BitLen()
	if v, ok := get("vip_subnet", "vip_cidr"); ok && v != "" {
		bits, err := strconv.Atoi(v)
		if err != nil || bits < 0 || bits > cfg.Address.BitLen() {
			return cfg, fmt.Errorf("vip_subnet %q: want a prefix length 0–%d", v, cfg.Address.BitLen())
		}
		cfg.Subnet = bits
	}
	if v, ok := get("port"); ok && v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > 65535 {
			return cfg, fmt.Errorf("port %q: want 1–65535", v)
		}
		cfg.Port = p
	}
	cfg.Interface, _ = get("vip_interface")
	if strings.ContainsAny(cfg.Interface, "/ \x00") || len(cfg.Interface) > 15 {
		return cfg, fmt.Errorf("vip_interface %q is not an interface name", cfg.Interface)
	}
	for _, b := range []struct {
		name string
		dst  *bool
	}{
		{"vip_arp", &cfg.ARP}, {"cp_enable", &cfg.ControlPlane}, {"svc_enable", &cfg.Services},
		{"vip_leaderelection", &cfg.LeaderElection},
	} {
		if v, ok := get(b.name); ok && v != "" {
			x, err := strconv.ParseBool(v)
			if err != nil {
				return cfg, fmt.Errorf("%s %q: want true or false", b.name, v)
			}
			*b.dst = x
		}
	}
	if v, ok := get("cp_namespace"); ok && v != "" {
		cfg.Namespace = v
	}
	if v, ok := get("vip_leasename"); ok && v != "" {
		cfg.LeaseName = v
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
		def  time.Duration
	}{
		{"vip_leaseduration", &cfg.LeaseDuration, kubeVIPDefaultLease},
		{"vip_renewdeadline", &cfg.RenewDeadline, kubeVIPDefaultRenew},
		{"vip_retryperiod", &cfg.RetryPeriod, kubeVIPDefaultRetry},
	} {
		*d.dst = d.def
		if v, ok := get(d.name); ok && v != "" {
			s, err := strconv.Atoi(v)
			if err != nil || s < 1 || s > 3600 {
				return cfg, fmt.Errorf("%s %q: want whole seconds 1–3600", d.name, v)
			}
			*d.dst = time.Duration(s) * time.Second
		}
	}
	// client-go's leader election refuses other timings.
	if cfg.LeaseDuration <= cfg.RenewDeadline {
		return cfg, fmt.Errorf("vip_leaseduration (%s) must be longer than vip_renewdeadline (%s)", cfg.LeaseDuration, cfg.RenewDeadline)
	}
	if float64(cfg.RenewDeadline) <= 1.2*float64(cfg.RetryPeriod) {
		return cfg, fmt.Errorf("vip_renewdeadline (%s) must be longer than 1.2 × vip_retryperiod (%s)", cfg.RenewDeadline, cfg.RetryPeriod)
	}
	return cfg, nil
}
