package k3s

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/remote"
)

// kubeVIPLease is the Lease in kube-system through which the servers'
// kube-vips elect the one holding the VIP.
const kubeVIPLease = "plndr-cp-lock"

// vipHandoverTimeout bounds the wait for the VIP to leave a server.
const vipHandoverTimeout = 30 * time.Second

// kubeVIPImage is the kube-vip image the VIP manifest runs.
const kubeVIPImage = "ghcr.io/kube-vip/kube-vip:v0.8.9"

// kubeVIPPath is where the manifest goes on every server: k3s applies
// what server/manifests holds, on the first server before any VIP
// exists, so the VIP comes up with the cluster.
const kubeVIPPath = manifestsDir + "/openctl-kube-vip.yaml"

// kubeVIPManifest renders kube-vip as a DaemonSet on the control plane,
// with its RBAC, as kube-vip documents it for k3s: host network,
// NET_ADMIN/NET_RAW/SYS_TIME, ARP, leader election through a Lease in
// kube-system (5 s lease, 3 s renew deadline, 1 s retry) so that one
// server at a time holds the address.
func kubeVIPManifest(address, iface string) []byte {
	var b strings.Builder
	b.WriteString(`# Written by openctl: kube-vip holds the cluster's virtual IP.
apiVersion: v1
kind: ServiceAccount
metadata:
  name: kube-vip
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:kube-vip-role
rules:
  - apiGroups: [""]
    resources: ["services/status"]
    verbs: ["update"]
  - apiGroups: [""]
    resources: ["services", "endpoints"]
    verbs: ["list", "get", "watch", "update"]
  - apiGroups: [""]
    resources: ["nodes"]
    verbs: ["list", "get", "watch", "update", "patch"]
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    verbs: ["list", "get", "watch", "update", "create"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:kube-vip-binding
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:kube-vip-role
subjects:
  - kind: ServiceAccount
    name: kube-vip
    namespace: kube-system
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-vip-ds
  namespace: kube-system
  labels:
    app.kubernetes.io/name: kube-vip-ds
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: kube-vip-ds
  template:
    metadata:
      labels:
        app.kubernetes.io/name: kube-vip-ds
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - key: node-role.kubernetes.io/master
                    operator: Exists
              - matchExpressions:
                  - key: node-role.kubernetes.io/control-plane
                    operator: Exists
      hostNetwork: true
      serviceAccountName: kube-vip
      tolerations:
        - effect: NoSchedule
          operator: Exists
        - effect: NoExecute
          operator: Exists
      containers:
        - name: kube-vip
          image: ` + kubeVIPImage + `
          imagePullPolicy: IfNotPresent
          args: ["manager"]
          securityContext:
            capabilities:
              add: ["NET_ADMIN", "NET_RAW", "SYS_TIME"]
          env:
`)
	env := [][2]string{
		{"address", address},
		{"port", "6443"},
		{"vip_interface", iface},
		{"vip_arp", "true"},
		{"vip_subnet", "32"},
		{"cp_enable", "true"},
		{"cp_namespace", "kube-system"},
		{"vip_leaderelection", "true"},
		{"vip_leasename", kubeVIPLease},
		{"vip_leaseduration", "5"},
		{"vip_renewdeadline", "3"},
		{"vip_retryperiod", "1"},
	}
	for _, e := range env {
		fmt.Fprintf(&b, "            - name: %s\n              value: %q\n", e[0], e[1])
	}
	return []byte(b.String())
}

// handOverVIP moves the VIP off server name before it restarts, so that
// the API endpoint never points at a server that is down: when name
// holds kube-vip's Lease, the Lease is given to another Ready,
// schedulable server — whose kube-vip, finding itself the holder, takes
// the VIP at its next retry, while name's fails to renew and lets the VIP
// go — and it waits until name no longer holds the address. Nothing to do
// when another server holds it or none can take it; a handover that does
// not finish in time is logged, and the upgrade goes on as it would
// without (kube-vip's failover then moves the VIP).
func (p *Provider) handOverVIP(ctx context.Context, cs kubernetes.Interface, h *remote.Host, name, vip string) error {
	leases := cs.CoordinationV1().Leases("kube-system")
	var to string
	for {
		l, err := leases.Get(ctx, kubeVIPLease, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != name {
			return nil
		}
		if to == "" {
			if to, err = vipSuccessor(ctx, cs, name); err != nil || to == "" {
				return err
			}
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime = &to, &now, &now
		n := int32(1)
		if l.Spec.LeaseTransitions != nil {
			n = *l.Spec.LeaseTransitions + 1
		}
		l.Spec.LeaseTransitions = &n
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue // renewed meanwhile: read it again
		}
		if err != nil {
			return err
		}
		break
	}
	registry.CallOf(ctx).ReportStep(fmt.Sprintf("moving the VIP %s from %s to %s", vip, name, to))
	addr, err := netip.ParseAddr(vip)
	if err != nil {
		return nil // a VIP that is not an address is not on an interface
	}
	wctx, cancel := context.WithTimeout(ctx, vipHandoverTimeout)
	defer cancel()
	b := backoff.Policy{Initial: 100 * time.Millisecond, Max: 500 * time.Millisecond}.Start()
	for {
		res, err := h.Run(wctx, remote.Command{Step: "check the VIP has left", Script: "ip -o addr show to " + remote.Quote(addr.String())})
		if err == nil && strings.TrimSpace(string(res.Stdout)) == "" {
			return nil
		}
		if werr := b.Wait(wctx); werr != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			p.log.Warn("the VIP did not leave the server before its restart; kube-vip's failover will move it", "node", name, "vip", vip, "to", to)
			return nil
		}
	}
}

// vipSuccessor is a server other than name that can hold the VIP: Ready
// and not cordoned; "" when there is none.
func vipSuccessor(ctx context.Context, cs kubernetes.Interface, name string) (string, error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Name != name && isServer(n) && nodeReady(n) && !n.Spec.Unschedulable {
			return n.Name, nil
		}
	}
	return "", nil
}
