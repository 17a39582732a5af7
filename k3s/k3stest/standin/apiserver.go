package standin

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// apiServerArgs are the kube-apiserver flags, k3s-like, followed by any
// --kube-apiserver-arg values.
func apiServerArgs(cfg ServerConfig, tlsDir string, nodeIP net.IP) []string {
	bind := cfg.BindAddress
	if bind == "" {
		bind = "0.0.0.0"
	}
	args := []string{
		"--etcd-servers=http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.EtcdClientPort)),
		"--storage-backend=etcd3",
		"--bind-address=" + bind,
		"--secure-port=" + strconv.Itoa(cfg.HTTPSListenPort),
		"--advertise-address=" + nodeIP.String(),
		"--tls-cert-file=" + filepath.Join(tlsDir, "serving-kube-apiserver.crt"),
		"--tls-private-key-file=" + filepath.Join(tlsDir, "serving-kube-apiserver.key"),
		"--client-ca-file=" + filepath.Join(tlsDir, "client-ca.crt"),
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--anonymous-auth=true",
		"--enable-admission-plugins=NodeRestriction",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--api-audiences=https://kubernetes.default.svc.cluster.local,k3s",
		"--service-account-key-file=" + filepath.Join(tlsDir, "service.key"),
		"--service-account-signing-key-file=" + filepath.Join(tlsDir, "service.key"),
		"--service-cluster-ip-range=" + cfg.ServiceCIDR,
		"--profiling=false",
	}
	if nodeIP.IsLoopback() {
		// The lease reconciler refuses a loopback advertise address.
		args = append(args, "--endpoint-reconciler-type=none")
	}
	for _, a := range cfg.APIServerArgs {
		args = append(args, "--"+strings.TrimPrefix(a, "--"))
	}
	return args
}

// runAPIServer runs the real kube-apiserver in this process until ctx ends,
// as its cobra command would, but under ctx instead of its own signal
// handler.
func runAPIServer(ctx context.Context, args []string) error {
	s := options.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("standin: kube-apiserver flags: %w", err)
	}
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("standin: kube-apiserver: %w", err)
	}
	completed, err := s.Complete(ctx)
	if err != nil {
		return fmt.Errorf("standin: kube-apiserver: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return fmt.Errorf("standin: kube-apiserver: %w", utilerrors.NewAggregate(errs))
	}
	return app.Run(ctx, completed)
}
