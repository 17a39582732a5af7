package standin

import (
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// adminClient is a client from kubeconfig and the CA it trusts.
func adminClient(kubeconfig string) (kubernetes.Interface, []byte, error) {
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	caPEM := restCfg.TLSClientConfig.CAData
	if len(caPEM) == 0 && restCfg.TLSClientConfig.CAFile != "" {
		if caPEM, err = os.ReadFile(restCfg.TLSClientConfig.CAFile); err != nil {
			return nil, nil, err
		}
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, nil, err
	}
	return client, caPEM, nil
}
