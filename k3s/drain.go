package k3s

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/internal/drain"
	"github.com/openctl/openctl/k3s/kubeconfig"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
)

// removeFromCluster takes node name out of its cluster before its host
// is uninstalled: it refuses when the servers left would be fewer than a
// majority of the current ones, then cordons the node, drains it —
// evicting its pods, honouring PodDisruptionBudgets, leaving DaemonSet
// pods, never deleting emptyDir data — and deletes its Node, which for a
// server also removes its etcd member. It does nothing when no other
// server of the cluster answers (the node is the cluster's last server,
// or belongs to no recorded cluster).
func (p *Provider) removeFromCluster(ctx context.Context, name string, prior *manifest.Resource) error {
	api, err := p.otherServerAPI(ctx, name, prior)
	if err != nil || api == nil {
		return err
	}
	cs := api.Kubernetes()
	node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return errcode.Wrap(errcode.Transient, fmt.Sprintf("k3s: node %s: reading it in the API", name), err)
	}
	if isServer(node) {
		nodes, err := api.Nodes(ctx)
		if err != nil {
			return err
		}
		// The servers left must be a quorum of the membership they are
		// left with, all of them healthy: removing a member while another
		// is down can leave etcd without one.
		servers, others := 0, 0
		var down []string
		for _, n := range nodes {
			if !slices.Contains(n.Roles, "etcd") && !slices.Contains(n.Roles, "control-plane") {
				continue
			}
			servers++
			if n.Name == name {
				continue
			}
			if n.Ready {
				others++
			} else {
				down = append(down, n.Name)
			}
		}
		if need := (servers-1)/2 + 1; servers > 1 && others < need {
			return errcode.New(errcode.Conflict, fmt.Sprintf("k3s: node %s: removing it would leave %d healthy of %d servers (%s not Ready), fewer than the %d etcd needs for a quorum: bring them back first, or delete the whole cluster",
				name, others, servers-1, strings.Join(down, ", "), need))
		}
	}
	var policy *DrainSpec
	if prior != nil {
		if s, err := p.nodeSpec(prior); err == nil {
			policy = s.Drain
		}
	}
	// A node pruned from its cluster is drained under the cluster's
	// policy as the operation applies it now.
	if par := registry.CallOf(ctx).Parent; par != nil && par.Kind == KindCluster && par.Metadata.Name == clusterOf(prior) {
		if cs, err := p.clusterSpec(par); err == nil {
			policy = cs.Drain
		}
	}
	if err := cordonAndDrain(ctx, cs, node, policy); err != nil {
		return errcode.New(errcode.Conflict, fmt.Sprintf("k3s: node %s: %v: it stays, cordoned; nothing after it is removed", name, err))
	}
	registry.CallOf(ctx).ReportStep("deleting " + name + " from the API")
	return deleteNodeObject(ctx, cs, name, "deleting its Node")
}

// deleteNodeObject deletes node name's Node from the API; one already
// gone is no error, any other failure is Transient, saying what was done.
func deleteNodeObject(ctx context.Context, cs kubernetes.Interface, name, doing string) error {
	if err := cs.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return errcode.Wrap(errcode.Transient, fmt.Sprintf("k3s: node %s: %s", name, doing), err)
	}
	return nil
}

// forgetNode deletes node name's Node again if it is back in the API
// once k3s is uninstalled from its host: until k3s stopped there, its
// kubelet may have registered the Node anew after removeFromCluster
// deleted it, and a deleted node must not stay listed (NotReady for
// ever). Like removeFromCluster, it does nothing when no other server of
// the cluster answers.
func (p *Provider) forgetNode(ctx context.Context, name string, prior *manifest.Resource) error {
	api, err := p.otherServerAPI(ctx, name, prior)
	if err != nil || api == nil {
		return err
	}
	return deleteNodeObject(ctx, api.Kubernetes(), name, "deleting its Node, registered again before k3s stopped")
}

// cordonAndDrain cordons node and drains it under policy (nil: the
// safe defaults), reporting what the drain leaves or loses as steps. A
// drain that cannot finish — a PodDisruptionBudget, an unmanaged pod
// without force — names the pods in its error.
func cordonAndDrain(ctx context.Context, cs kubernetes.Interface, node *corev1.Node, policy *DrainSpec) error {
	registry.CallOf(ctx).ReportStep("draining " + node.Name)
	o := drain.Options{Timeout: policy.timeout(), IgnoreDaemonSets: true, Warn: func(m string) { registry.CallOf(ctx).ReportStep(m) }}
	if policy != nil {
		if policy.GracePeriod != nil {
			o.GracePeriod = new(int64(*policy.GracePeriod))
		}
		o.Force, o.DeleteEmptyDirData = policy.Force, policy.DeleteEmptyDirData
		if policy.IgnoreDaemonSets != nil {
			o.IgnoreDaemonSets = *policy.IgnoreDaemonSets
		}
	}
	if err := drain.Cordon(ctx, cs, node.Name); err != nil {
		return fmt.Errorf("cordon: %w", err)
	}
	if _, err := drain.Drain(ctx, cs, node.Name, o); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	return nil
}

func isServer(n *corev1.Node) bool {
	for _, l := range []string{"node-role.kubernetes.io/etcd", "node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"} {
		if _, ok := n.Labels[l]; ok {
			return true
		}
	}
	return false
}

// otherServerAPI returns the API of the cluster prior's node belongs to,
// through a server other than name that answers; nil when there is none.
func (p *Provider) otherServerAPI(ctx context.Context, name string, prior *manifest.Resource) (*kubeconfig.Cluster, error) {
	cluster := clusterOf(prior)
	rs := registry.CallOf(ctx).Records
	if cluster == "" || rs == nil {
		return nil, nil
	}
	clusters, err := rs.Records(ctx, APIVersion, KindCluster)
	if err != nil {
		return nil, err
	}
	for _, c := range clusters {
		if c.Metadata.Name != cluster {
			continue
		}
		rec, err := recordedNodes(c.Status)
		if err != nil {
			return nil, nil
		}
		for _, n := range rec.Nodes {
			if n.Role != RoleServer || n.Name == name {
				continue
			}
			loc := &location{Role: n.Role, Address: n.Address, SSHHostKey: n.SSHHostKey, SSH: rec.SSH}
			h, err := p.pool.Host(ctx, loc.target())
			if err != nil {
				continue
			}
			st, err := p.nodeStatus(ctx, h, n.Name, loc)
			if err != nil || st["phase"] != PhaseReady {
				continue
			}
			raw, _ := st["kubeconfig"].(string)
			url, _ := st["url"].(string)
			api, err := clusterAPI(raw, url, cluster)
			if err != nil || api.Ready(ctx) != nil {
				continue
			}
			return api, nil
		}
	}
	return nil, nil
}

// clusterOf is the cluster a recorded node belongs to, "" when none.
func clusterOf(prior *manifest.Resource) string {
	if prior == nil {
		return ""
	}
	cluster, _ := prior.Status["cluster"].(string)
	if cluster == "" {
		cluster, _ = prior.Spec["cluster"].(string)
	}
	return cluster
}
