package kubeconfig_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/k3s/kubeconfig"
)

func TestRewrite(t *testing.T) {
	out, err := kubeconfig.Rewrite([]byte(k3sYAML), "https://10.0.0.10:6443", "lab")
	require.NoError(t, err)
	cfg := loadConfig(t, out)

	clusters, users, contexts := keys(cfg)
	assert.Equal(t, []string{"lab"}, clusters)
	assert.Equal(t, []string{"lab"}, users)
	assert.Equal(t, []string{"lab"}, contexts)
	assert.Equal(t, "lab", cfg.CurrentContext)
	assert.Equal(t, "https://10.0.0.10:6443", cfg.Clusters["lab"].Server)
	assert.Equal(t, "lab", cfg.Contexts["lab"].Cluster)
	assert.Equal(t, "lab", cfg.Contexts["lab"].AuthInfo)

	// The credentials are the same bytes: nothing was replaced in them.
	assert.Equal(t, caData(t), cfg.Clusters["lab"].CertificateAuthorityData)
	assert.Equal(t, []byte("default"), cfg.AuthInfos["lab"].ClientCertificateData)
	assert.Equal(t, []byte("default"), cfg.AuthInfos["lab"].ClientKeyData)
	assert.Contains(t, string(out), "certificate-authority-data: xdefaultxdefault")
	assert.NotContains(t, string(out), "127.0.0.1")
	assert.NotContains(t, string(out), "name: default")
}

// Every field other than the names and the server survives, even one
// whose value is "default".
func TestRewriteKeepsOtherFields(t *testing.T) {
	in := loadConfig(t, []byte(k3sYAML))
	in.Contexts["default"].Namespace = "default"
	in.AuthInfos["default"].Username = "default"
	in.AuthInfos["default"].Password = "default-password"
	in.Clusters["default"].TLSServerName = "default.example"
	in.Clusters["default"].ProxyURL = "http://proxy.default.svc:3128"

	out, err := kubeconfig.Rewrite(encode(t, in), "https://k3s.example:6443/", "default-lab")
	require.NoError(t, err)
	cfg := loadConfig(t, out)
	require.Contains(t, cfg.Contexts, "default-lab")
	assert.Equal(t, "default", cfg.Contexts["default-lab"].Namespace)
	assert.Equal(t, "default", cfg.AuthInfos["default-lab"].Username)
	assert.Equal(t, "default-password", cfg.AuthInfos["default-lab"].Password)
	assert.Equal(t, "default.example", cfg.Clusters["default-lab"].TLSServerName)
	assert.Equal(t, "http://proxy.default.svc:3128", cfg.Clusters["default-lab"].ProxyURL)
	assert.Equal(t, "https://k3s.example:6443/", cfg.Clusters["default-lab"].Server)
	assert.Equal(t, caData(t), cfg.Clusters["default-lab"].CertificateAuthorityData)
}

// Entries need not be named "default": whatever the one context names is
// renamed.
func TestRewriteOtherNames(t *testing.T) {
	in := loadConfig(t, oneCluster(t, "x", "https://127.0.0.1:6443"))
	in.Contexts["ctx"] = in.Contexts["x"]
	delete(in.Contexts, "x")
	in.CurrentContext = ""
	out, err := kubeconfig.Rewrite(encode(t, in), "https://[fd00::10]:6443", "lab")
	require.NoError(t, err)
	cfg := loadConfig(t, out)
	clusters, users, contexts := keys(cfg)
	assert.Equal(t, []string{"lab"}, clusters)
	assert.Equal(t, []string{"lab"}, users)
	assert.Equal(t, []string{"lab"}, contexts)
	assert.Equal(t, "lab", cfg.CurrentContext)
	assert.Equal(t, "https://[fd00::10]:6443", cfg.Clusters["lab"].Server)
	assert.Equal(t, "token of x", cfg.AuthInfos["lab"].Token)
}

// Rewriting a rewritten kubeconfig again with the same arguments changes
// nothing.
func TestRewriteIdempotent(t *testing.T) {
	once, err := kubeconfig.Rewrite([]byte(k3sYAML), "https://10.0.0.10:6443", "lab")
	require.NoError(t, err)
	twice, err := kubeconfig.Rewrite(once, "https://10.0.0.10:6443", "lab")
	require.NoError(t, err)
	assert.Equal(t, string(once), string(twice))
}

func TestRewriteRefuses(t *testing.T) {
	twoContexts := loadConfig(t, []byte(k3sYAML))
	c := *twoContexts.Contexts["default"]
	twoContexts.Contexts["other"] = &c
	twoClusters := loadConfig(t, []byte(k3sYAML))
	twoClusters.Clusters["spare"] = twoClusters.Clusters["default"]
	twoUsers := loadConfig(t, []byte(k3sYAML))
	twoUsers.AuthInfos["spare"] = twoUsers.AuthInfos["default"]
	noCluster := loadConfig(t, []byte(k3sYAML))
	noCluster.Contexts["default"].Cluster = "gone"
	noUser := loadConfig(t, []byte(k3sYAML))
	noUser.Contexts["default"].AuthInfo = "gone"

	const good = "https://10.0.0.10:6443"
	tests := []struct {
		name, data, server, cluster, want string
	}{
		{"not YAML", "{{{", good, "lab", "not a kubeconfig"},
		{"duplicate user", k3sYAML + "- name: default\n  user:\n    client-key-data: c2VjcmV0LWtleQ==\n", good, "lab", `duplicate name "default" in the list`},
		{"another kind", "apiVersion: v1\nkind: Pod\n", good, "lab", "not a kubeconfig"},
		{"empty", "", good, "lab", "found 0"},
		{"other YAML", "foo: bar\n", good, "lab", "found 0"},
		{"no contexts", strings.Replace(k3sYAML, "contexts:\n- context:\n    cluster: default\n    user: default\n  name: default\n", "", 1), good, "lab", "found 0"},
		{"two contexts", string(encode(t, twoContexts)), good, "lab", "found 2"},
		{"two clusters", string(encode(t, twoClusters)), good, "lab", "found 2 clusters and 1 users"},
		{"two users", string(encode(t, twoUsers)), good, "lab", "found 1 clusters and 2 users"},
		{"undefined cluster", string(encode(t, noCluster)), good, "lab", `cluster "gone"`},
		{"undefined user", string(encode(t, noUser)), good, "lab", `user "gone"`},
		{"http server", k3sYAML, "http://10.0.0.10:6443", "lab", "https://"},
		{"bare host", k3sYAML, "10.0.0.10:6443", "lab", "https://"},
		{"empty server", k3sYAML, "", "lab", "https://"},
		{"no host", k3sYAML, "https://:6443", "lab", "no host"},
		{"path", k3sYAML, "https://10.0.0.10:6443/k8s", "lab", "only https://host[:port]"},
		{"query", k3sYAML, "https://10.0.0.10:6443?x=1", "lab", "only https://host[:port]"},
		{"user info", k3sYAML, "https://u:p@10.0.0.10:6443", "lab", "only https://host[:port]"},
		{"bad URL", k3sYAML, "https://10.0.0.10:port", "lab", "server"},
		{"port out of range", k3sYAML, "https://10.0.0.10:70000", "lab", "port out of range"},
		{"port zero", k3sYAML, "https://10.0.0.10:0", "lab", "port out of range"},
		{"invalid UTF-8 host", k3sYAML, "https://\x9b:6443", "lab", "neither an IP address nor a DNS name"},
		{"host with a space", k3sYAML, "https://a%20b:6443", "lab", "server"},
		{"empty label", k3sYAML, "https://a..b:6443", "lab", "neither an IP address nor a DNS name"},
		{"opaque", k3sYAML, "https:10.0.0.10", "lab", "server"},
		{"empty name", k3sYAML, good, "", "empty name"},
		{"space in name", k3sYAML, good, "my lab", "spaces"},
		{"newline in name", k3sYAML, good, "lab\nx", "control"},
		{"invalid UTF-8 name", k3sYAML, good, "lab\xff", "control"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := kubeconfig.Rewrite([]byte(tt.data), tt.server, tt.cluster)
			require.Error(t, err)
			assert.Less(t, len(err.Error()), 400, "a short message")
			requireCode(t, err, errcode.Invalid)
			assert.Contains(t, err.Error(), tt.want)
			assert.Nil(t, out)
		})
	}
}

// The result is what clientcmd builds a client from: the rewritten
// server, and the credentials.
func TestRewriteUsable(t *testing.T) {
	out, err := kubeconfig.Rewrite([]byte(k3sYAML), "https://10.0.0.10:6443", "lab")
	require.NoError(t, err)
	cc, err := clientcmd.NewClientConfigFromBytes(out)
	require.NoError(t, err)
	raw, err := cc.RawConfig()
	require.NoError(t, err)
	assert.Equal(t, "lab", raw.CurrentContext)
	ns, _, err := cc.Namespace()
	require.NoError(t, err)
	assert.Equal(t, "default", ns)
}
