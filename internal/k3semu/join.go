package k3semu

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
)

// joinToken is a parsed k3s token: K10<ca hash>::<user>:<password> or
// K10<ca hash>::<id>.<secret> (a bootstrap token), or a short token (the
// bare password or bootstrap token, no CA hash).
type joinToken struct {
	caHash    string // 64 hex characters; empty for a short token
	user      string // empty for a short token or a bootstrap token
	password  string
	bootstrap string // <id>.<secret>, sent as a Bearer token; then user and password are empty
}

// parseJoinToken parses a full or short token.
func parseJoinToken(tok string) (joinToken, error) {
	tok = strings.TrimSpace(tok)
	if !strings.HasPrefix(tok, "K10") {
		if IsBootstrapToken(tok) {
			return joinToken{bootstrap: tok}, nil
		}
		return joinToken{password: tok}, nil
	}
	hash, creds, ok := strings.Cut(tok[3:], "::")
	if !ok || len(hash) != 64 {
		return joinToken{}, errors.New("failed to normalize token; must be in format K10<CA-HASH>::<USERNAME>:<PASSWORD> or <PASSWORD>")
	}
	if IsBootstrapToken(creds) {
		return joinToken{caHash: hash, bootstrap: creds}, nil
	}
	user, pw, ok := strings.Cut(creds, ":")
	if !ok || user == "" || pw == "" {
		return joinToken{}, errors.New("failed to normalize token; must be in format K10<CA-HASH>::<USERNAME>:<PASSWORD> or <PASSWORD>")
	}
	return joinToken{caHash: hash, user: user, password: pw}, nil
}

// SupervisorClient talks to a k3s server's supervisor port once its CA is
// known.
type SupervisorClient struct {
	url   string // https://host:port, no trailing slash
	caPEM []byte
	http  *http.Client
	user  string
	pw    string
	// bearer is a bootstrap token sent instead of user and pw.
	bearer string
}

// ValidateServer does what k3s's ParseAndValidateToken does: fetch
// /cacerts without verification, compare its hash with the token's (a
// short token skips that and only warns), then fetch it again verified
// against that CA. user is the Basic-auth user later requests send; empty
// means the token's own user (a full token), else "node".
func ValidateServer(ctx context.Context, server, token, user string, warn func(string)) (*SupervisorClient, error) {
	tok, err := parseJoinToken(token)
	if err != nil {
		return nil, err
	}
	server = strings.TrimRight(server, "/")
	insecure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // step 1 of k3s's token check: the hash is compared below.
	}}
	caPEM, err := get(ctx, insecure, server+"/cacerts", "", "")
	if err != nil {
		return nil, fmt.Errorf("failed to get CA certs: %w", err)
	}
	if tok.caHash == "" {
		warn("Cluster CA certificate is not trusted by the host CA bundle, but the token does not include a CA hash. Use the full token from the server's node-token file to enable Cluster CA validation.")
	} else {
		sum := sha256.Sum256(caPEM)
		if got := hex.EncodeToString(sum[:]); got != tok.caHash {
			return nil, fmt.Errorf("token CA hash does not match the Cluster CA certificate hash: %s != %s", tok.caHash, got)
		}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("failed to get CA certs: %s/cacerts: no certificate in the answer", server)
	}
	verified := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
	}}
	again, err := get(ctx, verified, server+"/cacerts", "", "")
	if err != nil {
		return nil, fmt.Errorf("failed to get CA certs: %w", err)
	}
	if string(again) != string(caPEM) {
		return nil, fmt.Errorf("failed to get CA certs: %s/cacerts changed between two reads", server)
	}
	if tok.bootstrap != "" {
		return &SupervisorClient{url: server, caPEM: caPEM, http: verified, bearer: tok.bootstrap}, nil
	}
	if user == "" {
		user = tok.user
	}
	if user == "" {
		user = "node"
	}
	return &SupervisorClient{url: server, caPEM: caPEM, http: verified, user: user, pw: tok.password}, nil
}

// Get fetches path with Basic auth (user may be empty); an answer other
// than 200 is an error "<url>: <status>", as k3s reports them.
func (c *SupervisorClient) Get(ctx context.Context, path string, header map[string]string) ([]byte, error) {
	if c.bearer != "" {
		h := map[string]string{"Authorization": "Bearer " + c.bearer}
		for k, v := range header {
			h[k] = v
		}
		return getWithHeader(ctx, c.http, c.url+path, "", "", h)
	}
	return getWithHeader(ctx, c.http, c.url+path, c.user, c.pw, header)
}

func get(ctx context.Context, client *http.Client, url, user, pw string) ([]byte, error) {
	return getWithHeader(ctx, client, url, user, pw, nil)
}

// HTTPStatusError is a non-200 answer; Body is its text.
type HTTPStatusError struct {
	URL    string
	Status string
	Code   int
	Body   string
}

func (e *HTTPStatusError) Error() string { return e.URL + ": " + e.Status }

func getWithHeader(ctx context.Context, client *http.Client, url, user, pw string, header map[string]string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if user != "" {
		req.SetBasicAuth(user, pw)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &HTTPStatusError{URL: url, Status: resp.Status, Code: resp.StatusCode, Body: strings.TrimSpace(string(body))}
	}
	return body, nil
}

// ServerBootstrap fetches the cluster's bootstrap files (CAs and their
// keys, the service-account key, passwd) as server:<password>.
func (c *SupervisorClient) ServerBootstrap(ctx context.Context) (map[string][]byte, error) {
	body, err := c.Get(ctx, "/v1-k3s/server-bootstrap", nil)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	if err := json.Unmarshal(body, &files); err != nil {
		return nil, fmt.Errorf("%s/v1-k3s/server-bootstrap: %w", c.url, err)
	}
	for _, f := range BootstrapFiles {
		if len(files[f]) == 0 {
			return nil, fmt.Errorf("%s/v1-k3s/server-bootstrap: %s missing", c.url, f)
		}
	}
	return files, nil
}

// DBInfo lists the cluster's etcd members and names the sandbox
// datastore they share.
func (c *SupervisorClient) DBInfo(ctx context.Context) ([]DBMember, string, error) {
	body, err := c.Get(ctx, "/db/info", nil)
	if err != nil {
		return nil, "", err
	}
	var info struct {
		Members []DBMember `json:"members"`
		Cluster string     `json:"cluster"`
	}
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, "", fmt.Errorf("%s/db/info: %w", c.url, err)
	}
	return info.Members, info.Cluster, nil
}

// CriticalConfig fetches the cluster's critical configuration values.
func (c *SupervisorClient) CriticalConfig(ctx context.Context) (map[string]string, error) {
	body, err := c.Get(ctx, "/v1-k3s/config", nil)
	if err != nil {
		return nil, err
	}
	var cfg struct {
		Critical map[string]string `json:"critical"`
	}
	if err := json.Unmarshal(body, &cfg); err != nil {
		return nil, fmt.Errorf("%s/v1-k3s/config: %w", c.url, err)
	}
	return cfg.Critical, nil
}

// ErrCriticalMismatch is k3s's refusal of a joiner whose critical values
// differ from the cluster's (each one is logged as a warning first).
var ErrCriticalMismatch = errors.New("failed to bootstrap cluster data: failed to validate server configuration: critical configuration value mismatch between servers")

// CheckCritical compares a joiner's critical values (and its
// --agent-token, when given) with the cluster's, warning about each
// mismatch as k3s does.
func CheckCritical(mine, cluster map[string]string, agentToken string, clusterPasswd []byte, warn func(string)) error {
	var mismatched []string
	for k, v := range mine {
		if cluster[k] != v {
			mismatched = append(mismatched, k)
		}
	}
	if agentToken != "" {
		pw, err := pickPassword(nil, agentToken, "", "node", "")
		if err != nil {
			return err
		}
		if want, _ := PasswdEntryFrom(clusterPasswd, "node"); want != pw {
			mismatched = append(mismatched, "agent-token")
		}
	}
	if len(mismatched) == 0 {
		return nil
	}
	slices.Sort(mismatched)
	for _, k := range mismatched {
		warn("critical configuration mismatched: " + k)
	}
	return ErrCriticalMismatch
}

// URL is the server's supervisor URL, https://host:port.
func (c *SupervisorClient) URL() string { return c.url }

// CAPEM is the cluster's server CA, as the server sent and the token
// vouched for it.
func (c *SupervisorClient) CAPEM() []byte { return c.caPEM }

// APIServers asks the supervisor for the cluster's servers.
func (c *SupervisorClient) APIServers(ctx context.Context) ([]string, error) {
	body, err := c.Get(ctx, "/v1-k3s/apiservers", nil)
	if err != nil {
		return nil, err
	}
	var list []string
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("%s/v1-k3s/apiservers: %w", c.url, err)
	}
	return list, nil
}

// CloseIdleConnections closes the client's idle connections to the
// server.
func (c *SupervisorClient) CloseIdleConnections() { c.http.CloseIdleConnections() }
