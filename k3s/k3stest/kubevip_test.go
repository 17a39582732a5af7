package k3stest_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openctl/openctl/internal/k3semu/k3semutest"
	"github.com/openctl/openctl/k3s/k3stest"
)

// kubeVIPYAML is kube-vip as a control-plane DaemonSet for vip on iface,
// the shape the K3s provider writes to server/manifests, with kube-vip's
// default timings.
func kubeVIPYAML(vip, iface string) string {
	return k3semutest.KubeVIPDaemonSet(k3semutest.KubeVIPEnv(vip, iface, 5, 3, 1))
}

const (
	vipManifest = "/var/lib/rancher/k3s/server/manifests/openctl-kube-vip.yaml"
	vipLease    = "plndr-cp-lock"
)

// freeVIP is an address of n's /24 that nothing else uses: the gateway is
// .1 and hosts take .10 up to .209 (at most 200 per network), so .254.
func freeVIP(n *k3stest.Network) netip.Addr {
	a := n.Prefix().Addr().As4()
	a[3] = 254
	return netip.AddrFrom4(a)
}

// vipHolders returns the running hosts whose interfaces carry vip.
func vipHolders(ctx context.Context, t *testing.T, hosts []*k3stest.Host, vip netip.Addr) []string {
	t.Helper()
	var out []string
	for _, h := range hosts {
		if !h.Running() {
			continue
		}
		b, err := h.Run(ctx, "ip", "-o", "addr", "show")
		require.NoError(t, err, "%s", b)
		if strings.Contains(string(b), " "+vip.String()+"/") {
			out = append(out, h.Name())
		}
	}
	return out
}

// TestKubeVIPFailover runs three stand-in servers ($K3S_STANDIN_BINARY)
// on three hosts with kube-vip's manifest in server/manifests: one server
// holds the VIP on eth0 and the Lease, the API answers on the VIP from the
// root namespace with TLS verified (the VIP is in every server's SANs);
// a graceful stop hands the VIP over; powering the holder off moves it to
// another server within seconds, and gratuitous ARP updates a bystander's
// neighbour entry; a rebooted old holder drops its stale VIP; removing
// the manifest releases the VIP and the Lease, writing it again brings
// the VIP back; and a holder that loses etcd quorum drops the VIP.
func TestKubeVIPFailover(t *testing.T) {
	bin := os.Getenv("K3S_STANDIN_BINARY")
	if bin == "" {
		t.Skip("K3S_STANDIN_BINARY not set (make test sets it)")
	}
	bin, err := filepath.Abs(bin)
	require.NoError(t, err)
	began := time.Now()
	ctx := testContext(t, 5*time.Minute)
	n := k3stest.NewNetwork(t)
	hosts := addHosts(ctx, t, n, k3stest.Systemd, "cp-0", "cp-1", "cp-2")
	byName := map[string]*k3stest.Host{}
	vip := freeVIP(n)
	for _, h := range hosts {
		byName[h.Name()] = h
		require.NoError(t, h.CopyFile(ctx, bin, "/usr/local/bin/k3s", 0o755))
		// As the provider does: the manifest is on every server before
		// its k3s starts.
		require.NoError(t, h.WriteFile(ctx, vipManifest, []byte(kubeVIPYAML(vip.String(), "eth0")), 0o600))
	}
	start := func(h *k3stest.Host, env string, args ...string) {
		t.Helper()
		require.NoError(t, h.WriteFile(ctx, "/etc/systemd/system/k3s.service", []byte(k3sUnitFor("k3s", args...)), 0o644))
		require.NoError(t, h.WriteFile(ctx, "/etc/systemd/system/k3s.service.env", []byte(env), 0o600))
		t0 := time.Now()
		out, err := h.Run(ctx, "sh", "-c", "systemctl daemon-reload && systemctl enable /etc/systemd/system/k3s.service >/dev/null 2>&1 && systemctl restart k3s")
		logs, _ := h.Run(ctx, "journalctl", "-u", "k3s", "--no-pager", "-o", "cat", "-n", "60")
		require.NoError(t, err, "systemctl restart k3s on %s: %s\n%s", h.Name(), out, logs)
		t.Logf("k3s on %s ready after %s", h.Name(), time.Since(t0).Round(time.Millisecond))
	}
	// kubeVIPLog is the kube-vip lines of h's k3s journal.
	kubeVIPLog := func(h *k3stest.Host) string {
		b, _ := h.Run(ctx, "journalctl", "-u", "k3s", "--no-pager", "-o", "cat")
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "kube-vip") {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	start(hosts[0], "", "server", "--cluster-init", "--token", "s3cret", "--tls-san", vip.String())
	token, err := hosts[0].ReadFile(ctx, "/var/lib/rancher/k3s/server/token")
	require.NoError(t, err)
	env := "K3S_TOKEN='" + strings.TrimSpace(string(token)) + "'\n"
	for _, h := range hosts[1:] {
		start(h, env, "server", "--server", "https://"+hosts[0].Addr().String()+":6443", "--tls-san", vip.String())
	}
	formed := time.Since(began)

	// Clients in the root namespace (the test process is on the bridge),
	// verifying the servers' certificates against the cluster's CA.
	caPEM, err := hosts[0].ReadFile(ctx, "/var/lib/rancher/k3s/server/tls/server-ca.crt")
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	vipURL := "https://" + net.JoinHostPort(vip.String(), "6443")
	// ping asks /ping on a new connection each time, so a dead holder's
	// connection is never reused.
	pingClient := &http.Client{Timeout: time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true,
	}}
	ping := func() error {
		resp, err := pingClient.Get(vipURL + "/ping")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(body) != "pong" {
			return fmt.Errorf("%s: %q", resp.Status, body)
		}
		return nil
	}
	eventually(t, 30*time.Second, "the VIP answers /ping", func() (bool, string) {
		err := ping()
		return err == nil, fmt.Sprint(err)
	})
	holders := vipHolders(ctx, t, hosts, vip)
	require.Len(t, holders, 1, "exactly one server holds %s", vip)
	leader := byName[holders[0]]
	t.Logf("cluster formed in %s; %s holds %s", formed.Round(time.Millisecond), leader.Name(), vip)
	assert.Contains(t, kubeVIPLog(leader), fmt.Sprintf(`msg="kube-vip: this node is the leader, adding %s/32 to eth0"`, vip))
	assert.Contains(t, kubeVIPLog(leader), "kube-vip: gratuitous ARP 1/3")

	// A kube client: the first server's admin kubeconfig, its server
	// rewritten to the VIP; TLS verification on. Each client gets its own
	// transport (a Dial func keeps client-go from sharing a cached one),
	// so none reuses a connection to a powered-off server.
	kubeconfig, err := hosts[0].ReadFile(ctx, "/etc/rancher/k3s/k3s.yaml")
	require.NoError(t, err)
	kube := func(server string) kubernetes.Interface {
		t.Helper()
		raw, err := clientcmd.Load(kubeconfig)
		require.NoError(t, err)
		require.Contains(t, raw.Clusters, "default")
		raw.Clusters["default"].Server = server
		cfg, err := clientcmd.NewDefaultClientConfig(*raw, nil).ClientConfig()
		require.NoError(t, err)
		require.False(t, cfg.Insecure)
		cfg.Timeout = 5 * time.Second
		cfg.Dial = (&net.Dialer{Timeout: 2 * time.Second}).DialContext
		c, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		return c
	}
	leaseHolder := func(c kubernetes.Interface) (string, error) {
		l, err := c.CoordinationV1().Leases("kube-system").Get(ctx, vipLease, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if l.Spec.HolderIdentity == nil {
			return "", nil
		}
		return *l.Spec.HolderIdentity, nil
	}
	c := kube(vipURL)
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, nd := range nodes.Items {
		names = append(names, nd.Name)
	}
	slices.Sort(names)
	assert.Equal(t, []string{"cp-0", "cp-1", "cp-2"}, names)
	holder, err := leaseHolder(c)
	require.NoError(t, err)
	assert.Equal(t, leader.Name(), holder, "the Lease's holder holds the VIP")

	// A graceful stop (SIGTERM) removes the VIP, then releases the Lease,
	// so another server takes over without waiting for it to expire.
	stopped := time.Now()
	out, err := leader.Run(ctx, "systemctl", "stop", "k3s")
	require.NoError(t, err, "%s", out)
	assert.Empty(t, vipHolders(ctx, t, []*k3stest.Host{leader}, vip), "the stopped server let the VIP go")
	eventually(t, 15*time.Second, "another server takes the VIP after a graceful stop", func() (bool, string) {
		h := vipHolders(ctx, t, hosts, vip)
		return len(h) == 1 && h[0] != leader.Name(), fmt.Sprint(h)
	})
	t.Logf("graceful handover: %s took the VIP %s after `systemctl stop k3s` on %s",
		vipHolders(ctx, t, hosts, vip)[0], time.Since(stopped).Round(time.Millisecond), leader.Name())
	assert.Contains(t, kubeVIPLog(leader), fmt.Sprintf(`msg="kube-vip: removing %s/32 from eth0: kube-vip is stopping"`, vip))
	out, err = leader.Run(ctx, "systemctl", "start", "k3s")
	require.NoError(t, err, "%s", out)
	holders = vipHolders(ctx, t, hosts, vip)
	require.Len(t, holders, 1, "exactly one server holds %s after the restart", vip)
	require.NotEqual(t, leader.Name(), holders[0], "the restarted server does not take the VIP back")
	leader = byName[holders[0]]
	eventually(t, 10*time.Second, "the Lease names "+leader.Name(), func() (bool, string) {
		h, err := leaseHolder(c)
		return err == nil && h == leader.Name(), fmt.Sprintf("holder %q, err %v", h, err)
	})

	// The other two get a neighbour entry for the VIP at the leader's
	// address, as if they had talked to it: only the next leader's
	// gratuitous ARP can change it, as nothing on them uses the VIP.
	mac := func(h *k3stest.Host) string {
		b, err := h.Run(ctx, "cat", "/sys/class/net/eth0/address")
		require.NoError(t, err, "%s", b)
		return strings.TrimSpace(string(b))
	}
	leaderMAC := mac(leader)
	var others []*k3stest.Host
	for _, h := range hosts {
		if h != leader {
			others = append(others, h)
			out, err := h.Run(ctx, "ip", "neigh", "replace", vip.String(), "lladdr", leaderMAC, "dev", "eth0", "nud", "stale")
			require.NoError(t, err, "%s", out)
		}
	}

	// Power the leader off and time the VIP's return.
	off := time.Now()
	require.NoError(t, leader.PowerOff(ctx))
	var failover time.Duration
	for {
		if err := ping(); err == nil {
			failover = time.Since(off)
			break
		}
		require.Less(t, time.Since(off), 60*time.Second, "the VIP did not answer again within 60s")
		time.Sleep(100 * time.Millisecond) // poll interval
	}
	t.Logf("failover: the VIP answered /ping again %s after %s was powered off", failover.Round(time.Millisecond), leader.Name())
	assert.Less(t, failover, 20*time.Second, "failover time")

	holders = vipHolders(ctx, t, hosts, vip)
	require.Len(t, holders, 1, "exactly one running server holds %s", vip)
	next := byName[holders[0]]
	assert.NotEqual(t, leader.Name(), next.Name())
	c = kube(vipURL)
	eventually(t, 20*time.Second, "the Lease names the new holder", func() (bool, string) {
		h, err := leaseHolder(c)
		return err == nil && h == next.Name(), fmt.Sprintf("holder %q, err %v", h, err)
	})
	t.Logf("the API (Lease read through the VIP) answered %s after power-off", time.Since(off).Round(time.Millisecond))
	assert.Contains(t, kubeVIPLog(next), fmt.Sprintf(`msg="kube-vip: this node is the leader, adding %s/32 to eth0"`, vip))
	// Gratuitous ARP reached the bystander.
	nextMAC := mac(next)
	for _, h := range others {
		if h == next {
			continue
		}
		eventually(t, 10*time.Second, "the bystander "+h.Name()+"'s neighbour entry for the VIP moves to "+next.Name(), func() (bool, string) {
			b, _ := h.Run(ctx, "ip", "neigh", "show", vip.String(), "dev", "eth0")
			return strings.Contains(string(b), "lladdr "+nextMAC), string(b)
		})
	}
	// And the root namespace (which reached the VIP) has it at the new
	// holder too.
	b, err := exec.CommandContext(ctx, "ip", "neigh", "show", vip.String()).CombinedOutput()
	require.NoError(t, err, "%s", b)
	assert.Contains(t, string(b), "lladdr "+nextMAC)

	// The harness keeps a powered-off host's network namespace, so the
	// old leader's eth0 still carries the VIP when it boots again (a real
	// machine would have lost it): its k3s starts at boot and the
	// emulation removes the stale address before it joins the election.
	booted := time.Now()
	require.NoError(t, leader.PowerOn(ctx))
	eventually(t, 60*time.Second, "after "+leader.Name()+" boots, only "+next.Name()+" holds the VIP", func() (bool, string) {
		h := vipHolders(ctx, t, hosts, vip)
		return len(h) == 1 && h[0] == next.Name(), fmt.Sprint(h)
	})
	t.Logf("%s booted; its stale VIP was gone %s after power-on", leader.Name(), time.Since(booted).Round(time.Millisecond))
	assert.Contains(t, kubeVIPLog(leader), "it is left from an earlier run and this node is not the leader")

	// Removing the manifest stops the emulation: the VIP is released and
	// so is the Lease.
	for _, h := range hosts {
		if h.Running() {
			out, err := h.Run(ctx, "rm", "-f", vipManifest)
			require.NoError(t, err, "%s", out)
		}
	}
	// The manifests go one host after the other: a server whose manifest
	// is still there may take the VIP its predecessor released, until its
	// own manifest goes too. So the wait is for no holder and no answer.
	eventually(t, 15*time.Second, "no server holds the VIP and it does not answer once the manifest is gone", func() (bool, string) {
		h := vipHolders(ctx, t, hosts, vip)
		err := ping()
		return len(h) == 0 && err != nil, fmt.Sprintf("holders %v, ping: %v", h, err)
	})
	c = kube("https://" + net.JoinHostPort(next.Addr().String(), "6443"))
	eventually(t, 10*time.Second, "the Lease is released", func() (bool, string) {
		h, err := leaseHolder(c)
		return err == nil && h == "", fmt.Sprintf("holder %q, err %v", h, err)
	})
	assert.Contains(t, kubeVIPLog(next), "kube-vip: configuration removed or changed; stopping")

	// Written again while the servers run: picked up, one server takes
	// the VIP.
	for _, h := range hosts {
		require.NoError(t, h.WriteFile(ctx, vipManifest, []byte(kubeVIPYAML(vip.String(), "eth0")), 0o600))
	}
	eventually(t, 20*time.Second, "one server takes the VIP once the manifest is back", func() (bool, string) {
		h := vipHolders(ctx, t, hosts, vip)
		return len(h) == 1 && ping() == nil, fmt.Sprint(h)
	})
	last := byName[vipHolders(ctx, t, hosts, vip)[0]]
	eventually(t, 10*time.Second, "the Lease names "+last.Name(), func() (bool, string) {
		h, err := leaseHolder(c)
		return err == nil && h == last.Name(), fmt.Sprintf("holder %q, err %v", h, err)
	})

	// Without etcd quorum the holder cannot renew the Lease: it gives the
	// VIP up after the renew deadline instead of keeping it.
	lost := time.Now()
	for _, h := range hosts {
		if h != last {
			require.NoError(t, h.PowerOff(ctx))
		}
	}
	eventually(t, 30*time.Second, last.Name()+" drops the VIP once it cannot renew the Lease", func() (bool, string) {
		h := vipHolders(ctx, t, hosts, vip)
		return len(h) == 0, fmt.Sprint(h)
	})
	t.Logf("quorum lost: %s dropped the VIP %s after the other two were powered off", last.Name(), time.Since(lost).Round(time.Millisecond))
	assert.Contains(t, kubeVIPLog(last), fmt.Sprintf(`msg="kube-vip: removing %s/32 from eth0: this node is no longer the leader"`, vip))
	t.Logf("whole test: %s", time.Since(began).Round(time.Millisecond))
}
