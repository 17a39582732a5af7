// Package k3semutest holds the test fixtures of package k3semu that both
// k3s twins' tests use: kube-vip manifests shaped like the one the K3s
// provider writes.
package k3semutest

import (
	"fmt"
	"strings"
)

// KubeVIPDaemonSet is shaped like the manifest the K3s provider writes
// (k3s/kubevip.go): RBAC documents, then the DaemonSet; env is the
// container's env list, indented for it (KubeVIPEnv).
func KubeVIPDaemonSet(env string) string {
	return `# a comment
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
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    verbs: ["list", "get", "watch", "update", "create"]
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-vip-ds
  namespace: kube-system
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: kube-vip-ds
  template:
    metadata:
      labels:
        app.kubernetes.io/name: kube-vip-ds
    spec:
      hostNetwork: true
      containers:
        - name: kube-vip
          image: ghcr.io/kube-vip/kube-vip:v0.8.9
          args: ["manager"]
          env:
` + env
}

// KubeVIPEnv is the env list of the provider's kube-vip container for vip
// on iface with the given lease duration, renew deadline and retry
// period in seconds, indented for KubeVIPDaemonSet.
func KubeVIPEnv(vip, iface string, lease, renew, retry int) string {
	var b strings.Builder
	for _, e := range [][2]string{{"address", vip}, {"port", "6443"}, {"vip_interface", iface}, {"vip_arp", "true"}, {"vip_subnet", "32"},
		{"cp_enable", "true"}, {"cp_namespace", "kube-system"}, {"vip_leaderelection", "true"}, {"vip_leasename", "plndr-cp-lock"},
		{"vip_leaseduration", fmt.Sprint(lease)}, {"vip_renewdeadline", fmt.Sprint(renew)}, {"vip_retryperiod", fmt.Sprint(retry)}} {
		fmt.Fprintf(&b, "            - name: %s\n              value: %q\n", e[0], e[1])
	}
	return b.String()
}

// ProviderEnv is the env list the provider writes for 10.0.0.100 on eth0
// with kube-vip's default timings.
var ProviderEnv = KubeVIPEnv("10.0.0.100", "eth0", 5, 3, 1)

// StaticPod is kube-vip as a static pod, IPv6, with the aliases of its
// settings (vip_address, vip_cidr) and a valueFrom.
const StaticPod = `apiVersion: v1
kind: Pod
metadata:
  name: kube-vip
  namespace: kube-system
spec:
  hostNetwork: true
  containers:
  - name: kube-vip
    image: ghcr.io/kube-vip/kube-vip:v0.8.0
    args:
    - manager
    env:
    - name: vip_address
      value: fd00::10
    - name: vip_cidr
      value: "64"
    - name: cp_enable
      value: "true"
    - name: vip_leaderelection
      value: "true"
    - name: vip_nodename
      valueFrom:
        fieldRef:
          fieldPath: spec.nodeName
    - name: vip_leaseduration
      value: "15"
    - name: vip_renewdeadline
      value: "10"
    - name: vip_retryperiod
      value: "2"
`
