package standin

import (
	"os"

	"k8s.io/component-base/cli"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/openctl/openctl/internal/k3semu"
)

// runKubectl runs the real kubectl. As in k3s, without $KUBECONFIG or
// --kubeconfig it uses the k3s kubeconfig when that file exists.
func runKubectl(args []string) int {
	if _, ok := os.LookupEnv("KUBECONFIG"); !ok && !hasKubeconfigFlag(args) {
		if _, err := os.Stat(k3semu.DefaultKubeconfig); err == nil {
			os.Setenv("KUBECONFIG", k3semu.DefaultKubeconfig)
		}
	}
	os.Args = append([]string{"kubectl"}, args...)
	command := kubectlcmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		cmdutil.CheckErr(err) // prints and exits like kubectl
	}
	return 0
}

func hasKubeconfigFlag(args []string) bool {
	for _, a := range args {
		if a == "--kubeconfig" || len(a) > 13 && a[:13] == "--kubeconfig=" {
			return true
		}
	}
	return false
}
