package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
)

// ServerOptions configure [StartServer].
type ServerOptions struct {
	// Listen is the simulator's address ("127.0.0.1:0" picks a port).
	Listen string
	// Simulator are the Proxmox VE simulator's options (layout, seed,
	// speed, latencies, faults); the world's guests and Logger are added.
	Simulator []proxmoxtest.Option
	// Logger receives the world's and the simulator's logs; nil: none.
	Logger *slog.Logger
}

// Server is a sandbox served to other processes, as `openctl sandbox`
// runs it: a Proxmox VE simulator over HTTPS whose VMs' guests are a
// World's hosts, which the K3s provider of another openctl reaches.
type Server struct {
	world *World
	srv   *proxmoxtest.Server
}

// ServerInfo says how to reach a Server: the simulator's URL, API token
// and certificate fingerprint, and the K3s provider's settings for its
// hosts. `openctl sandbox` prints it as one JSON line.
type ServerInfo struct {
	URL         string `json:"url"`
	TokenID     string `json:"tokenId"`
	TokenSecret string `json:"tokenSecret"`
	Fingerprint string `json:"fingerprint"`
	// K3s is how the K3s provider reaches the VMs' hosts.
	K3s ServerK3s `json:"k3s"`
}

// ServerK3s is the providers.k3s settings for a Server's hosts.
type ServerK3s struct {
	ReleaseURL     string `json:"releaseURL"`
	AgentBinaryDir string `json:"agentBinaryDir"`
	SSHPort        int    `json:"sshPort"`
	IdentityFile   string `json:"identityFile"`
	AddressMap     string `json:"addressMap"`
}

// StartServer starts a world and the simulator on it, serving until
// Close. A bad option is an errcode.Invalid error.
func StartServer(opts ServerOptions) (*Server, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	world, err := New(Options{Logger: log})
	if err != nil {
		return nil, err
	}
	srv, err := proxmoxtest.New(append(opts.Simulator, proxmoxtest.WithLogger(log), proxmoxtest.WithGuests(world))...)
	if err == nil {
		err = srv.Start(opts.Listen)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("sandbox: %w", errcode.Wrap(errcode.Invalid, "", err)), world.Close())
	}
	return &Server{world: world, srv: srv}, nil
}

// Info says how to reach the server.
func (s *Server) Info() ServerInfo {
	id, secret := s.srv.Token()
	hosts := s.world.K3sHosts()
	return ServerInfo{URL: s.srv.URL(), TokenID: id, TokenSecret: secret, Fingerprint: s.srv.Fingerprint(), K3s: ServerK3s{
		ReleaseURL: hosts.ReleaseURL, AgentBinaryDir: hosts.AgentBinaryDir, SSHPort: hosts.SSHPort,
		IdentityFile: s.world.IdentityFile(), AddressMap: s.world.Network().String(),
	}}
}

// Simulator is the Proxmox VE simulator the server serves: a test reads
// what is really there from it (its VMs, their state).
func (s *Server) Simulator() *proxmoxtest.Server { return s.srv }

// World is the world the server's VMs run on.
func (s *Server) World() *World { return s.world }

// WriteConfig writes an openctl configuration file (mode 0600) that
// points the Proxmox VE provider at the simulator and the K3s provider at
// the hosts, keeping the K3s provider's files (binaries, kubeconfigs, the
// kubeconfig merged into) in the world's directory, never in the user's
// home. It is valid while the server runs.
func (s *Server) WriteConfig(path string) error {
	type agentSec struct {
		BinaryDir string `yaml:"binaryDir"`
	}
	type sshSec struct {
		Port         int    `yaml:"port"`
		IdentityFile string `yaml:"identityFile"`
	}
	info, dir := s.Info(), s.world.K3sHosts().Dir
	doc := map[string]any{"providers": map[string]any{
		"proxmox": map[string]any{
			"default-context": "sandbox",
			"contexts":        map[string]any{"sandbox": map[string]any{"endpoint": info.URL, "credentials": "sandbox", "fingerprint": info.Fingerprint}},
			"credentials":     map[string]any{"sandbox": map[string]any{"tokenId": info.TokenID, "tokenSecret": info.TokenSecret}},
		},
		"k3s": map[string]any{
			"binaryDir":     filepath.Join(dir, "k3s"),
			"releaseURL":    info.K3s.ReleaseURL,
			"kubeconfigDir": filepath.Join(dir, "kubeconfigs"),
			"kubeconfig":    filepath.Join(dir, "kubeconfig"),
			"agent":         agentSec{BinaryDir: info.K3s.AgentBinaryDir},
			"ssh":           sshSec{Port: info.K3s.SSHPort, IdentityFile: info.K3s.IdentityFile},
			"addressMap":    info.K3s.AddressMap,
		},
	}}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	b = append([]byte("# Written by openctl sandbox: valid while it runs.\n"), b...)
	return os.WriteFile(path, b, 0o600)
}

// Close stops the simulator and the world.
func (s *Server) Close() error {
	s.srv.Close()
	return s.world.Close()
}
