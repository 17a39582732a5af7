package k3semu

import (
	"context"
	"crypto/x509"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"path"
	"strconv"
	"strings"
	"time"
)

// ServerPrep is what a `k3s server` start has on disk before its
// datastore runs, made by [PrepareServer].
type ServerPrep struct {
	Dir      string // <data-dir>/server
	TLSDir   string // <data-dir>/server/tls
	LocalURL string // https://<loopback or bind address>:<https port>
	// Joining is true when the server joins the cluster at --server (no
	// datastore of its own yet); Supervisor then talks to that server.
	Joining    bool
	Supervisor *SupervisorClient
	// The server and client CAs and this server's certificates.
	ServerCA, ClientCA, Serving, Admin *KeyPair
}

// PrepareServer does what `k3s server` does before starting its
// datastore, on f: it refuses a bootstrap token as --token, makes the
// server directories, and when joining (cfg.Server set and hasData false:
// an existing datastore wins over --cluster-init and --server) validates
// the server and the token, compares the critical configuration and
// writes the cluster's bootstrap files. Then it loads or makes the CAs and
// the service-account key, keeps or issues the leaf certificates (kept
// across restarts unless expiring or missing a name; `k3s certificate
// rotate` deletes them), and writes the passwd, token files and the admin
// kubeconfigs.
func PrepareServer(ctx context.Context, f FS, cfg ServerConfig, nodeIP net.IP, hasData bool, log *slog.Logger) (*ServerPrep, error) {
	if err := CheckServerToken(cfg.Token); err != nil {
		return nil, fmt.Errorf("starting kubernetes: preparing server: %w", err)
	}
	p := &ServerPrep{Dir: path.Join(cfg.DataDir, "server")}
	p.TLSDir = path.Join(p.Dir, "tls")
	if err := f.MkdirAll(0o700, p.TLSDir, path.Join(p.Dir, "cred"), path.Join(p.Dir, "db"), path.Join(p.Dir, "manifests")); err != nil {
		return nil, err
	}
	loopbackHost := "127.0.0.1"
	if ip := net.ParseIP(cfg.BindAddress); ip != nil && !ip.IsUnspecified() {
		loopbackHost = cfg.BindAddress
	}
	p.LocalURL = "https://" + net.JoinHostPort(loopbackHost, strconv.Itoa(cfg.HTTPSListenPort))
	if hasData {
		if cfg.ClusterInit || cfg.Server != "" {
			log.Info("Managed etcd cluster bootstrap already complete and initialized")
		}
	} else if cfg.Server != "" {
		p.Joining = true
		if err := p.join(ctx, f, cfg, log); err != nil {
			return nil, err
		}
	}
	if err := p.certificates(f, cfg, nodeIP); err != nil {
		return nil, err
	}
	passwdPath := path.Join(p.Dir, "cred", "passwd")
	password, err := ServerPassword(f, cfg.Token, passwdPath)
	if err != nil {
		return nil, err
	}
	agentPW, err := AgentPassword(f, cfg.AgentToken, passwdPath, password)
	if err != nil {
		return nil, err
	}
	if err := WriteTokens(f, p.Dir, p.ServerCA.CertPEM, password, agentPW); err != nil {
		return nil, err
	}
	if err := WriteKubeconfig(f, path.Join(p.Dir, "cred", "admin.kubeconfig"), p.LocalURL, p.ServerCA.CertPEM, p.Admin, "0600"); err != nil {
		return nil, err
	}
	if err := WriteKubeconfig(f, cfg.KubeconfigPath, p.LocalURL, p.ServerCA.CertPEM, p.Admin, cfg.KubeconfigMode); err != nil {
		return nil, err
	}
	log.Info("Wrote kubeconfig " + cfg.KubeconfigPath)
	return p, nil
}

// join validates the server at cfg.Server, compares the critical
// configuration and writes the cluster's bootstrap files.
func (p *ServerPrep) join(ctx context.Context, f FS, cfg ServerConfig, log *slog.Logger) error {
	sc, err := ValidateServer(ctx, cfg.Server, cfg.Token, "server", func(m string) { log.Warn(m) })
	if err != nil {
		return fmt.Errorf("starting kubernetes: preparing server: failed to validate token: %w", err)
	}
	p.Supervisor = sc
	files, err := sc.ServerBootstrap(ctx)
	if err != nil {
		return fmt.Errorf("starting kubernetes: preparing server: %w", err)
	}
	critical, err := sc.CriticalConfig(ctx)
	if err != nil {
		return fmt.Errorf("starting kubernetes: preparing server: %w", err)
	}
	if err := CheckCritical(cfg.Critical, critical, cfg.AgentToken, files["cred/passwd"], func(m string) { log.Warn(m) }); err != nil {
		return fmt.Errorf("starting kubernetes: preparing server: %w", err)
	}
	for name, data := range files {
		mode := fs.FileMode(0o600)
		if strings.HasSuffix(name, ".crt") {
			mode = 0o644
		}
		if err := f.WriteFile(path.Join(p.Dir, name), data, mode); err != nil {
			return err
		}
	}
	log.Info("Cluster bootstrap data written from " + cfg.Server)
	return nil
}

// certificates loads or makes the CAs, the service-account key and the
// leaf certificates.
func (p *ServerPrep) certificates(f FS, cfg ServerConfig, nodeIP net.IP) error {
	var err error
	if p.ServerCA, err = LoadOrCreateCA(f, p.TLSDir, "server-ca", "k3s-server-ca"); err != nil {
		return err
	}
	if p.ClientCA, err = LoadOrCreateCA(f, p.TLSDir, "client-ca", "k3s-client-ca"); err != nil {
		return err
	}
	if err := LoadOrCreateKey(f, path.Join(p.TLSDir, "service.key")); err != nil {
		return err
	}
	dns, ips := servingSANs(cfg, nodeIP)
	p.Serving, err = p.ServerCA.LoadOrIssue(f, path.Join(p.TLSDir, "serving-kube-apiserver.crt"), path.Join(p.TLSDir, "serving-kube-apiserver.key"),
		"kube-apiserver", nil, dns, ips, x509.ExtKeyUsageServerAuth, time.Now())
	if err != nil {
		return err
	}
	p.Admin, err = p.ClientCA.LoadOrIssue(f, path.Join(p.TLSDir, "client-admin.crt"), path.Join(p.TLSDir, "client-admin.key"),
		"system:admin", []string{"system:masters"}, nil, nil, x509.ExtKeyUsageClientAuth, time.Now())
	return err
}

// servingSANs: localhost, the kubernetes service names and first IP, the
// node's name and address, and every --tls-san.
func servingSANs(cfg ServerConfig, nodeIP net.IP) ([]string, []net.IP) {
	dns := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", cfg.NodeName}
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, nodeIP}
	if _, svc, err := net.ParseCIDR(cfg.ServiceCIDR); err == nil {
		first := make(net.IP, len(svc.IP))
		copy(first, svc.IP)
		first[len(first)-1]++
		ips = append(ips, first)
	}
	for _, san := range cfg.TLSSANs {
		if ip := net.ParseIP(san); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, san)
		}
	}
	return dns, ips
}

// NodeIPFlag is the node IP that --node-ip or else --bind-address names;
// nil when neither names a specified address (then the twin picks the
// host's first address).
func NodeIPFlag(nodeIP, bindAddress string) (net.IP, error) {
	for _, s := range []string{nodeIP, bindAddress} {
		if s == "" {
			continue
		}
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, fmt.Errorf("standin: %q is not an IP address", s)
		}
		if !ip.IsUnspecified() {
			return ip, nil
		}
	}
	return nil, nil
}
