package k3semu

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// Balancer stands in for k3s's agent-side load balancer: the agent's
// connections go to one of the cluster's servers (from /v1-k3s/apiservers,
// plus the --server address), moving to the next one when a dial fails.
// Every server's certificate holds the SAN "kubernetes", which is the
// name the agent verifies, whichever server answers.
type Balancer struct {
	mu      sync.Mutex // guards servers and cur
	servers []string   // host:port; servers[0] is the --server address
	cur     int
	log     *slog.Logger
}

// BalancerServerName is the TLS name the agent checks on every server.
const BalancerServerName = "kubernetes"

// NewBalancer balances over server (the agent's --server) until
// [Balancer.Update] gives the cluster's servers.
func NewBalancer(server string, log *slog.Logger) (*Balancer, error) {
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("--server %q: %w", server, err)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "443")
	}
	return &Balancer{servers: []string{host}, log: log}, nil
}

// Update sets the servers (the --server address always stays first).
func (b *Balancer) Update(servers []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.servers[b.cur]
	list := []string{b.servers[0]}
	for _, s := range servers {
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	if slices.Equal(list, b.servers) {
		return
	}
	b.servers = list
	b.cur = max(slices.Index(list, cur), 0)
	b.log.Info(fmt.Sprintf("Updated load balancer k3s-agent-load-balancer server addresses -> %v", list))
}

// Dial connects to the current server, else to the others in turn.
func (b *Balancer) Dial(ctx context.Context, network, _ string) (net.Conn, error) {
	b.mu.Lock()
	servers, cur := b.servers, b.cur
	b.mu.Unlock()
	d := net.Dialer{Timeout: 5 * time.Second}
	var errs []error
	for i := range servers {
		n := (cur + i) % len(servers)
		c, err := d.DialContext(ctx, network, servers[n])
		if err == nil {
			if n != cur {
				b.mu.Lock()
				b.cur = n
				b.mu.Unlock()
				b.log.Info("Load balancer k3s-agent-load-balancer now uses server " + servers[n])
			}
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// HTTPClient is an HTTP client through the balancer, trusting caPEM.
func (b *Balancer) HTTPClient(caPEM []byte) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext:     b.Dial,
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: BalancerServerName},
	}}
}
