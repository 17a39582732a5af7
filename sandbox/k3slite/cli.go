package k3slite

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/openctl/openctl/internal/k3semu"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// main runs the k3s program of one call: args[0] the interpreter (when
// run through a binary's #! line, args[1] is the binary) or the name it
// was run as.
func (n *Network) main(ctx context.Context, c *vmhost.Call) int {
	f := callFS(c)
	args := c.Args
	binFile := ""
	if path.Clean(args[0]) == ProgramPath && len(args) > 1 {
		if b, err := c.ReadFile(args[1]); err == nil && strings.HasPrefix(string(b), "#!") {
			binFile, args = args[1], args[1:]
		}
	}
	if binFile == "" {
		binFile = lookPath(c, args[0])
	}
	v := k3semu.Version{K3s: DefaultVersion, Commit: k3semu.CommitFor(DefaultVersion)}
	if binFile != "" {
		if b, err := c.ReadFile(binFile); err == nil {
			pv, err := parseBinary(b)
			if err != nil {
				fmt.Fprintf(c.Stderr, "%v\n", err)
				return 1
			}
			v = pv
		}
	}
	lookupEnv := func(name string) (string, bool) {
		for i := len(c.Env) - 1; i >= 0; i-- {
			if val, ok := strings.CutPrefix(c.Env[i], name+"="); ok {
				return val, true
			}
		}
		return "", false
	}

	switch path.Base(args[0]) {
	case "kubectl":
		return n.runKubectl(ctx, c, args[1:], lookupEnv)
	case "crictl", "ctr":
		fmt.Fprintf(c.Stderr, "%s: not available in the k3s stand-in\n", path.Base(args[0]))
		return 1
	}
	if len(args) < 2 {
		fmt.Fprint(c.Stderr, k3semu.Usage)
		return 1
	}
	switch args[1] {
	case "--version", "-v", "version":
		fmt.Fprint(c.Stdout, v.String())
		return 0
	case "--help", "-h", "help":
		fmt.Fprint(c.Stdout, k3semu.Usage)
		return 0
	case "kubectl":
		return n.runKubectl(ctx, c, args[2:], lookupEnv)
	case "server":
		log := k3semu.NewLogger(c.Stderr)
		cfg, err := k3semu.ParseServerArgs(f, args[2:], lookupEnv)
		if err != nil {
			log.Error(err.Error())
			return 1
		}
		cfg.Version = v
		for _, w := range cfg.ConfigWarnings {
			log.Warn(w)
		}
		if err := n.runServer(ctx, c, cfg, log); err != nil && !errors.Is(err, context.Canceled) {
			k3semu.Fatal(log, err.Error())
			return 1
		}
		return 0
	case "agent":
		log := k3semu.NewLogger(c.Stderr)
		cfg, err := k3semu.ParseAgentArgs(f, args[2:], lookupEnv)
		if err != nil {
			k3semu.Fatal(log, err.Error())
			return 1
		}
		cfg.Version = v
		if err := n.runAgent(ctx, c, cfg, log); err != nil && !errors.Is(err, context.Canceled) {
			k3semu.Fatal(log, err.Error())
			return 1
		}
		return 0
	case "token":
		return n.runTokenCmd(ctx, c, args[2:], lookupEnv)
	case "certificate":
		return k3semu.CertificateCmd(f, args[2:], lookupEnv, c.Stderr)
	case "etcd-snapshot", "secrets-encrypt", "check-config", "crictl", "ctr":
		fmt.Fprintf(c.Stderr, "k3s %s: not implemented by the stand-in yet\n", args[1])
		return 1
	}
	fmt.Fprintf(c.Stderr, "k3s: unknown command %q\n%s", args[1], k3semu.Usage)
	return 1
}

// lookPath finds the file a program name was run from, as the shell did.
func lookPath(c *vmhost.Call, name string) string {
	if strings.Contains(name, "/") {
		return c.Path(name)
	}
	for _, dir := range strings.Split(c.Getenv("PATH"), ":") {
		if dir == "" {
			continue
		}
		p := path.Join(dir, name)
		if fi, err := c.Stat(p); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}
