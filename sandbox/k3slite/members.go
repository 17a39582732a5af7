package k3slite

import (
	"context"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/internal/k3semu"
)

// removeAnnotation asks k3s to remove a server's etcd member but keep its
// Node (k3s#9817).
const removeAnnotation = "etcd.k3s.cattle.io/remove"

// watchNodes carries out what Node changes mean for k3s on every server,
// as the stand-in's informer does (here a list, then a watch from its
// resourceVersion, again after each watch ends; a Node found with another
// UID than before was deleted in between): deleting a Node removes its
// node-password secret and its etcd member (k3s#3973), which makes that
// server exit; the annotation etcd.k3s.cattle.io/remove=true removes only
// the member. A server leaves its own member to the others.
func (n *Network) watchNodes(ctx context.Context, client kubernetes.Interface, c *cluster, self *member, log *slog.Logger) {
	known := map[string]types.UID{}
	seen := func(node *corev1.Node) {
		if uid, ok := known[node.Name]; ok && uid != node.UID {
			n.nodeDeleted(ctx, client, c, node.Name, self, log)
		}
		known[node.Name] = node.UID
		if node.Annotations[removeAnnotation] == "true" {
			n.removeMembers(c, node.Name, self, log)
		}
	}
	for ctx.Err() == nil {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			backoff.Sleep(ctx, n.opts.PodSyncInterval)
			continue
		}
		now := map[string]bool{}
		for i := range list.Items {
			now[list.Items[i].Name] = true
		}
		for name := range known {
			if !now[name] {
				n.nodeDeleted(ctx, client, c, name, self, log)
				delete(known, name)
			}
		}
		for i := range list.Items {
			seen(&list.Items[i])
		}
		w, err := client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			backoff.Sleep(ctx, n.opts.PodSyncInterval)
			continue
		}
		for ev := range w.ResultChan() {
			node, ok := ev.Object.(*corev1.Node)
			if !ok {
				break // an error event: list again
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				seen(node)
			case watch.Deleted:
				n.nodeDeleted(ctx, client, c, node.Name, self, log)
				delete(known, node.Name)
			}
		}
		w.Stop()
		if ctx.Err() == nil {
			backoff.Sleep(ctx, min(n.opts.PodSyncInterval, 100*time.Millisecond))
		}
	}
}

// nodeDeleted does what k3s does when a Node goes: its node-password
// secret and its etcd member are removed.
func (n *Network) nodeDeleted(ctx context.Context, client kubernetes.Interface, c *cluster, name string, self *member, log *slog.Logger) {
	log.Info("Node " + name + " deleted")
	err := client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, k3semu.NodePasswordSecret(name), metav1.DeleteOptions{})
	if err == nil {
		log.Info("Deleted node password secret of removed node " + name)
	} else if !apierrors.IsNotFound(err) && ctx.Err() == nil {
		log.Warn("node password secret not deleted", "node", name, "err", err)
	}
	n.removeMembers(c, name, self, log)
}

func (n *Network) removeMembers(c *cluster, node string, self *member, log *slog.Logger) {
	for _, name := range n.removeNodeMembers(c, node, self) {
		log.Info("Removed etcd member " + name + " of node " + node)
	}
}
