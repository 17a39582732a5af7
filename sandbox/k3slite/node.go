package k3slite

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ensureSystemObjects creates the namespaces and `default` service
// accounts the apiserver and controller-manager would (kubelite has
// neither); objects already there are fine.
func ensureSystemObjects(ctx context.Context, client kubernetes.Interface) error {
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("standin: namespace %s: %w", ns, err)
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
		_, err = client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("standin: service account %s/default: %w", ns, err)
		}
	}
	return nil
}
