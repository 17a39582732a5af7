package standin

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ensureDefaultServiceAccounts creates the `default` service account in the
// system namespaces, as the controller-manager (absent here) would.
func ensureDefaultServiceAccounts(ctx context.Context, client kubernetes.Interface, apiDone <-chan error) error {
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		delay := 100 * time.Millisecond
		for {
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
			_, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
			if err == nil || apierrors.IsAlreadyExists(err) {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case err := <-apiDone:
				return fmt.Errorf("standin: kube-apiserver exited: %w", err)
			case <-time.After(delay):
			}
			delay = min(delay*2, time.Second)
		}
	}
	return nil
}
