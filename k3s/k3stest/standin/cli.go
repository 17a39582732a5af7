package standin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/openctl/openctl/internal/k3semu"
)

// Main runs the stand-in with args (args[0] is the name it was run as) and
// returns the exit code. Run as kubectl (a link named kubectl) it is kubectl;
// otherwise the first argument picks the k3s command. ctx ends the server.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "standin: %v\n", err)
		return 1
	}
	v, err := ReadVersion(exe)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	setKubeVersion(v)

	name := filepath.Base(args[0])
	switch name {
	case "kubectl":
		return runKubectl(args[1:])
	case "crictl", "ctr":
		fmt.Fprintf(stderr, "%s: not available in the k3s stand-in\n", name)
		return 1
	}
	if len(args) < 2 {
		fmt.Fprint(stderr, k3semu.Usage)
		return 1
	}
	switch args[1] {
	case "--version", "-v", "version":
		fmt.Fprint(stdout, v.String())
		return 0
	case "--help", "-h", "help":
		fmt.Fprint(stdout, k3semu.Usage)
		return 0
	case "kubectl":
		return runKubectl(args[2:])
	case "server":
		log := k3semu.NewLogger(stderr)
		cfg, err := k3semu.ParseServerArgs(osFS, args[2:], os.LookupEnv)
		if err != nil {
			log.Error(err.Error())
			return 1
		}
		cfg.Version = v
		for _, w := range cfg.ConfigWarnings {
			log.Warn(w)
		}
		if err := RunServer(ctx, cfg, log); err != nil && !errors.Is(err, context.Canceled) {
			k3semu.Fatal(log, err.Error())
			return 1
		}
		return 0
	case "agent":
		log := k3semu.NewLogger(stderr)
		cfg, err := k3semu.ParseAgentArgs(osFS, args[2:], os.LookupEnv)
		if err != nil {
			k3semu.Fatal(log, err.Error())
			return 1
		}
		cfg.Version = v
		if err := RunAgent(ctx, cfg, log); err != nil && !errors.Is(err, context.Canceled) {
			k3semu.Fatal(log, err.Error())
			return 1
		}
		return 0
	case "token":
		return k3semu.TokenCmd(ctx, k3semu.TokenEnv{FS: osFS, AdminClient: adminClient}, args[2:], os.LookupEnv, stdout, stderr)
	case "certificate":
		return k3semu.CertificateCmd(osFS, args[2:], os.LookupEnv, stderr)
	case "etcd-snapshot", "secrets-encrypt", "check-config", "crictl", "ctr":
		fmt.Fprintf(stderr, "k3s %s: not implemented by the stand-in yet\n", args[1])
		return 1
	}
	fmt.Fprintf(stderr, "k3s: unknown command %q\n%s", args[1], k3semu.Usage)
	return 1
}
