package k3s

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestKubeVIPManifest(t *testing.T) {
	dec := yaml.NewDecoder(bytes.NewReader(kubeVIPManifest("10.0.0.100", "eth0")))
	kinds := map[string]map[string]any{}
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		kinds[doc["kind"].(string)] = doc
	}
	require.Len(t, kinds, 4, "ServiceAccount, ClusterRole, ClusterRoleBinding, DaemonSet")
	ds := kinds["DaemonSet"]["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	assert.Equal(t, true, ds["hostNetwork"])
	assert.Equal(t, "kube-vip", ds["serviceAccountName"])
	c := ds["containers"].([]any)[0].(map[string]any)
	env := map[string]string{}
	for _, e := range c["env"].([]any) {
		m := e.(map[string]any)
		env[m["name"].(string)] = m["value"].(string)
	}
	assert.Equal(t, map[string]string{
		"address": "10.0.0.100", "port": "6443", "vip_interface": "eth0", "vip_arp": "true", "vip_subnet": "32",
		"cp_enable": "true", "cp_namespace": "kube-system", "vip_leaderelection": "true", "vip_leasename": "plndr-cp-lock",
		"vip_leaseduration": "5", "vip_renewdeadline": "3", "vip_retryperiod": "1",
	}, env)
	caps := c["securityContext"].(map[string]any)["capabilities"].(map[string]any)["add"]
	assert.Equal(t, []any{"NET_ADMIN", "NET_RAW", "SYS_TIME"}, caps)
	rules := kinds["ClusterRole"]["rules"].([]any)
	assert.Contains(t, rules, map[string]any{"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"}, "verbs": []any{"list", "get", "watch", "update", "create"}})
}
