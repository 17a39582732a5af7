package standin

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"

	"github.com/openctl/openctl/internal/k3semu"
)

// apiServerArgs are the kube-apiserver flags, k3s-like, followed by any
// --kube-apiserver-arg values.
func apiServerArgs(cfg k3semu.ServerConfig, tlsDir string, nodeIP net.IP) []string {
	bind := cfg.BindAddress
	if bind == "" {
		bind = "0.0.0.0"
	}
	args := []string{
		"--etcd-servers=http://" + net.JoinHostPort(etcdLocalHost(nodeIP), strconv.Itoa(cfg.EtcdClientPort)),
		"--storage-backend=etcd3",
		"--bind-address=" + bind,
		"--secure-port=" + strconv.Itoa(cfg.HTTPSListenPort),
		"--advertise-address=" + nodeIP.String(),
		"--tls-cert-file=" + filepath.Join(tlsDir, "serving-kube-apiserver.crt"),
		"--tls-private-key-file=" + filepath.Join(tlsDir, "serving-kube-apiserver.key"),
		"--client-ca-file=" + filepath.Join(tlsDir, "client-ca.crt"),
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--anonymous-auth=false",
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
// as its cobra command would (app.Run), but under ctx instead of its own
// signal handler, and with wrap around its outermost handler chain: k3s's
// supervisor routes share the https port with the apiserver.
//
// The apiserver's identity (its Lease in kube-system) is a hash of the
// host name; it is taken from the node name instead (the host name unless
// --node-name), so that servers sharing one host in tests do not fight
// over one Lease.
func runAPIServer(ctx context.Context, args []string, nodeName string, wrap func(http.Handler) http.Handler) error {
	genericapiserver.SetHostnameFuncForTests(nodeName)
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
	if completed.InformerName == nil {
		name, err := cache.NewInformerName("kube-apiserver")
		if err != nil {
			return fmt.Errorf("standin: kube-apiserver: %w", err)
		}
		completed.InformerName = name
	}
	config, err := app.NewConfig(completed)
	if err != nil {
		return fmt.Errorf("standin: kube-apiserver: %w", err)
	}
	// The aggregator is the outermost server of the chain; its handler
	// chain is the one on the listener.
	gc := config.Aggregator.GenericConfig
	build := gc.BuildHandlerChainFunc
	gc.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		return wrap(build(h, c))
	}
	done, err := config.Complete()
	if err != nil {
		return fmt.Errorf("standin: kube-apiserver: %w", err)
	}
	server, err := app.CreateServerChain(done)
	if err != nil {
		return fmt.Errorf("standin: kube-apiserver: %w", err)
	}
	prepared, err := server.PrepareRun()
	if err != nil {
		return fmt.Errorf("standin: kube-apiserver: %w", err)
	}
	return prepared.Run(ctx)
}
