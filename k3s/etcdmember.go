package k3s

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// etcdMember is one member as a k3s server's /db/info lists it.
type etcdMember struct {
	Name     string   `json:"name"`
	PeerURLs []string `json:"peerURLs"`
}

// hasEtcdMember reports whether the cluster's etcd still has a member of
// node: one named <node>-<suffix>, or one not started yet (no name) at
// the node's address, which k3s takes for itself when the node starts
// again (internal/k3semu/CONTRACT.md §4). It asks the supervisor of the server at
// s.Server, as the server user, trusting only the cluster's CA.
func hasEtcdMember(ctx context.Context, s *NodeSpec, node string) (bool, error) {
	members, err := etcdMembers(ctx, s)
	if err != nil {
		return false, err
	}
	for _, m := range members {
		if m.Name == "" {
			for _, p := range m.PeerURLs {
				if u, err := url.Parse(p); err == nil && u.Hostname() == s.Address {
					return true, nil
				}
			}
			continue
		}
		if i := strings.LastIndexByte(m.Name, '-'); i > 0 && m.Name[:i] == node {
			return true, nil
		}
	}
	return false, nil
}

// etcdMembers reads /db/info from the server at s.Server.
func etcdMembers(ctx context.Context, s *NodeSpec) ([]etcdMember, error) {
	rc, err := clientcmd.RESTConfigFromKubeConfig([]byte(s.Kubeconfig))
	if err != nil {
		return nil, fmt.Errorf("the cluster's kubeconfig: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(rc.TLSClientConfig.CAData) {
		return nil, fmt.Errorf("the cluster's kubeconfig has no CA certificate")
	}
	u := strings.TrimRight(s.Server, "/") + "/db/info"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth("server", password(s.Token))
	host, _, err := net.SplitHostPort(req.URL.Host)
	if err != nil {
		host = req.URL.Host
	}
	client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12},
	}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	var info struct {
		Members []etcdMember `json:"members"`
	}
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	return info.Members, nil
}
