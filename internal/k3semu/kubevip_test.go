package k3semu_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/internal/k3semu"
	"github.com/openctl/openctl/internal/k3semu/k3semutest"
)

func TestParseKubeVIP(t *testing.T) {
	provider := k3semu.KubeVIPConfig{
		Address: netip.MustParseAddr("10.0.0.100"), Subnet: 32, Port: 6443, Interface: "eth0",
		ARP: true, ControlPlane: true, Namespace: "kube-system", LeaderElection: true,
		LeaseName: "plndr-cp-lock", LeaseDuration: 5 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second,
	}
	for _, c := range []struct {
		name    string
		yaml    string
		want    k3semu.KubeVIPConfig
		wantErr string // "" for success; k3semu.ErrNoKubeVIP's text for none
	}{
		{name: "provider's DaemonSet", yaml: k3semutest.KubeVIPDaemonSet(k3semutest.ProviderEnv), want: provider},
		{name: "defaults", yaml: k3semutest.KubeVIPDaemonSet("            - {name: address, value: 192.168.1.5}\n"), want: k3semu.KubeVIPConfig{
			Address: netip.MustParseAddr("192.168.1.5"), Subnet: 32, Port: 6443, Namespace: "kube-system",
			LeaseName: "plndr-cp-lock", LeaseDuration: 5 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second,
		}},
		{name: "static pod, IPv6, aliases, valueFrom ignored", yaml: k3semutest.StaticPod, want: k3semu.KubeVIPConfig{
			Address: netip.MustParseAddr("fd00::10"), Subnet: 64, Port: 6443, ControlPlane: true, LeaderElection: true,
			Namespace: "kube-system", LeaseName: "plndr-cp-lock",
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		}},
		{name: "JSON", yaml: `{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"x","image":"kube-vip:1","args":["manager"],"env":[{"name":"address","value":"10.1.1.1"},{"name":"svc_enable","value":"true"}]}]}}`,
			want: k3semu.KubeVIPConfig{Address: netip.MustParseAddr("10.1.1.1"), Subnet: 32, Port: 6443, Services: true, Namespace: "kube-system",
				LeaseName: "plndr-cp-lock", LeaseDuration: 5 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second}},
		{name: "other manifests only", yaml: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n", wantErr: k3semu.ErrNoKubeVIP.Error()},
		{name: "empty", yaml: "", wantErr: k3semu.ErrNoKubeVIP.Error()},
		{name: "kube-vip image without manager", yaml: strings.Replace(k3semutest.KubeVIPDaemonSet(k3semutest.ProviderEnv), `args: ["manager"]`, `args: ["manifest", "daemonset"]`, 1), wantErr: k3semu.ErrNoKubeVIP.Error()},
		{name: "manager of another image", yaml: strings.Replace(k3semutest.KubeVIPDaemonSet(k3semutest.ProviderEnv), "ghcr.io/kube-vip/kube-vip:v0.8.9", "nginx", 1), wantErr: k3semu.ErrNoKubeVIP.Error()},
		{name: "no address", yaml: k3semutest.KubeVIPDaemonSet("            - {name: vip_arp, value: \"true\"}\n"), wantErr: "address is not set"},
		{name: "DNS address", yaml: k3semutest.KubeVIPDaemonSet("            - {name: address, value: vip.example}\n"), wantErr: `address "vip.example" is not an IP address`},
		{name: "bad subnet", yaml: k3semutest.KubeVIPDaemonSet("            - {name: address, value: 10.0.0.1}\n            - {name: vip_subnet, value: \"33\"}\n"), wantErr: `vip_subnet "33"`},
		{name: "bad bool", yaml: k3semutest.KubeVIPDaemonSet("            - {name: address, value: 10.0.0.1}\n            - {name: vip_arp, value: \"yes please\"}\n"), wantErr: `vip_arp "yes please"`},
		{name: "bad port", yaml: k3semutest.KubeVIPDaemonSet("            - {name: address, value: 10.0.0.1}\n            - {name: port, value: \"0\"}\n"), wantErr: `port "0"`},
		{name: "lease not longer than renew deadline", yaml: k3semutest.KubeVIPDaemonSet("            - {name: address, value: 10.0.0.1}\n            - {name: vip_leaseduration, value: \"3\"}\n"), wantErr: "must be longer than vip_renewdeadline"},
		{name: "renew deadline too short for the retry period", yaml: k3semutest.KubeVIPDaemonSet("            - {name: address, value: 10.0.0.1}\n            - {name: vip_retryperiod, value: \"3\"}\n"), wantErr: "1.2 × vip_retryperiod"},
		{name: "broken YAML", yaml: "kind: [\n", wantErr: "document 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := k3semu.ParseKubeVIP([]byte(c.yaml))
			if c.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.wantErr)
				assert.Equal(t, c.wantErr == k3semu.ErrNoKubeVIP.Error(), errors.Is(err, k3semu.ErrNoKubeVIP), "errors.Is(err, k3semu.ErrNoKubeVIP): %v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
	cfg, err := k3semu.ParseKubeVIP([]byte(k3semutest.KubeVIPDaemonSet(k3semutest.ProviderEnv)))
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.100/32", cfg.Prefix().String())
}

// FuzzParseKubeVIP: no input panics, and a configuration returned is one
// client-go's leader election accepts.
func FuzzParseKubeVIP(f *testing.F) {
	f.Add([]byte(k3semutest.KubeVIPDaemonSet(k3semutest.ProviderEnv)))
	f.Add([]byte(k3semutest.StaticPod))
	f.Add([]byte("---\n---\nkind: Pod\n"))
	f.Add([]byte(`{"kind":"DaemonSet","spec":{"template":{"spec":{"containers":[{"image":"kube-vip","args":["manager"],"env":[{"name":"address","value":"::ffff:10.0.0.1"}]}]}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := k3semu.ParseKubeVIP(data)
		if err != nil {
			return
		}
		if !cfg.Address.IsValid() || cfg.Subnet < 0 || cfg.Subnet > cfg.Address.BitLen() {
			t.Fatalf("bad VIP %v/%d", cfg.Address, cfg.Subnet)
		}
		if cfg.LeaseDuration <= cfg.RenewDeadline || float64(cfg.RenewDeadline) <= 1.2*float64(cfg.RetryPeriod) || cfg.RetryPeriod <= 0 {
			t.Fatalf("timings client-go refuses: %+v", cfg)
		}
	})
}
