package k3s

import (
	"fmt"
	"strings"
)

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
		{"vip_leasename", "plndr-cp-lock"},
		{"vip_leaseduration", "5"},
		{"vip_renewdeadline", "3"},
		{"vip_retryperiod", "1"},
	}
	for _, e := range env {
		fmt.Fprintf(&b, "            - name: %s\n              value: %q\n", e[0], e[1])
	}
	return []byte(b.String())
}
