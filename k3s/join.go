package k3s

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/remote"
)

// Check refuses, in Plan as in Apply before anything is done, a Node
// that names no server and whose cluster cannot be picked (pickCluster):
// a named cluster that does not exist, none at all, or several and none
// named.
func (p *Provider) Check(ctx context.Context, r *manifest.Resource) error {
	if r.Kind != KindNode {
		return nil
	}
	if init, _ := r.Spec["init"].(bool); init || r.Spec["server"] != nil {
		return nil
	}
	cluster, _ := r.Spec["cluster"].(string)
	_, err := pickCluster(ctx, r.Metadata.Name, cluster)
	return err
}

// pickCluster returns the record of the cluster a node joins: the one
// named, or the only Cluster openctl has a record of. Several clusters
// and none named is a CONFLICT error listing them; a named cluster that
// is not recorded, or none at all, is NOT_FOUND.
func pickCluster(ctx context.Context, name, cluster string) (*manifest.Resource, error) {
	rs := registry.CallOf(ctx).Records
	if rs == nil {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("k3s: node %s: spec.server is required when the provider runs without an engine to find its cluster", name))
	}
	clusters, err := rs.Records(ctx, APIVersion, KindCluster)
	if err != nil {
		return nil, err
	}
	var names []string
	var pick *manifest.Resource
	for _, c := range clusters {
		names = append(names, c.Metadata.Name)
		if c.Metadata.Name == cluster {
			pick = c
		}
	}
	switch {
	case cluster != "" && pick == nil:
		return nil, errcode.New(errcode.NotFound, fmt.Sprintf("k3s: node %s: cluster %q does not exist (clusters: %s)", name, cluster, orNone(names)))
	case cluster != "":
		return pick, nil
	case len(clusters) == 0:
		return nil, errcode.New(errcode.NotFound, fmt.Sprintf("k3s: node %s: there is no cluster to join: apply a Cluster first, or give spec.server and a token", name))
	case len(clusters) > 1:
		return nil, errcode.New(errcode.Conflict, fmt.Sprintf("k3s: node %s names no cluster and there are %d (%s): set spec.cluster to one of them; nothing was done on the host", name, len(clusters), strings.Join(names, ", ")))
	}
	return clusters[0], nil
}

// joinInfo fills in, for a node that names no server, the cluster it
// joins (pickCluster): the server URL, its tokens and the cluster's k3s
// settings.
func (p *Provider) joinInfo(ctx context.Context, name string, s *NodeSpec) error {
	if s.Init || s.Server != "" {
		return nil
	}
	pick, err := pickCluster(ctx, name, s.Cluster)
	if err != nil {
		return err
	}
	cs, err := p.clusterSpec(pick)
	if err != nil {
		return err
	}
	call := registry.CallOf(ctx)
	call.Prior = pick
	live, err := p.getCluster(registry.WithCall(ctx, call), pick.ID())
	if err != nil {
		return errcode.Wrap(errcode.Of(err), fmt.Sprintf("k3s: node %s: reading cluster %s", name, pick.Metadata.Name), err)
	}
	str := func(k string) string { v, _ := live.Status[k].(string); return v }
	s.Cluster = pick.Metadata.Name
	s.Server = str("endpoint")
	s.AgentToken = str("agentToken")
	s.Kubeconfig = str("kubeconfig")
	if s.Role == RoleServer {
		s.Token = str("token")
	}
	if s.K3s.Version == "" {
		s.K3s.Version = cs.K3s.Version
	}
	s.K3s.ClusterCIDR, s.K3s.ServiceCIDR, s.K3s.Flannel, s.K3s.Disable = cs.K3s.ClusterCIDR, cs.K3s.ServiceCIDR, cs.K3s.Flannel, cs.K3s.Disable
	if s.Server == "" || s.AgentToken == "" {
		return errcode.New(errcode.Internal, fmt.Sprintf("k3s: node %s: cluster %s has no endpoint or token yet", name, pick.Metadata.Name))
	}
	return s.validate()
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// forgetReplaced makes room for a machine that replaces a lost one: a
// host without k3s joining a cluster whose API still has a Node of its
// name (its VM was destroyed and made again, or its disk replaced) would
// be refused for ever — its new node password is not the old Node's,
// and a server's etcd member name is taken. The old Node is deleted
// through the cluster first (k3s then drops its node password and, for a
// server, its etcd member), as deleting the node would; nothing ran on
// the new host yet to drain.
func (n *nodeApply) forgetReplaced(ctx context.Context) error {
	s := n.s
	if n.pr.binary != "" || s.Init || s.Kubeconfig == "" {
		return nil
	}
	api, err := clusterAPI(s.Kubeconfig, s.Server, firstOf(s.Cluster, n.name))
	if err != nil {
		return n.p.nodeErr(n.name, "reach the cluster's API", err)
	}
	cs := api.Kubernetes()
	if _, err := cs.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return n.p.nodeErr(n.name, "look for it in the cluster's API", errcode.Wrap(errcode.Transient, "", err))
	}
	registry.CallOf(ctx).ReportStep("deleting the Node " + n.name + " of the machine this host replaces")
	return deleteNodeObject(ctx, cs, n.name, "deleting the Node of the machine this host replaces")
}

// rejoinIfMissing makes an installed node that is gone from the
// cluster's API join again: an agent registers again when restarted; a
// server whose etcd member went with its Node (deleted) joins afresh once
// its datastore is gone, and one whose member is still the cluster's (a
// join interrupted before its Node registered) is only started again.
func (n *nodeApply) rejoinIfMissing(ctx context.Context) error {
	s, pr := n.s, n.pr
	if n.changed || pr.binary == "" || s.Init || s.Kubeconfig == "" {
		return nil
	}
	missing, err := n.p.missingFromAPI(ctx, n.h, n.name, n.loc, s)
	if err != nil {
		return n.p.nodeErr(n.name, "look for it in the cluster's API", err)
	}
	if !missing {
		return nil
	}
	if s.Role == RoleServer {
		// A join that was interrupted before the Node registered left its
		// etcd member in the cluster: k3s, started again with its
		// datastore, carries on with it. Only a server whose member went
		// with its Node joins afresh. k3s is stopped first, so that a
		// join still under way cannot add its member after the check.
		if _, err := n.h.Run(ctx, remote.Command{Step: "stop k3s", Script: stopScript(pr.init, s.Role)}); err != nil {
			return n.p.nodeErr(n.name, "stop k3s", err)
		}
		pr.active = false
		member, err := hasEtcdMember(ctx, s, n.name)
		if err != nil {
			return n.p.nodeErr(n.name, "list the cluster's etcd members", err)
		}
		if member {
			registry.CallOf(ctx).ReportStep("starting " + n.name + " again: its etcd member is the cluster's, its Node not registered yet")
			return nil // start() starts it
		}
		registry.CallOf(ctx).ReportStep("re-joining " + n.name + ", missing from the cluster's API")
		if _, err := n.h.Run(ctx, remote.Command{Step: "clear the datastore", Script: "rm -rf " + dataDir + "/server/db"}); err != nil {
			return n.p.nodeErr(n.name, "clear the datastore", err)
		}
		n.changed = true
		return nil
	}
	registry.CallOf(ctx).ReportStep("re-joining " + n.name + ", missing from the cluster's API")
	n.changed = true
	return nil
}

// missingFromAPI reports whether the cluster's API answers without node
// name in it.
func (p *Provider) missingFromAPI(ctx context.Context, h *remote.Host, name string, loc *location, s *NodeSpec) (bool, error) {
	api, err := p.nodeAPI(ctx, h, name, loc, s)
	if err != nil {
		return false, err
	}
	_, err = api.Kubernetes().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}
