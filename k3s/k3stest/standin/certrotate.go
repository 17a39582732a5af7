package standin

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// CertRotateOptions are the flags of `k3s certificate rotate`.
type CertRotateOptions struct {
	DataDir  string   // --data-dir, -d, K3S_DATA_DIR; default /var/lib/rancher/k3s
	Services []string // --service, -s (repeatable, comma-separated); default all of the node's
}

// certServices are the services k3s's `certificate rotate --service`
// knows (pkg/cli/cert).
var certServices = []string{"admin", "api-server", "controller-manager", "scheduler", "etcd", "k3s-controller",
	"auth-proxy", "cloud-controller", "kubelet", "kube-proxy", "k3s-server"}

// ParseCertRotateArgs parses `k3s certificate rotate` arguments.
func ParseCertRotateArgs(args []string, lookupEnv func(string) (string, bool)) (CertRotateOptions, error) {
	var o CertRotateOptions
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

// RotateCertificates does what `k3s certificate rotate` does, to be run
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
func RotateCertificates(o CertRotateOptions, now time.Time, log *slog.Logger) error {
	for _, s := range o.Services {
		if !slices.Contains(certServices, s) {
			return errors.New("Service " + s + " is not recognized")
		}
	}
	serverDir, agentDir := filepath.Join(o.DataDir, "server"), filepath.Join(o.DataDir, "agent")
	backup, err := backupCertificates(serverDir, agentDir, now)
	if err != nil {
		return err
	}
	services := o.Services
	if len(services) == 0 {
		if _, err := os.Stat(serverDir); err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				return err
			}
			log.Info("Agent detected, rotating agent certificates")
			services = []string{"kubelet", "kube-proxy", "k3s-controller"}
		} else {
			log.Info("Server detected, rotating server certificates")
			services = []string{"admin", "etcd", "api-server", "controller-manager", "cloud-controller", "scheduler",
				"k3s-server", "k3s-controller", "auth-proxy", "kubelet", "kube-proxy"}
		}
	}
	tlsDir := filepath.Join(serverDir, "tls")
	var files []string
	for _, s := range services {
		log.Info(fmt.Sprintf("Rotating certificates for %s service", s))
		switch s {
		case "admin":
			files = append(files, filepath.Join(tlsDir, "client-admin.crt"), filepath.Join(tlsDir, "client-admin.key"))
		case "api-server":
			files = append(files, filepath.Join(tlsDir, "serving-kube-apiserver.crt"), filepath.Join(tlsDir, "serving-kube-apiserver.key"))
		case "k3s-server":
			log.Info("Rotating dynamic listener certificate")
			files = append(files, filepath.Join(tlsDir, "serving-kube-apiserver.crt"), filepath.Join(tlsDir, "serving-kube-apiserver.key"))
		case "kubelet":
			files = append(files, filepath.Join(agentDir, "client-kubelet.crt"), filepath.Join(agentDir, "client-kubelet.key"))
		}
	}
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("standin: %w", err)
		}
	}
	log.Info(fmt.Sprintf("Successfully backed up certificates for all services to path %s, please restart k3s server or agent to rotate certificates", backup))
	return nil
}

// backupCertificates copies server/tls to server/tls-<unix time>, and the
// agent's leaf certificates into it, as k3s does; server/tls must exist.
func backupCertificates(serverDir, agentDir string, now time.Time) (string, error) {
	tlsDir := filepath.Join(serverDir, "tls")
	if _, err := os.Stat(tlsDir); err != nil {
		return "", err
	}
	backup := filepath.Join(serverDir, "tls-"+strconv.FormatInt(now.Unix(), 10))
	err := filepath.WalkDir(tlsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(tlsDir, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(backup, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		return copyFile(p, dst)
	})
	if err != nil {
		return "", fmt.Errorf("standin: backup: %w", err)
	}
	for _, name := range []string{"client-kubelet.crt", "client-kubelet.key", "serving-kubelet.crt", "serving-kubelet.key"} {
		err := copyFile(filepath.Join(agentDir, name), filepath.Join(backup, name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("standin: backup: %w", err)
		}
	}
	return backup, nil
}

// copyFile copies src to dst; keys stay 0600, the rest is 0644.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if strings.HasSuffix(src, ".key") {
		mode = 0o600
	}
	return os.WriteFile(dst, b, mode)
}
