package k3semu

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
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
// The twins have fewer files than k3s: admin is client-admin.*;
// api-server and k3s-server (k3s's dynamic listener, which here is the
// same certificate on the same port) are serving-kube-apiserver.*;
// kubelet is the agent's client-kubelet.* (fetched anew on every agent
// start anyway); the other services have no files and are only logged.
func RotateCertificates(f FS, o CertRotateOptions, now time.Time, log *slog.Logger) error {
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
		if !f.Exists(serverDir) {
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
		if err := f.Remove(files...); err != nil {
			return fmt.Errorf("standin: %w", err)
		}
	}
	log.Info(fmt.Sprintf("Successfully backed up certificates for all services to path %s, please restart k3s server or agent to rotate certificates", backup))
	return nil
}

// backupCertificates copies server/tls to server/tls-<unix time>, and the
// agent's leaf certificates into it, as k3s does; server/tls must exist.
func backupCertificates(f FS, serverDir, agentDir string, now time.Time) (string, error) {
	tlsDir := path.Join(serverDir, "tls")
	if !f.Exists(tlsDir) {
		return "", fmt.Errorf("stat %s: no such file or directory", tlsDir)
	}
	backup := path.Join(serverDir, "tls-"+strconv.FormatInt(now.Unix(), 10))
	if err := copyTree(f, tlsDir, backup); err != nil {
		return "", fmt.Errorf("standin: backup: %w", err)
	}
	for _, name := range []string{"client-kubelet.crt", "client-kubelet.key", "serving-kubelet.crt", "serving-kubelet.key"} {
		if src := path.Join(agentDir, name); f.Exists(src) {
			if err := copyFile(f, src, path.Join(backup, name)); err != nil {
				return "", fmt.Errorf("standin: backup: %w", err)
			}
		}
	}
	return backup, nil
}

// copyTree copies the directory src and what it holds to dst.
func copyTree(f FS, src, dst string) error {
	ents, err := f.ReadDir(src)
	if err != nil {
		return err
	}
	if err := f.MkdirAll(0o700, dst); err != nil {
		return err
	}
	for _, e := range ents {
		from, to := path.Join(src, e.Name()), path.Join(dst, e.Name())
		if e.IsDir() {
			err = copyTree(f, from, to)
		} else {
			err = copyFile(f, from, to)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies src to dst; keys stay 0600, the rest is 0644.
func copyFile(f FS, src, dst string) error {
	b, err := f.ReadFile(src)
	if err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if strings.HasSuffix(src, ".key") {
		mode = 0o600
	}
	return f.WriteFile(dst, b, mode)
}

// CertificateCmd is `k3s certificate rotate` on f: it logs to stderr
// and returns the exit status.
func CertificateCmd(f FS, args []string, lookupEnv func(string) (string, bool), stderr io.Writer) int {
	log := NewLogger(stderr)
	if len(args) < 1 || args[0] != "rotate" {
		Fatal(log, "k3s certificate: only 'rotate' is implemented by the stand-in")
		return 1
	}
	o, err := ParseCertRotateArgs(args[1:], lookupEnv)
	if err == nil {
		err = RotateCertificates(f, o, time.Now(), log)
	}
	if err != nil {
		Fatal(log, err.Error())
		return 1
	}
	return 0
}
