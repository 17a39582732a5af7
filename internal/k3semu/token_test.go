package k3semu

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestBootstrapTokenSecret(t *testing.T) {
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	sec, err := BootstrapTokenSecret("abcdef.0123456789abcdef", "for agents", time.Hour, now)
	require.NoError(t, err)
	assert.Equal(t, "bootstrap-token-abcdef", sec.Name)
	assert.Equal(t, "kube-system", sec.Namespace)
	assert.Equal(t, corev1.SecretType("bootstrap.kubernetes.io/token"), sec.Type)
	got := map[string]string{}
	for k, v := range sec.Data {
		got[k] = string(v)
	}
	assert.Equal(t, map[string]string{
		"token-id": "abcdef", "token-secret": "0123456789abcdef", "description": "for agents",
		"expiration":                     "2026-12-01T21:00:00Z",
		"usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true",
		"auth-extra-groups": "system:bootstrappers:k3s:default-node-token",
	}, got)
	sec, err = BootstrapTokenSecret("abcdef.0123456789abcdef", "", 0, now)
	require.NoError(t, err)
	assert.NotContains(t, sec.Data, "expiration", "a zero TTL never expires")
	assert.NotContains(t, sec.Data, "description")
	_, err = BootstrapTokenSecret("ABCDEF.0123456789abcdef", "", 0, now)
	assert.EqualError(t, err, `the bootstrap token "ABCDEF.0123456789abcdef" was not of the form "\\A([a-z0-9]{6})\\.([a-z0-9]{16})\\z"`)
}

func TestValidBootstrapToken(t *testing.T) {
	now := time.Now()
	ctx := context.Background()
	client := fake.NewClientset()
	add := func(tok string, ttl time.Duration, mutate func(*corev1.Secret)) {
		sec, err := BootstrapTokenSecret(tok, "", ttl, now)
		require.NoError(t, err)
		if mutate != nil {
			mutate(sec)
		}
		_, err = client.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, sec, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	add("aaaaaa.0123456789abcdef", time.Hour, nil)
	add("bbbbbb.0123456789abcdef", 0, nil)
	add("cccccc.0123456789abcdef", time.Second, nil)
	add("dddddd.0123456789abcdef", 0, func(s *corev1.Secret) { delete(s.Data, "usage-bootstrap-authentication") })
	add("eeeeee.0123456789abcdef", 0, func(s *corev1.Secret) { s.Data["auth-extra-groups"] = []byte("system:bootstrappers:other") })
	add("ffffff.0123456789abcdef", 0, func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque })
	for tok, want := range map[string]bool{
		"aaaaaa.0123456789abcdef": true,
		"bbbbbb.0123456789abcdef": true,
		"aaaaaa.0123456789abcdeX": false, // not the format
		"aaaaaa.0123456789abcdee": false, // wrong secret
		"zzzzzz.0123456789abcdef": false, // unknown
		"dddddd.0123456789abcdef": false, // not for authentication
		"eeeeee.0123456789abcdef": false, // not the k3s node group
		"ffffff.0123456789abcdef": false, // not a bootstrap token secret
	} {
		assert.Equal(t, want, validBootstrapToken(ctx, client, tok, now), tok)
	}
	assert.True(t, validBootstrapToken(ctx, client, "cccccc.0123456789abcdef", now))
	assert.False(t, validBootstrapToken(ctx, client, "cccccc.0123456789abcdef", now.Add(2*time.Second)), "expired")
}

func TestCheckServerToken(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	for tok, bad := range map[string]bool{
		"s3cret": false, "K10" + hash + "::server:s3cret": false, "": false,
		"abcdef.0123456789abcdef": true, "K10" + hash + "::abcdef.0123456789abcdef": true,
	} {
		err := CheckServerToken(tok)
		if bad {
			assert.EqualError(t, err, "failed to normalize server token; must be in format K10<CA-HASH>::<USERNAME>:<PASSWORD> or <PASSWORD>", tok)
		} else {
			assert.NoError(t, err, tok)
		}
	}
}
