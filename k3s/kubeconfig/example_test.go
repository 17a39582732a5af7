package kubeconfig_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/openctl/openctl/k3s/kubeconfig"
)

// What /etc/rancher/k3s/k3s.yaml looks like (credentials shortened).
const exampleK3sYAML = `apiVersion: v1
kind: Config
clusters:
- name: default
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: Q0EgZGF0YQ==
contexts:
- name: default
  context:
    cluster: default
    user: default
current-context: default
users:
- name: default
  user:
    client-certificate-data: Y2VydA==
    client-key-data: a2V5
`

func ExampleRewrite() {
	kc, err := kubeconfig.Rewrite([]byte(exampleK3sYAML), "https://10.0.0.10:6443", "lab")
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg, _ := clientcmd.Load(kc)
	ctx := cfg.Contexts[cfg.CurrentContext]
	fmt.Println("context:", cfg.CurrentContext, "cluster:", ctx.Cluster, "user:", ctx.AuthInfo)
	fmt.Println("server:", cfg.Clusters["lab"].Server)
	fmt.Printf("CA: %s\n", cfg.Clusters["lab"].CertificateAuthorityData)

	_, err = kubeconfig.Rewrite([]byte(exampleK3sYAML), "http://10.0.0.10:6443", "lab")
	fmt.Println(err)
	// Output:
	// context: lab cluster: lab user: lab
	// server: https://10.0.0.10:6443
	// CA: CA data
	// kubeconfig: server "http://10.0.0.10:6443": want an https:// URL such as https://10.0.0.10:6443 (INVALID_REQUEST)
}

func ExampleMerge() {
	dir, _ := os.MkdirTemp("", "kube")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, ".kube", "config")

	lab, _ := kubeconfig.Rewrite([]byte(exampleK3sYAML), "https://10.0.0.10:6443", "lab")
	edge, _ := kubeconfig.Rewrite([]byte(exampleK3sYAML), "https://10.0.1.10:6443", "edge")
	for _, kc := range [][]byte{lab, edge} {
		if err := kubeconfig.Merge(context.Background(), path, kc); err != nil {
			fmt.Println(err)
			return
		}
	}
	show := func() {
		cfg, _ := clientcmd.LoadFromFile(path)
		var names []string
		for name := range cfg.Contexts {
			names = append(names, name)
		}
		slices.Sort(names)
		fmt.Printf("contexts: %s, current: %q\n", strings.Join(names, " "), cfg.CurrentContext)
	}
	show()
	st, _ := os.Stat(path)
	fmt.Println(st.Mode().Perm())

	if err := kubeconfig.Remove(context.Background(), path, "lab"); err != nil {
		fmt.Println(err)
		return
	}
	show()
	// Output:
	// contexts: edge lab, current: "lab"
	// -rw-------
	// contexts: edge, current: ""
}
