package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
)

// Client call timeouts used when ClientConfig leaves them zero.
const (
	DefaultInfoTimeout    = 10 * time.Second
	DefaultLogsTimeout    = 2 * time.Minute
	DefaultServiceTimeout = 3 * time.Minute
	DefaultUpgradeTimeout = 15 * time.Minute
)

const (
	defaultRetries      = 5
	defaultRetryBackoff = 250 * time.Millisecond
	maxRetryBackoff     = 4 * time.Second
	maxResponseBytes    = 1 << 20
)

// ClientConfig configures a [Client].
type ClientConfig struct {
	// Address is the agent's host:port, for example "192.168.1.50:9443".
	Address string
	// ServerName is the name the agent's certificate must carry (a DNS
	// name or an IP address SAN). Default: the host of Address.
	ServerName string
	// CABundle is the PEM bundle of the CAs whose server certificates are
	// accepted. No other CA, and no system root, is trusted.
	CABundle []byte
	// CertPEM and KeyPEM are the controller's client certificate and key.
	CertPEM []byte
	KeyPEM  []byte
	// Logger receives the version-skew warning and retry notes. Default:
	// discard.
	Logger *slog.Logger
	// ExpectVersion is the agent version the client was built for,
	// usually the controller's own build version; an agent reporting
	// another one is used anyway, with a warning logged once. Empty: the
	// agent's version is not compared.
	ExpectVersion string
	// Retries is how many times Info and Logs are retried while the agent
	// refuses connections (it is starting). Default 5; negative: none.
	Retries int
	// RetryBackoff is the first wait between retries; it doubles up to 4s.
	// Default 250ms.
	RetryBackoff time.Duration
	// Per-call timeouts, applied unless the caller's context ends sooner.
	// Defaults: DefaultInfoTimeout, DefaultLogsTimeout,
	// DefaultServiceTimeout and DefaultUpgradeTimeout.
	InfoTimeout    time.Duration
	LogsTimeout    time.Duration
	ServiceTimeout time.Duration
	UpgradeTimeout time.Duration
	// Now is the clock used to check the agent's certificate. Default
	// time.Now.
	Now func() time.Time
}

// String describes the configuration without the private key.
func (c ClientConfig) String() string {
	return fmt.Sprintf("agent.ClientConfig{Address:%q ServerName:%q KeyPEM:[redacted]}", c.Address, c.ServerName)
}

// GoString describes the configuration without the private key (%#v).
func (c ClientConfig) GoString() string { return c.String() }

// LogValue describes the configuration in log/slog output without the
// private key.
func (c ClientConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Client calls one node's agent over mutual TLS. It keeps connections
// alive between calls. A Client is safe for concurrent use.
type Client struct {
	cfg    ClientConfig
	base   string
	hc     *http.Client
	log    *slog.Logger
	warned atomic.Bool // the version-skew warning was logged
}

// NewClient returns a client for the agent at cfg.Address. It checks the
// credentials but does not connect.
func NewClient(cfg ClientConfig) (*Client, error) {
	host, _, err := net.SplitHostPort(cfg.Address)
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "agent: client address", err)
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	bundle, err := pki.ParseBundle(cfg.CABundle)
	if err != nil {
		return nil, fmt.Errorf("agent: client CA bundle: %w", err)
	}
	leaf, err := pki.ParseLeaf(cfg.CertPEM, cfg.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("agent: client certificate: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Retries == 0 {
		cfg.Retries = defaultRetries
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = defaultRetryBackoff
	}
	setDefault(&cfg.InfoTimeout, DefaultInfoTimeout)
	setDefault(&cfg.LogsTimeout, DefaultLogsTimeout)
	setDefault(&cfg.ServiceTimeout, DefaultServiceTimeout)
	setDefault(&cfg.UpgradeTimeout, DefaultUpgradeTimeout)
	tlsCfg := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		RootCAs:      bundle.Pool(),
		Certificates: []tls.Certificate{leaf.TLSCertificate()},
		ServerName:   cfg.ServerName,
		NextProtos:   []string{"http/1.1"},
		Time:         cfg.Now,
	}
	tr := &http.Transport{
		Proxy:                 nil, // agents are reached directly
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tlsCfg,
		TLSHandshakeTimeout:   10 * time.Second,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &Client{
		cfg:  cfg,
		base: "https://" + cfg.Address,
		hc:   &http.Client{Transport: tr},
		log:  cfg.Logger,
	}, nil
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d <= 0 {
		*d = v
	}
}

// Close closes the client's idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Info returns the node's facts and the state of k3s and of the agent.
// It is retried while the agent refuses connections.
func (c *Client) Info(ctx context.Context) (*Info, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.InfoTimeout)
	defer cancel()
	resp, err := c.do(ctx, http.MethodGet, "/v1/info", nil, true)
	if err != nil {
		return nil, err
	}
	defer drainClose(resp.Body)
	var info Info
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponseBytes)).Decode(&info); err != nil {
		return nil, c.callErr(http.MethodGet, "/v1/info", errcode.Wrap(errcode.Transient, "read response", err))
	}
	c.checkSkew(info.AgentVersion)
	return &info, nil
}

// Logs streams the last lines lines of the k3s service log into w as they
// arrive. lines 0 asks for the agent's default (100); otherwise it must
// be in 1..5000. It is retried while the agent refuses connections, never
// after output has been written to w.
func (c *Client) Logs(ctx context.Context, lines int, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.LogsTimeout)
	defer cancel()
	return c.logs(ctx, lines, false, w)
}

// FollowLogs streams the last lines of the k3s log to w like Logs, then
// every line logged after them as it comes, until ctx ends — then it
// returns nil — or the stream breaks. No per-call timeout applies. It
// needs an agent with the CapFollow capability.
func (c *Client) FollowLogs(ctx context.Context, lines int, w io.Writer) error {
	err := c.logs(ctx, lines, true, w)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (c *Client) logs(ctx context.Context, lines int, follow bool, w io.Writer) error {
	const path = "/v1/logs/k3s"
	if lines < 0 || lines > MaxLogLines {
		return fmt.Errorf("agent: logs: lines %d not in %d..%d: %w", lines, MinLogLines, MaxLogLines, errcode.Invalid)
	}
	q := url.Values{}
	if lines > 0 {
		q.Set("lines", strconv.Itoa(lines))
	}
	if follow {
		q.Set("follow", "true")
	}
	target := path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	resp, err := c.do(ctx, http.MethodGet, target, nil, true)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return c.callErr(http.MethodGet, path, errcode.Wrap(errcode.Transient, "log stream interrupted", err))
	}
	if t := resp.Trailer.Get(TrailerLogsError); t != "" {
		code, msg := errcode.Internal, t
		if k, m, ok := cutCode(t); ok {
			code, msg = k, m
		}
		return c.callErr(http.MethodGet, path, errcode.New(code, "log stream failed: "+msg))
	}
	return nil
}

// cutCode splits "CODE: message" when CODE is a known error code.
func cutCode(s string) (errcode.Code, string, bool) {
	for _, k := range errcode.Codes() {
		if len(s) > len(k)+1 && s[:len(k)] == string(k) && s[len(k)] == ':' {
			return k, s[len(k)+2:], true
		}
	}
	return "", s, false
}

// Start starts the k3s service.
func (c *Client) Start(ctx context.Context) error { return c.Service(ctx, Start) }

// Stop stops the k3s service.
func (c *Client) Stop(ctx context.Context) error { return c.Service(ctx, Stop) }

// Restart restarts the k3s service.
func (c *Client) Restart(ctx context.Context) error { return c.Service(ctx, Restart) }

// Service runs action on the k3s service. It is never retried: the
// agent may have acted even if the answer was lost. errcode.Conflict
// means another service action or an upgrade is running.
func (c *Client) Service(ctx context.Context, action ServiceAction) error {
	if !action.Valid() {
		return fmt.Errorf("agent: unknown service action %q: %w", action, errcode.Invalid)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ServiceTimeout)
	defer cancel()
	resp, err := c.do(ctx, http.MethodPost, "/v1/service/k3s/"+string(action), nil, false)
	if err != nil {
		return err
	}
	drainClose(resp.Body)
	return nil
}

// drainClose reads what is left of a response body (a JSON decoder stops
// before the final newline) so that the connection can be reused, and
// closes it.
func drainClose(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxResponseBytes))
	_ = body.Close()
}

// Upgrade asks the agent to install k3s version (vX.Y.Z+k3sN) and waits
// for the outcome. The version is checked before anything is sent. If the
// new binary failed the health gate and was rolled back, Upgrade returns
// the result and an error wrapping ErrRolledBack. errcode.Conflict means
// another upgrade or service action is running. It is never retried.
func (c *Client) Upgrade(ctx context.Context, version string) (*UpgradeResult, error) {
	const path = "/v1/upgrade/k3s"
	if err := ValidateK3sVersion(version); err != nil {
		return nil, err
	}
	body, err := json.Marshal(UpgradeRequest{Version: version})
	if err != nil {
		return nil, fmt.Errorf("agent: upgrade: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.UpgradeTimeout)
	defer cancel()
	resp, err := c.do(ctx, http.MethodPost, path, body, false)
	if err != nil {
		return nil, err
	}
	defer drainClose(resp.Body)
	var res UpgradeResult
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponseBytes)).Decode(&res); err != nil {
		return nil, c.callErr(http.MethodPost, path, errcode.Wrap(errcode.Transient, "read response", err))
	}
	if res.Status == UpgradeRolledBack {
		return &res, fmt.Errorf("agent %s: upgrade from %s to %s rolled back (%s), service %s: %w",
			c.cfg.Address, res.From, res.To, res.Reason, res.ServiceState, ErrRolledBack)
	}
	return &res, nil
}

// do sends one request, retrying idempotent ones while the agent refuses
// connections (see retryPolicy). A response with a status of 300 or more
// becomes an error carrying the agent's error code.
func (c *Client) do(ctx context.Context, method, path string, body []byte, idempotent bool) (*http.Response, error) {
	p := c.retryPolicy()
	if !idempotent {
		p.MaxAttempts = 1
	}
	p.OnRetry = func(attempt int, wait time.Duration, _ error) {
		c.log.Debug("agent: not accepting connections yet, retrying", "agent", c.cfg.Address, "attempt", attempt, "wait", wait)
	}
	var (
		resp    *http.Response
		sendErr error // the last attempt's transport error, unclassified
	)
	_, err := backoff.Retry(ctx, p, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
		if err != nil {
			return c.callErr(method, path, errcode.Wrap(errcode.Invalid, "build request", err))
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, sendErr = c.hc.Do(req)
		return sendErr
	})
	if sendErr != nil {
		// Out of attempts, not retryable, or ctx ended while waiting: the
		// caller gets the last transport error, classified against ctx as
		// it is now (a caller's cancellation is not coded Transient).
		return nil, c.callErr(method, path, classify(ctx, sendErr))
	}
	if err != nil {
		return nil, err
	}
	c.checkSkew(resp.Header.Get(HeaderAgentVersion))
	if resp.StatusCode >= 300 {
		return nil, c.responseErr(method, path, resp)
	}
	return resp, nil
}

// retryPolicy is how idempotent calls wait for an agent that refuses
// connections: Retries more attempts, RetryBackoff doubling up to
// maxRetryBackoff, no jitter (one controller per agent), and nothing but a
// refused connection retried.
func (c *Client) retryPolicy() backoff.Policy {
	return backoff.Policy{
		Initial:     c.cfg.RetryBackoff,
		Max:         maxRetryBackoff,
		Multiplier:  2,
		MaxAttempts: 1 + max(c.cfg.Retries, 0),
		Retryable:   func(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) },
	}
}

// classify gives a transport error its code: a TLS rejection on either
// side is Unauthorized, the rest (refused, reset, timed out) Transient.
func classify(ctx context.Context, err error) error {
	var cve *tls.CertificateVerificationError
	if errors.As(err, &cve) {
		return errcode.Wrap(errcode.Unauthorized, "agent certificate not accepted", err)
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" {
		return errcode.Wrap(errcode.Unauthorized, "the agent rejected this client (certificate, CA or TLS version)", err)
	}
	if ctx.Err() == context.Canceled {
		return err
	}
	return errcode.Wrap(errcode.Transient, "", err)
}

// responseErr turns an error response into an *errcode.Error with the
// agent's code and message.
func (c *Client) responseErr(method, path string, resp *http.Response) error {
	defer drainClose(resp.Body)
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	var eb ErrorBody
	code := statusCode(resp.StatusCode)
	msg := resp.Status
	if json.Unmarshal(data, &eb) == nil && eb.Message != "" {
		msg = eb.Message
		for _, k := range errcode.Codes() {
			if string(k) == eb.Code {
				code = k
			}
		}
	}
	return c.callErr(method, path, errcode.New(code, msg))
}

// statusCode maps an HTTP status to an error code for a response without
// a JSON error body.
func statusCode(status int) errcode.Code {
	switch {
	case status == http.StatusNotFound:
		return errcode.NotFound
	case status == http.StatusConflict:
		return errcode.Conflict
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return errcode.Unauthorized
	case status == http.StatusTooManyRequests || status == http.StatusBadGateway ||
		status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout:
		return errcode.Transient
	case status >= 400 && status < 500:
		return errcode.Invalid
	}
	return errcode.Internal
}

func (c *Client) callErr(method, path string, err error) error {
	return fmt.Errorf("agent %s: %s %s: %w", c.cfg.Address, method, path, err)
}

// checkSkew logs, once per client, that the agent's version differs from
// the one the client expects. It never refuses the agent.
func (c *Client) checkSkew(agentVersion string) {
	if agentVersion == "" || c.cfg.ExpectVersion == "" || agentVersion == c.cfg.ExpectVersion || c.warned.Swap(true) {
		return
	}
	c.log.Warn("agent: version skew: the agent runs another version than this client expects; continuing",
		"agent", c.cfg.Address, "agentVersion", agentVersion, "clientVersion", c.cfg.ExpectVersion)
}

// ErrRolledBack is returned by [Client.Upgrade], together with the
// result, when the new k3s binary failed the health gate and the agent
// restored the previous one. Check it with errors.Is.
var ErrRolledBack = errors.New("agent: upgrade rolled back")
