package standin

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/membership"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/openctl/openctl/internal/k3semu"
)

// removeAnnotation asks k3s to remove a server's etcd member but keep its
// Node (k3s#9817).
const removeAnnotation = "etcd.k3s.cattle.io/remove"

// watchNodes carries out what Node changes mean for k3s on every server:
// deleting a Node removes its node-password secret and its etcd member
// (k3s#3973), which then stops and makes that server exit; the annotation
// etcd.k3s.cattle.io/remove=true removes only the member. Every other
// server acts; the second removal of the same member finds it gone, which
// is fine.
func watchNodes(ctx context.Context, client kubernetes.Interface, e *embed.Etcd, log *slog.Logger) {
	factory := informers.NewSharedInformerFactory(client, 10*time.Minute)
	inf := factory.Core().V1().Nodes().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			if node, ok := obj.(*corev1.Node); ok && node.Annotations[removeAnnotation] == "true" {
				removeMember(ctx, e, node.Name, log)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			node, ok := obj.(*corev1.Node)
			if !ok {
				return
			}
			log.Info("Node " + node.Name + " deleted")
			err := client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, k3semu.NodePasswordSecret(node.Name), metav1.DeleteOptions{})
			if err == nil {
				log.Info("Deleted node password secret of removed node " + node.Name)
			} else if !apierrors.IsNotFound(err) && ctx.Err() == nil {
				log.Warn("node password secret not deleted", "node", node.Name, "err", err)
			}
			removeMember(ctx, e, node.Name, log)
		},
	})
	if err != nil {
		log.Warn("node watch not started", "err", err)
		return
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
}

// removeMember removes the etcd member of node (named <node>-<8 hex>).
// A server leaves its own member to the others: removing it would stop
// the etcd under its own apiserver in the middle of the work. etcd
// refuses a removal while some remaining member has not been connected
// for 5 s ("unhealthy cluster", e.g. just after a restart); that is
// retried every 2 s for a minute, as k3s's controllers retry.
func removeMember(ctx context.Context, e *embed.Etcd, node string, log *slog.Logger) {
	re := regexp.MustCompile("^" + regexp.QuoteMeta(node) + "-[0-9a-f]{8}$")
	for _, m := range e.Server.Cluster().Members() {
		if !re.MatchString(m.Name) || m.ID == e.Server.MemberID() {
			continue
		}
		go func() {
			for attempt := 0; ; attempt++ {
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, err := e.Server.RemoveMember(rctx, uint64(m.ID))
				cancel()
				switch {
				case err == nil:
					log.Info("Removed etcd member " + m.Name + " of node " + node)
					return
				case errors.Is(err, membership.ErrIDRemoved), errors.Is(err, membership.ErrIDNotFound), ctx.Err() != nil:
					return
				case attempt == 30:
					log.Warn("etcd member not removed", "member", m.Name, "err", err)
					return
				}
				if attempt == 0 {
					log.Info("etcd member "+m.Name+" not removed yet; retrying", "err", err)
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(2 * time.Second):
				}
			}
		}()
	}
}
