package k3semu

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseAgentArgs(t *testing.T) {
	cfg, err := ParseAgentArgs(OSFS{}, []string{"--node-name", "w1", "--kubelet-arg", "a=b", "--debug"},
		env(map[string]string{"K3S_URL": "https://10.0.0.1:6443", "K3S_TOKEN": "tok"}))
	require.NoError(t, err)
	assert.Equal(t, "https://10.0.0.1:6443", cfg.Server)
	assert.Equal(t, "tok", cfg.Token)
	assert.Equal(t, "w1", cfg.NodeName)
	assert.Equal(t, DefaultNodePasswordFile, cfg.NodePasswordFile)
	assert.ElementsMatch(t, []string{"kubelet-arg", "debug"}, cfg.Ignored)

	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, map[string]string{"K3S_TOKEN": "t"}, "--server is required"},
		{[]string{"-s", "http://x:6443"}, map[string]string{"K3S_TOKEN": "t"}, "only https:// URLs are supported"},
		{[]string{"-s", "https://x:6443"}, nil, "--token is required"},
		// Not an agent flag in k3s either.
		{[]string{"-s", "https://x:6443", "-t", "t", "--write-kubeconfig-mode=0600"}, nil, "unknown flag: --write-kubeconfig-mode"},
	} {
		_, err := ParseAgentArgs(OSFS{}, c.args, env(c.env))
		require.Error(t, err, "%v", c.args)
		assert.Contains(t, err.Error(), c.want)
	}
}

func TestParseServerArgs(t *testing.T) {
	cfg, err := ParseServerArgs(OSFS{}, []string{"--server=https://10.0.0.1:6443", "--agent-token", "a9", "--disable", "traefik", "--etcd-arg", "x=y"},
		env(map[string]string{"K3S_TOKEN": "s3"}))
	require.NoError(t, err)
	assert.Equal(t, "https://10.0.0.1:6443", cfg.Server)
	assert.Equal(t, "s3", cfg.Token)
	assert.Equal(t, "a9", cfg.AgentToken)
	assert.Equal(t, DefaultNodeMonitorGracePeriod, cfg.NodeMonitorGracePeriod)
	assert.ElementsMatch(t, []string{"disable", "etcd-arg"}, cfg.Ignored)
	assert.Equal(t, map[string]string{
		"cluster-cidr": "10.42.0.0/16", "service-cidr": "10.43.0.0/16", "cluster-dns": "10.43.0.10",
		"cluster-domain": "cluster.local", "flannel-backend": "vxlan", "egress-selector-mode": "agent",
		"secrets-encryption": "false", "disable-network-policy": "false", "disable-cloud-controller": "false",
		"disable-helm-controller": "false", "disable-kube-proxy": "false", "disable-servicelb": "false",
	}, cfg.Critical)
	cfg, err = ParseServerArgs(OSFS{}, []string{"--disable=traefik,servicelb", "--flannel-backend", "none", "--secrets-encryption"}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, "true", cfg.Critical["disable-servicelb"])
	assert.Equal(t, "none", cfg.Critical["flannel-backend"])
	assert.Equal(t, "true", cfg.Critical["secrets-encryption"])

	_, err = ParseServerArgs(OSFS{}, []string{"--server", "https://10.0.0.1:6443"}, env(nil))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--token is required")
	_, err = ParseServerArgs(OSFS{}, nil, env(map[string]string{"K3S_URL": "10.0.0.1:6443", "K3S_TOKEN": "t"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "only https:// URLs are supported")
}
