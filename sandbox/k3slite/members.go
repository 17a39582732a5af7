package k3slite

import (
	"context"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// removeAnnotation asks k3s to remove a server's etcd member but keep its
// Node (k3s#9817).
const removeAnnotation = "etcd.k3s.cattle.io/remove"

// watchNodes carries out what Node changes mean for k3s on every server,
// as the stand-in's informer does (here by listing every PodSyncInterval;
// a Node found again with another UID was deleted in between):
// deleting a Node removes its node-password secret and its etcd member
// (k3s#3973), which makes that server exit; the annotation
// etcd.k3s.cattle.io/remove=true removes only the member. A server leaves
// its own member to the others.
func (n *Network) watchNodes(ctx context.Context, client kubernetes.Interface, c *cluster, self *member, log *slog.Logger) {
	seen := map[string]types.UID{} // a name seen again with another UID was deleted meanwhile
	t := time.NewTicker(n.opts.PodSyncInterval)
	defer t.Stop()
	for {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil {
			now := map[string]types.UID{}
			for _, node := range nodes.Items {
				now[node.Name] = node.UID
				if node.Annotations[removeAnnotation] == "true" {
					n.removeMembers(c, node.Name, self, log)
				}
			}
			for name, uid := range seen {
				if now[name] == uid {
					continue
				}
				log.Info("Node " + name + " deleted")
				err := client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, nodePasswordSecret(name), metav1.DeleteOptions{})
				if err == nil {
					log.Info("Deleted node password secret of removed node " + name)
				} else if !apierrors.IsNotFound(err) && ctx.Err() == nil {
					log.Warn("node password secret not deleted", "node", name, "err", err)
				}
				n.removeMembers(c, name, self, log)
			}
			seen = now
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (n *Network) removeMembers(c *cluster, node string, self *member, log *slog.Logger) {
	for _, name := range n.removeNodeMembers(c, node, self) {
		log.Info("Removed etcd member " + name + " of node " + node)
	}
}
