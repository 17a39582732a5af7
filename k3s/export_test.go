package k3s

import "github.com/openctl/openctl/remote"

// SSHPool is p's SSH pool, for tests that count the connections it
// opened.
func SSHPool(p *Provider) *remote.Pool { return p.pool }
