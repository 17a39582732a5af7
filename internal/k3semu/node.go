package k3semu

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// NodeSpec is what a node registers as.
type NodeSpec struct {
	Name    string
	IP      net.IP
	Version string   // kubeletVersion, e.g. v1.37.2+k3s1
	Labels  []string // --node-label k=v, first registration only
	Taints  []string // --node-taint k=v:Effect, first registration only
	Server  bool     // an etcd server: control-plane,etcd,master roles
}

// NodeAgent keeps a node's Node object and Lease, standing in for its
// kubelet. Client is the kubelet's credential on agents (Node authorizer
// and NodeRestriction apply) and the admin one on servers, which also set
// the role labels. Not safe for concurrent use: one goroutine drives
// Register and Heartbeat.
type NodeAgent struct {
	Client kubernetes.Interface
	Spec   NodeSpec
	Log    *slog.Logger
}

// serverRoles are the node-role labels k3s puts on an etcd server.
var serverRoles = []string{"control-plane", "etcd", "master"}

// Register creates the Node (labels and taints only at first
// registration, as the kubelet does) and sets its status.
func (n *NodeAgent) Register(ctx context.Context) error {
	nodes := n.Client.CoreV1().Nodes()
	node, err := nodes.Get(ctx, n.Spec.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		node, err = n.newNode()
		if err != nil {
			return err
		}
		node, err = nodes.Create(ctx, node, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("register node %s: %w", n.Spec.Name, err)
	}
	n.setStatus(node)
	node, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("node %s status: %w", n.Spec.Name, err)
	}
	return n.renewLease(ctx, node)
}

// Heartbeat refreshes the Ready condition, as a kubelet's status update
// does, and renews the node's Lease in kube-node-lease.
func (n *NodeAgent) Heartbeat(ctx context.Context) error {
	nodes := n.Client.CoreV1().Nodes()
	node, err := nodes.Get(ctx, n.Spec.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return n.Register(ctx)
	}
	if err != nil {
		return fmt.Errorf("node heartbeat: %w", err)
	}
	n.setStatus(node)
	node, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("node heartbeat: %w", err)
	}
	return n.renewLease(ctx, node)
}

func (n *NodeAgent) newNode() (*corev1.Node, error) {
	labels := map[string]string{
		"kubernetes.io/hostname":           n.Spec.Name,
		"kubernetes.io/os":                 "linux",
		"kubernetes.io/arch":               runtime.GOARCH,
		"beta.kubernetes.io/os":            "linux",
		"beta.kubernetes.io/arch":          runtime.GOARCH,
		"beta.kubernetes.io/instance-type": "k3s",
		"node.kubernetes.io/instance-type": "k3s",
	}
	if n.Spec.Server {
		for _, r := range serverRoles {
			labels["node-role.kubernetes.io/"+r] = "true"
		}
	}
	for _, l := range n.Spec.Labels {
		k, v, _ := strings.Cut(l, "=")
		labels[k] = v
	}
	var taints []corev1.Taint
	for _, t := range n.Spec.Taints {
		kv, effect, ok := strings.Cut(t, ":")
		if !ok {
			return nil, fmt.Errorf("--node-taint %q is not key=value:Effect", t)
		}
		k, v, _ := strings.Cut(kv, "=")
		taints = append(taints, corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffect(effect)})
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   n.Spec.Name,
			Labels: labels,
			Annotations: map[string]string{
				"k3s.io/internal-ip":           n.Spec.IP.String(),
				"k3s.io/hostname":              n.Spec.Name,
				"node.alpha.kubernetes.io/ttl": "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
		},
		Spec: corev1.NodeSpec{Taints: taints},
	}, nil
}

// setStatus fills node's status as a healthy kubelet of this version would.
func (n *NodeAgent) setStatus(node *corev1.Node) {
	now := metav1.NewTime(time.Now())
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		c := corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
		for _, old := range node.Status.Conditions {
			if old.Type == t && old.Status == s {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		return c
	}
	node.Status.Conditions = []corev1.NodeCondition{
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
	}
	node.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: n.Spec.IP.String()},
		{Type: corev1.NodeHostName, Address: n.Spec.Name},
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory:           resource.MustParse("4Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
	}
	node.Status.Capacity = res
	node.Status.Allocatable = res
	node.Status.NodeInfo = corev1.NodeSystemInfo{
		MachineID:               n.Spec.Name,
		KernelVersion:           "6.1.0-standin",
		OSImage:                 "openctl k3s stand-in",
		ContainerRuntimeVersion: "containerd://2.1.5-k3s1",
		KubeletVersion:          n.Spec.Version,
		KubeProxyVersion:        n.Spec.Version,
		OperatingSystem:         "linux",
		Architecture:            runtime.GOARCH,
	}
}

// RegisterServer checks a server's node password (recorded on its
// first start) and registers its Node with the server roles, as a k3s
// server does once its API answers; it logs "k3s is up and running".
func RegisterServer(ctx context.Context, client kubernetes.Interface, cfg ServerConfig, nodeIP net.IP, nodePassword string, log *slog.Logger) (*NodeAgent, error) {
	if err := CheckNodePassword(ctx, client, cfg.NodeName, nodePassword); err != nil {
		return nil, fmt.Errorf("standin: node %s: %w", cfg.NodeName, err)
	}
	na := &NodeAgent{Client: client, Log: log, Spec: NodeSpec{
		Name: cfg.NodeName, IP: nodeIP, Version: cfg.Version.K3s, Labels: cfg.NodeLabels, Taints: cfg.NodeTaints, Server: true,
	}}
	if err := na.Register(ctx); err != nil {
		return nil, err
	}
	log.Info("k3s is up and running")
	return na, nil
}
