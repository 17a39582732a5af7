package kubeconfig_test

import (
	"encoding/base64"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openctl/openctl/errcode"
)

// k3sYAML has the shape of /etc/rancher/k3s/k3s.yaml, with credentials
// whose text and bytes contain "default": the base64 of the CA data reads
// "xdefaultxdefault" and the client certificate and key decode to
// "default", so that any text replacement of "default" would show.
const k3sYAML = `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: xdefaultxdefault
    server: https://127.0.0.1:6443
  name: default
contexts:
- context:
    cluster: default
    user: default
  name: default
current-context: default
kind: Config
preferences: {}
users:
- name: default
  user:
    client-certificate-data: ZGVmYXVsdA==
    client-key-data: ZGVmYXVsdA==
`

// caData is what "xdefaultxdefault" decodes to.
func caData(t testing.TB) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString("xdefaultxdefault")
	require.NoError(t, err)
	return b
}

// loadConfig decodes b with clientcmd and fails the test on an error.
func loadConfig(t testing.TB, b []byte) *clientcmdapi.Config {
	t.Helper()
	cfg, err := clientcmd.Load(b)
	require.NoError(t, err, "%s", b)
	return cfg
}

// encode is clientcmd.Write that fails the test on an error.
func encode(t testing.TB, cfg *clientcmdapi.Config) []byte {
	t.Helper()
	b, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return b
}

// oneCluster returns a kubeconfig holding one cluster, user and context,
// all named name, whose server is server.
func oneCluster(t testing.TB, name, server string) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: []byte("ca of " + name)}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "token of " + name}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	return encode(t, cfg)
}

// keys returns the names of a kubeconfig's clusters, users and contexts,
// each list sorted.
func keys(cfg *clientcmdapi.Config) (clusters, users, contexts []string) {
	for k := range cfg.Clusters {
		clusters = append(clusters, k)
	}
	for k := range cfg.AuthInfos {
		users = append(users, k)
	}
	for k := range cfg.Contexts {
		contexts = append(contexts, k)
	}
	slices.Sort(clusters)
	slices.Sort(users)
	slices.Sort(contexts)
	return
}

// requireCode checks that err carries code and a message in the package's
// form.
func requireCode(t testing.TB, err error, code errcode.Code) {
	t.Helper()
	require.Error(t, err)
	assert.Truef(t, errors.Is(err, code), "want %s, got %s: %v", code, errcode.Of(err), err)
	assert.Truef(t, strings.HasPrefix(err.Error(), "kubeconfig: "), "message %q", err.Error())
}

// mode returns path's permission bits.
func mode(t testing.TB, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	require.NoError(t, err)
	return st.Mode().Perm()
}
