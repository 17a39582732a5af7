package sandbox

import (
	"context"
	"sync"

	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/registry"
)

// Shared gives the Proxmox and K3s drivers of one program the same world
// under --sandbox: the first sandbox a command opens starts it, the last
// one closed closes it.
//
//	box := sandbox.NewShared(sandbox.Options{})
//	drivers := []registry.Driver{
//		proxmox.Driver{SandboxGuests: box.ProxmoxGuests},
//		k3s.Driver{SandboxHosts: box.K3sHosts},
//	}
type Shared struct {
	opts Options

	mu    sync.Mutex
	world *World
	refs  int
}

// NewShared returns a Shared making worlds with opts (Options.Logger
// unset: the sandbox's logger).
func NewShared(opts Options) *Shared { return &Shared{opts: opts} }

// acquire returns the world, starting it if none runs.
func (s *Shared) acquire(opts registry.SandboxOptions) (*World, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.world == nil {
		o := s.opts
		if o.Logger == nil {
			o.Logger = opts.Logger
		}
		w, err := New(o)
		if err != nil {
			return nil, err
		}
		s.world = w
	}
	s.refs++
	return s.world, nil
}

// release closes the world when its last user is done.
func (s *Shared) release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs--; s.refs > 0 || s.world == nil {
		return nil
	}
	w := s.world
	s.world = nil
	return w.Close()
}

// ProxmoxGuests is proxmox.Driver's SandboxGuests: the world's hosts as
// the simulated VMs' guests.
func (s *Shared) ProxmoxGuests(_ context.Context, opts registry.SandboxOptions) (proxmoxtest.Guests, func() error, error) {
	w, err := s.acquire(opts)
	if err != nil {
		return nil, nil, err
	}
	return w, s.release, nil
}

// K3sHosts is k3s.Driver's SandboxHosts: how the K3s provider reaches
// the world's hosts.
func (s *Shared) K3sHosts(_ context.Context, opts registry.SandboxOptions) (*k3s.SandboxHosts, error) {
	w, err := s.acquire(opts)
	if err != nil {
		return nil, err
	}
	h := w.K3sHosts()
	h.Close = s.release
	return h, nil
}

// World returns the running world; nil when none runs.
func (s *Shared) World() *World {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.world
}
