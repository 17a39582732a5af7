package standin

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// NodeBootstrapTokenAuthGroup is the extra group `k3s token create` gives
// its tokens (k3s pkg/kubeadm: system:bootstrappers:k3s:default-node-token);
// the supervisor lets such a token act as an agent (the node user).
const NodeBootstrapTokenAuthGroup = "system:bootstrappers:k3s:default-node-token"

// errServerTokenFormat is k3s's refusal of a bootstrap token (id.secret)
// used as a server token (k3s#7313, PR #7389).
var errServerTokenFormat = errors.New("failed to normalize server token; must be in format K10<CA-HASH>::<USERNAME>:<PASSWORD> or <PASSWORD>")

// isBootstrapToken reports whether s has the form [a-z0-9]{6}.[a-z0-9]{16}.
func isBootstrapToken(s string) bool { return bootstraputil.IsValidBootstrapToken(s) }

// checkServerToken refuses a server --token whose credentials (the whole
// short token, or the part after :: of a full one) are a bootstrap token.
func checkServerToken(token string) error {
	token = strings.TrimSpace(token)
	creds := token
	if _, rest, ok := strings.Cut(token, "::"); ok && strings.HasPrefix(token, "K10") {
		creds = rest
	}
	if isBootstrapToken(creds) {
		return errServerTokenFormat
	}
	return nil
}

// bootstrapTokenSecret is the kubeadm-style Secret k3s stores a bootstrap
// token in: kube-system/bootstrap-token-<id>, type
// bootstrap.kubernetes.io/token, usages signing and authentication, and
// the extra group NodeBootstrapTokenAuthGroup (k3s pkg/kubeadm). A zero
// ttl never expires.
func bootstrapTokenSecret(token, description string, ttl time.Duration, now time.Time) (*corev1.Secret, error) {
	m := bootstraputil.BootstrapTokenRegexp.FindStringSubmatch(token)
	if len(m) != 3 {
		return nil, fmt.Errorf("the bootstrap token %q was not of the form %q", token, bootstrapapi.BootstrapTokenPattern)
	}
	data := map[string][]byte{
		bootstrapapi.BootstrapTokenIDKey:               []byte(m[1]),
		bootstrapapi.BootstrapTokenSecretKey:           []byte(m[2]),
		bootstrapapi.BootstrapTokenUsageSigningKey:     []byte("true"),
		bootstrapapi.BootstrapTokenUsageAuthentication: []byte("true"),
		bootstrapapi.BootstrapTokenExtraGroupsKey:      []byte(NodeBootstrapTokenAuthGroup),
	}
	if description != "" {
		data[bootstrapapi.BootstrapTokenDescriptionKey] = []byte(description)
	}
	if ttl > 0 {
		data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(now.Add(ttl).UTC().Format(time.RFC3339))
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstraputil.BootstrapTokenSecretName(m[1]), Namespace: metav1.NamespaceSystem},
		Type:       corev1.SecretType(bootstrapapi.SecretTypeBootstrapToken),
		Data:       data,
	}, nil
}

// validBootstrapToken reports whether token is a bootstrap token stored
// in the cluster that may authenticate now: its Secret exists with that
// type and secret, has usage-bootstrap-authentication, has not expired,
// and carries NodeBootstrapTokenAuthGroup.
func validBootstrapToken(ctx context.Context, client kubernetes.Interface, token string, now time.Time) bool {
	m := bootstraputil.BootstrapTokenRegexp.FindStringSubmatch(token)
	if len(m) != 3 {
		return false
	}
	sec, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, bootstraputil.BootstrapTokenSecretName(m[1]), metav1.GetOptions{})
	if err != nil || sec.Type != corev1.SecretType(bootstrapapi.SecretTypeBootstrapToken) {
		return false
	}
	if subtle.ConstantTimeCompare(sec.Data[bootstrapapi.BootstrapTokenSecretKey], []byte(m[2])) != 1 ||
		string(sec.Data[bootstrapapi.BootstrapTokenIDKey]) != m[1] ||
		string(sec.Data[bootstrapapi.BootstrapTokenUsageAuthentication]) != "true" {
		return false
	}
	if exp := sec.Data[bootstrapapi.BootstrapTokenExpirationKey]; len(exp) > 0 {
		t, err := time.Parse(time.RFC3339, string(exp))
		if err != nil || !now.Before(t) {
			return false
		}
	}
	return slices.Contains(strings.Split(string(sec.Data[bootstrapapi.BootstrapTokenExtraGroupsKey]), ","), NodeBootstrapTokenAuthGroup)
}
