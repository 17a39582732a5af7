package k3semu

import (
	"fmt"
	"os"
	"strconv"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// DefaultKubeconfig is where k3s writes its kubeconfig when run as root.
const DefaultKubeconfig = "/etc/rancher/k3s/k3s.yaml"

// WriteKubeconfig writes an admin kubeconfig with cluster, user and context
// all named "default", as k3s does, embedding the CA and client credentials.
func WriteKubeconfig(f FS, p, server string, caPEM []byte, admin *KeyPair, mode string) error {
	keyPEM, err := admin.KeyPEM()
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["default"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["default"] = &clientcmdapi.AuthInfo{ClientCertificateData: admin.CertPEM, ClientKeyData: keyPEM}
	cfg.Contexts["default"] = &clientcmdapi.Context{Cluster: "default", AuthInfo: "default"}
	cfg.CurrentContext = "default"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("standin: kubeconfig: %w", err)
	}
	perm := uint64(0o600)
	if mode != "" {
		if perm, err = strconv.ParseUint(mode, 8, 32); err != nil {
			return fmt.Errorf("standin: kubeconfig mode %q: %w", mode, err)
		}
	}
	return f.WriteFile(p, data, os.FileMode(perm)&os.ModePerm)
}
