package k3slite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/openctl/openctl/sandbox/vmhost"
)

// certRotateOptions are the flags of `k3s certificate rotate`.
type certRotateOptions struct {
	DataDir  string   // --data-dir, -d, K3S_DATA_DIR; default /var/lib/rancher/k3s
	Services []string // --service, -s (repeatable, comma-separated); default all of the node's
}

// certServices are the services k3s's `certificate rotate --service`
// knows (pkg/cli/cert).
var certServices = []string{"admin", "api-server", "controller-manager", "scheduler", "etcd", "k3s-controller",
	"auth-proxy", "cloud-controller", "kubelet", "kube-proxy", "k3s-server"}

// parseCertRotateArgs parses `k3s certificate rotate` arguments.
func parseCertRotateArgs(args []string, lookupEnv func(string) (string, bool)) (certRotateOptions, error) {
	var o certRotateOptions
	fs := pflag.NewFlagSet("certificate rotate", pflag.ContinueOnError)
	fs.SetOutput(discard{})
	fs.StringVarP(&o.DataDir, "data-dir", "d", "/var/lib/rancher/k3s", "")
	fs.StringSliceVarP(&o.Services, "service", "s", nil, "")
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("k3s certificate rotate: %w", err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("k3s certificate rotate: unexpected arguments %q", fs.Args())
	}
	if v, ok := lookupEnv("K3S_DATA_DIR"); ok && v != "" && !fs.Changed("data-dir") {
		o.DataDir = v
	}
	return o, nil
}

// rotateCertificates does what `k3s certificate rotate` does, to be run
// while k3s is stopped: it copies server/tls (and the agent's leaf
// certificates) to server/tls-<unix time>, then deletes the leaf
// certificates of the services asked for (default: all of a server's, or
// of an agent's when there is no server directory), keeping the CAs. The
// next start issues new ones with the names of that start's flags.
//
// The stand-in has fewer files than k3s: admin is client-admin.*;
// api-server and k3s-server (k3s's dynamic listener, which here is the
// same certificate on the same port) are serving-kube-apiserver.*;
// kubelet is the agent's client-kubelet.* (fetched anew on every agent
// start anyway); the other services have no files and are only logged.
func rotateCertificates(f hostFS, o certRotateOptions, now time.Time, log *slog.Logger) error {
	for _, s := range o.Services {
		if !slices.Contains(certServices, s) {
			return errors.New("Service " + s + " is not recognized")
		}
	}
	serverDir, agentDir := path.Join(o.DataDir, "server"), path.Join(o.DataDir, "agent")
	backup, err := backupCertificates(f, serverDir, agentDir, now)
	if err != nil {
		return err
	}
	services := o.Services
	if len(services) == 0 {
		if !f.exists(serverDir) {
			log.Info("Agent detected, rotating agent certificates")
			services = []string{"kubelet", "kube-proxy", "k3s-controller"}
		} else {
			log.Info("Server detected, rotating server certificates")
			services = []string{"admin", "etcd", "api-server", "controller-manager", "cloud-controller", "scheduler",
				"k3s-server", "k3s-controller", "auth-proxy", "kubelet", "kube-proxy"}
		}
	}
	tlsDir := path.Join(serverDir, "tls")
	var files []string
	for _, s := range services {
		log.Info(fmt.Sprintf("Rotating certificates for %s service", s))
		switch s {
		case "admin":
			files = append(files, path.Join(tlsDir, "client-admin.crt"), path.Join(tlsDir, "client-admin.key"))
		case "api-server":
			files = append(files, path.Join(tlsDir, "serving-kube-apiserver.crt"), path.Join(tlsDir, "serving-kube-apiserver.key"))
		case "k3s-server":
			log.Info("Rotating dynamic listener certificate")
			files = append(files, path.Join(tlsDir, "serving-kube-apiserver.crt"), path.Join(tlsDir, "serving-kube-apiserver.key"))
		case "kubelet":
			files = append(files, path.Join(agentDir, "client-kubelet.crt"), path.Join(agentDir, "client-kubelet.key"))
		}
	}
	if len(files) > 0 {
		if err := f.remove(files...); err != nil {
			return fmt.Errorf("standin: %w", err)
		}
	}
	log.Info(fmt.Sprintf("Successfully backed up certificates for all services to path %s, please restart k3s server or agent to rotate certificates", backup))
	return nil
}

// backupCertificates copies server/tls to server/tls-<unix time>, and the
// agent's leaf certificates into it, as k3s does; server/tls must exist.
func backupCertificates(f hostFS, serverDir, agentDir string, now time.Time) (string, error) {
	tlsDir := path.Join(serverDir, "tls")
	if !f.exists(tlsDir) {
		return "", fmt.Errorf("stat %s: no such file or directory", tlsDir)
	}
	backup := path.Join(serverDir, "tls-"+strconv.FormatInt(now.Unix(), 10))
	err := fs.WalkDir(f.h.FS(), rel(tlsDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r := strings.TrimPrefix(strings.TrimPrefix("/"+p, tlsDir), "/")
		dst := path.Join(backup, r)
		if d.IsDir() {
			return f.mkdirAll(0o700, dst)
		}
		return copyFile(f, "/"+p, dst)
	})
	if err != nil {
		return "", fmt.Errorf("standin: backup: %w", err)
	}
	for _, name := range []string{"client-kubelet.crt", "client-kubelet.key", "serving-kubelet.crt", "serving-kubelet.key"} {
		if src := path.Join(agentDir, name); f.exists(src) {
			if err := copyFile(f, src, path.Join(backup, name)); err != nil {
				return "", fmt.Errorf("standin: backup: %w", err)
			}
		}
	}
	return backup, nil
}

// copyFile copies src to dst; keys stay 0600, the rest is 0644.
func copyFile(f hostFS, src, dst string) error {
	b, err := f.readFile(src)
	if err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if strings.HasSuffix(src, ".key") {
		mode = 0o600
	}
	return f.writeFile(dst, b, mode)
}

// runCertificateCmd is `k3s certificate rotate`.
func (n *Network) runCertificateCmd(ctx context.Context, c *vmhost.Call, args []string, lookupEnv func(string) (string, bool)) int {
	log := newLogger(c.Stderr)
	if len(args) < 1 || args[0] != "rotate" {
		fatal(log, "k3s certificate: only 'rotate' is implemented by the stand-in")
		return 1
	}
	o, err := parseCertRotateArgs(args[1:], lookupEnv)
	if err == nil {
		err = rotateCertificates(callFS(c), o, time.Now(), log)
	}
	if err != nil {
		fatal(log, err.Error())
		return 1
	}
	return 0
}
