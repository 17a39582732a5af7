package k3slite_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openctl/openctl/internal/k3semu/k3semutest"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// kubeVIPManifest is the provider's kube-vip manifest for vip on iface,
// with short timings (3 s lease, 2 s renew deadline, 1 s retry).
func kubeVIPManifest(vip, iface string) []byte {
	return []byte(k3semutest.KubeVIPDaemonSet(k3semutest.KubeVIPEnv(vip, iface, 3, 2, 1)))
}

func holdsVIP(t *testing.T, h *vmhost.Host, vip string) bool {
	return strings.TrimSpace(run(t, h, "ip -o addr show to "+vip, nil)) != ""
}

// kube-vip: the servers with the manifest elect through plndr-cp-lock;
// the leader has the VIP on its interface and answers on VIP:6443 with a
// certificate valid for it; a stopped leader hands over to the other.
func TestKubeVIP(t *testing.T) {
	n := newNetwork(t)
	ctx := context.Background()
	const vip = "127.80.204.254"
	s0 := newHost(t, n, "k0", "127.80.204.10", "v1.37.2+k3s1")
	s1 := newHost(t, n, "k1", "127.80.204.11", "v1.37.2+k3s1")
	s2 := newHost(t, n, "k2", "127.80.204.12", "v1.37.2+k3s1")
	for _, h := range []*vmhost.Host{s0, s1, s2} {
		run(t, h, "mkdir -p /var/lib/rancher/k3s/server/manifests && cat > /var/lib/rancher/k3s/server/manifests/openctl-kube-vip.yaml", kubeVIPManifest(vip, "eth0"))
	}
	p0 := start(t, n, s0, []string{"K3S_TOKEN=pw"}, "server", "--cluster-init", "--tls-san", vip)
	p0.waitReady(t)
	token := strings.TrimSpace(run(t, s0, "cat /var/lib/rancher/k3s/server/token", nil))
	eventually(t, "VIP on k0", func() error {
		if !holdsVIP(t, s0, vip) {
			return fmt.Errorf("k0 does not hold %s", vip)
		}
		return nil
	})
	p1 := start(t, n, s1, []string{"K3S_TOKEN=" + token}, "server", "--server", "https://"+vip+":6443", "--tls-san", vip)
	p1.waitReady(t)
	start(t, n, s2, []string{"K3S_TOKEN=" + token}, "server", "--server", "https://"+vip+":6443", "--tls-san", vip).waitReady(t)
	if holdsVIP(t, s1, vip) || n.VIPHolder(vip) != "k0" {
		t.Fatalf("holder %q", n.VIPHolder(vip))
	}
	// /ping and the API through the VIP, TLS verified against the cluster CA.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(run(t, s0, "cat /var/lib/rancher/k3s/server/tls/server-ca.crt", nil)))
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Get("https://" + vip + ":6443/ping")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "pong" {
		t.Fatalf("/ping through the VIP: %q", body)
	}
	cs := clientFor(t, s0, vip)
	lease, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "plndr-cp-lock", metav1.GetOptions{})
	if err != nil || *lease.Spec.HolderIdentity != "k0" {
		t.Fatalf("lease: %v %v", lease, err)
	}
	if !strings.Contains(p0.log.String(), "kube-vip: this node is the leader, adding 127.80.204.254/32 to eth0") {
		t.Errorf("log:\n%s", p0.log.String())
	}
	// A stopped leader lets go; another takes the VIP.
	p0.stop()
	if holdsVIP(t, s0, vip) {
		t.Fatal("k0 kept the VIP after its stop")
	}
	eventually(t, "VIP on k1 or k2", func() error {
		if !holdsVIP(t, s1, vip) && !holdsVIP(t, s2, vip) {
			return fmt.Errorf("neither holds %s", vip)
		}
		return nil
	})
	holder := n.VIPHolder(vip)
	resp, err = hc.Get("https://" + vip + ":6443/ping")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if holder != "k1" && holder != "k2" {
		t.Fatalf("holder %q", holder)
	}
	// The provider's handover: the Lease given to the other server moves the VIP.
	to := map[string]string{"k1": "k2", "k2": "k1"}[holder]
	cs = clientFor(t, s1, "127.80.204.11")
	eventually(t, "lease handed over", func() error {
		l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "plndr-cp-lock", metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime = &to, &now, &now
		_, err = cs.CoordinationV1().Leases("kube-system").Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	eventually(t, "VIP on "+to, func() error {
		if n.VIPHolder(vip) != to {
			return fmt.Errorf("holder %q", n.VIPHolder(vip))
		}
		return nil
	})
}
