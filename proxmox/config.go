package proxmox

import (
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
)

// Config configures a Provider. It is a plain value; the Provider copies
// what it needs and never modifies it.
type Config struct {
	// Contexts are the Proxmox endpoints by name; at least one. A
	// resource picks one with spec.context.
	Contexts map[string]Context `json:"contexts" yaml:"contexts"`
	// DefaultContext is used when a resource has no spec.context. It may
	// be empty when there is exactly one context.
	DefaultContext string `json:"defaultContext,omitempty" yaml:"defaultContext,omitempty"`
	// Limits bound the provider's concurrency on each Proxmox cluster.
	Limits Limits `json:"limits,omitempty" yaml:"limits,omitempty"`
	// Timeouts bound each kind of Proxmox task.
	Timeouts Timeouts `json:"timeouts,omitempty" yaml:"timeouts,omitempty"`
	// Logger receives the provider's diagnostics; nil discards them.
	Logger *slog.Logger `json:"-" yaml:"-"`
}

// Context is one Proxmox VE endpoint and its credentials. Its zero value
// is not valid: Endpoint, TokenID and one of TokenSecret / TokenSecretFile
// are required.
type Context struct {
	// Endpoint is the API URL, e.g. https://pve.example.com:8006. The
	// "/api2/json" suffix is optional. Without a port the scheme's default
	// (443) is used, as with any URL: Proxmox itself listens on 8006.
	// http:// is refused unless InsecureSkipVerify is set.
	Endpoint string `json:"endpoint" yaml:"endpoint"`
	// TokenID is the API token's id, user@realm!name (root@pam!openctl).
	TokenID string `json:"tokenId" yaml:"tokenId"`
	// TokenSecret is the API token's secret (a UUID). Exactly one of
	// TokenSecret and TokenSecretFile is set.
	TokenSecret secret.Secret `json:"tokenSecret,omitempty" yaml:"tokenSecret,omitempty"`
	// TokenSecretFile is a file holding the token secret, read when the
	// provider connects. A leading ~/ is the home directory; trailing
	// white space (the newline an editor adds) is ignored.
	TokenSecretFile string `json:"tokenSecretFile,omitempty" yaml:"tokenSecretFile,omitempty"`
	// Fingerprint pins the server's certificate: the SHA-256 of its leaf
	// certificate, as Proxmox shows it (AB:CD:...) or in any form
	// ParseFingerprint accepts. It is the secure way to trust Proxmox's
	// self-signed certificate. At most one of Fingerprint, CAFile and
	// InsecureSkipVerify.
	Fingerprint string `json:"fingerprint,omitempty" yaml:"fingerprint,omitempty"`
	// CAFile is a PEM file of CA certificates to verify the server with
	// instead of the system roots, e.g. a copy of the cluster's
	// /etc/pve/pve-root-ca.pem. A leading ~/ is the home directory.
	CAFile string `json:"caFile,omitempty" yaml:"caFile,omitempty"`
	// InsecureSkipVerify turns TLS verification off. Anyone on the path can
	// then read the token; it is logged as a warning. Prefer Fingerprint.
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty" yaml:"insecureSkipVerify,omitempty"`
	// Node is the default node for VMs that name neither spec.node nor
	// spec.nodes.
	Node string `json:"node,omitempty" yaml:"node,omitempty"`
	// Defaults fill in VM fields the manifest leaves out.
	Defaults Defaults `json:"defaults,omitempty" yaml:"defaults,omitempty"`
}

// Defaults are per-context values for VM fields a manifest leaves out.
type Defaults struct {
	// Storage is the storage for cloned and new disks (e.g. local-lvm).
	Storage string `json:"storage,omitempty" yaml:"storage,omitempty"`
	// Bridge is the bridge for network interfaces (e.g. vmbr0).
	Bridge string `json:"bridge,omitempty" yaml:"bridge,omitempty"`
}

// Limits bound how much work the provider puts on Proxmox at once. Zero
// fields take the defaults.
type Limits struct {
	// PerNode is how many clones and other heavy tasks run at once on one
	// Proxmox node; default 4.
	PerNode int `json:"perNode,omitempty" yaml:"perNode,omitempty"`
	// PerTemplate is how many clones of one template run at once; default 4.
	PerTemplate int `json:"perTemplate,omitempty" yaml:"perTemplate,omitempty"`
}

// Timeouts bound each kind of Proxmox task, from its start until its end.
// Zero fields take the defaults.
type Timeouts struct {
	Clone    time.Duration `json:"clone,omitempty" yaml:"clone,omitempty"`       // qmclone; default 10m
	Config   time.Duration `json:"config,omitempty" yaml:"config,omitempty"`     // qmconfig; default 2m
	Start    time.Duration `json:"start,omitempty" yaml:"start,omitempty"`       // qmstart; default 5m
	Stop     time.Duration `json:"stop,omitempty" yaml:"stop,omitempty"`         // qmstop; default 2m
	Shutdown time.Duration `json:"shutdown,omitempty" yaml:"shutdown,omitempty"` // qmshutdown; default 3m
	Reboot   time.Duration `json:"reboot,omitempty" yaml:"reboot,omitempty"`     // qmreboot; default 5m
	Destroy  time.Duration `json:"destroy,omitempty" yaml:"destroy,omitempty"`   // qmdestroy; default 5m
	Resize   time.Duration `json:"resize,omitempty" yaml:"resize,omitempty"`     // resize; default 2m
	// GuestAgent is how long to wait for the guest agent to report an IP
	// address; default 5m.
	GuestAgent time.Duration `json:"guestAgent,omitempty" yaml:"guestAgent,omitempty"`
}

// The defaults of Limits and Timeouts.
const (
	defaultPerNode     = 4
	defaultPerTemplate = 4
)

// withDefaults returns t with every zero field set to its default.
func (t Timeouts) withDefaults() Timeouts {
	set := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	set(&t.Clone, 10*time.Minute)
	set(&t.Config, 2*time.Minute)
	set(&t.Start, 5*time.Minute)
	set(&t.Stop, 2*time.Minute)
	set(&t.Shutdown, 3*time.Minute)
	set(&t.Reboot, 5*time.Minute)
	set(&t.Destroy, 5*time.Minute)
	set(&t.Resize, 2*time.Minute)
	set(&t.GuestAgent, 5*time.Minute)
	return t
}

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	if l.PerNode <= 0 {
		l.PerNode = defaultPerNode
	}
	if l.PerTemplate <= 0 {
		l.PerTemplate = defaultPerTemplate
	}
	return l
}

var (
	// contextNameRe: names users type in spec.context.
	contextNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	// tokenIDRe: PVE::AccessControl's userid (user_regex "[^\s:/]+", realm
	// "[A-Za-z][A-Za-z0-9.\-_]+") followed by "!" and the token name
	// (same pattern as a realm).
	tokenIDRe = regexp.MustCompile(`^[^\s:/!]+@[A-Za-z][A-Za-z0-9._-]+![A-Za-z][A-Za-z0-9._-]+$`)
	// cfgNodeRe: pve-node (a host name label).
	cfgNodeRe = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$`)
	// cfgStorageRe: pve-storage-id.
	cfgStorageRe = regexp.MustCompile(`^[a-z][a-z0-9._-]*[a-z0-9]$`)
	// cfgBridgeRe: pve-bridge-id.
	cfgBridgeRe = regexp.MustCompile(`^[-_.\w\d]+$`)
)

// Validate checks the configuration without touching the network or the
// file system (files are read when the provider connects). The error
// matches errcode.Invalid and lists every problem, one per line, each
// naming the context and field:
//
//	proxmox: context "lab": tokenId: "root@pam" is not user@realm!name
//
// Secrets are never part of the message.
func (c Config) Validate() error {
	var problems []string
	add := func(format string, args ...any) {
		problems = append(problems, "proxmox: "+fmt.Sprintf(format, args...))
	}
	if len(c.Contexts) == 0 {
		add("contexts: at least one Proxmox context is required")
	}
	names := c.contextNames()
	for _, name := range names {
		if !contextNameRe.MatchString(name) {
			add("context %q: the name must be letters, digits, '.', '_' or '-', starting with a letter or digit", name)
		}
		for _, p := range c.Contexts[name].problems() {
			add("context %q: %s", name, p)
		}
	}
	switch {
	case c.DefaultContext != "":
		if _, ok := c.Contexts[c.DefaultContext]; !ok && len(c.Contexts) > 0 {
			add("defaultContext: %q is not a context (contexts: %s)", c.DefaultContext, strings.Join(names, ", "))
		}
	case len(c.Contexts) > 1:
		add("defaultContext: required when there are several contexts (contexts: %s)", strings.Join(names, ", "))
	}
	if c.Limits.PerNode < 0 {
		add("limits.perNode: must not be negative, got %d", c.Limits.PerNode)
	}
	if c.Limits.PerTemplate < 0 {
		add("limits.perTemplate: must not be negative, got %d", c.Limits.PerTemplate)
	}
	t := c.Timeouts
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"clone", t.Clone}, {"config", t.Config}, {"start", t.Start}, {"stop", t.Stop},
		{"shutdown", t.Shutdown}, {"reboot", t.Reboot}, {"destroy", t.Destroy},
		{"resize", t.Resize}, {"guestAgent", t.GuestAgent},
	} {
		if d.v < 0 {
			add("timeouts.%s: must not be negative, got %v", d.name, d.v)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return errcode.New(errcode.Invalid, strings.Join(problems, "\n"))
}

// contextNames returns the context names, sorted.
func (c Config) contextNames() []string {
	names := make([]string, 0, len(c.Contexts))
	for n := range c.Contexts {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// contextName resolves a resource's spec.context: "" is the default
// context (or the only one); an unknown name is an Invalid error listing
// the known contexts.
func (c Config) contextName(name string) (string, error) {
	if name == "" {
		switch {
		case c.DefaultContext != "":
			name = c.DefaultContext
		case len(c.Contexts) == 1:
			for n := range c.Contexts {
				return n, nil
			}
		default:
			return "", errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: no spec.context and no default context (contexts: %s)", strings.Join(c.contextNames(), ", ")))
		}
	}
	if _, ok := c.Contexts[name]; !ok {
		return "", errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: unknown context %q (contexts: %s)", name, strings.Join(c.contextNames(), ", ")))
	}
	return name, nil
}

// problems lists what is wrong with one context, each as "field: message".
func (c Context) problems() []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	if _, err := apiBaseURL(c.Endpoint, c.InsecureSkipVerify); err != nil {
		add("endpoint: %v", err)
	}

	switch id := c.TokenID; {
	case id == "":
		add("tokenId: required (user@realm!name, e.g. root@pam!openctl)")
	case strings.Contains(id, "="):
		// "root@pam!openctl=<secret>" pasted whole: never echo what
		// follows the '='.
		before, _, _ := strings.Cut(id, "=")
		add("tokenId: %q is followed by '=' and more: the part after '=' is the secret and belongs in tokenSecret or tokenSecretFile", before)
	case !tokenIDRe.MatchString(id):
		add("tokenId: %q is not an API token id of the form user@realm!name (e.g. root@pam!openctl)", id)
	}

	switch {
	case c.TokenSecret.IsZero() && c.TokenSecretFile == "":
		add("tokenSecret: one of tokenSecret and tokenSecretFile is required")
	case !c.TokenSecret.IsZero() && c.TokenSecretFile != "":
		add("tokenSecret: set only one of tokenSecret and tokenSecretFile")
	case !c.TokenSecret.IsZero():
		if msg := secretProblem(c.TokenSecret.Reveal()); msg != "" {
			add("tokenSecret: %s", msg)
		}
	}

	var trust []string
	if c.Fingerprint != "" {
		trust = append(trust, "fingerprint")
		if _, err := ParseFingerprint(c.Fingerprint); err != nil {
			add("fingerprint: %s", strings.TrimPrefix(err.Error(), "proxmox: fingerprint: "))
		}
	}
	if c.CAFile != "" {
		trust = append(trust, "caFile")
	}
	if c.InsecureSkipVerify {
		trust = append(trust, "insecureSkipVerify")
	}
	if len(trust) > 1 {
		add("%s: set at most one of fingerprint, caFile and insecureSkipVerify (got %s)", trust[0], strings.Join(trust, " and "))
	}

	if c.Node != "" && !cfgNodeRe.MatchString(c.Node) {
		add("node: %q is not a Proxmox node name", c.Node)
	}
	if s := c.Defaults.Storage; s != "" && !cfgStorageRe.MatchString(s) {
		add("defaults.storage: %q is not a Proxmox storage id (lower-case letters, digits, '-', '_' and '.')", s)
	}
	if b := c.Defaults.Bridge; b != "" && !cfgBridgeRe.MatchString(b) {
		add("defaults.bridge: %q is not a bridge name", b)
	}
	return out
}

// secretProblem describes what is wrong with a token secret without
// quoting it, or returns "".
func secretProblem(s string) string {
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return "contains white space or control characters (not shown)"
		}
	}
	return ""
}

// apiBaseURL checks a context endpoint and returns the API base URL
// go-proxmox wants: scheme://host[:port][/prefix]/api2/json.
func apiBaseURL(endpoint string, insecure bool) (string, error) {
	if endpoint == "" {
		return "", fmt.Errorf("required (e.g. https://pve.example.com:8006)")
	}
	if !strings.Contains(endpoint, "://") {
		return "", fmt.Errorf("%q has no scheme (want https://host:8006)", endpoint)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		// url.Error quotes the input, which is fine: credentials in a URL
		// are refused below, and a URL that does not parse has none we
		// could strip.
		return "", fmt.Errorf("not a URL (want https://host:8006): %v", errorsUnwrapURL(err))
	}
	if u.User != nil {
		return "", fmt.Errorf("%q must not carry credentials; use tokenId and tokenSecret", u.Redacted())
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !insecure {
			return "", fmt.Errorf("%q uses http://, which sends the API token in clear text; use https:// (http:// is accepted only with insecureSkipVerify)", endpoint)
		}
	default:
		return "", fmt.Errorf("%q: scheme must be https, got %q", endpoint, u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", fmt.Errorf("%q has no host (want https://host:8006)", endpoint)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q must not have a query or fragment", endpoint)
	}
	path := strings.TrimRight(u.Path, "/")
	path = strings.TrimSuffix(path, "/api2/json")
	return u.Scheme + "://" + u.Host + path + "/api2/json", nil
}

// errorsUnwrapURL returns the cause of a *url.Error (without the quoted
// input and operation), or err.
func errorsUnwrapURL(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// ParseFingerprint parses the SHA-256 fingerprint of a certificate: 64
// hex digits, in either case, either bare or as 32 colon-separated pairs
// (Proxmox shows "AB:CD:..." under the node's Certificates). A "sha256:"
// prefix (any case) and the output of
// `openssl x509 -noout -fingerprint -sha256` ("sha256 Fingerprint=AB:CD:...")
// are accepted too. Errors match errcode.Invalid and say what is expected.
func ParseFingerprint(s string) ([32]byte, error) {
	var out [32]byte
	bad := func(format string, args ...any) ([32]byte, error) {
		msg := "proxmox: fingerprint: " + fmt.Sprintf(format, args...) +
			`; want the certificate's SHA-256 as 64 hex digits, bare or colon-separated ("AB:CD:..."), as Proxmox shows it under the node's System → Certificates or as "openssl x509 -noout -fingerprint -sha256" prints it`
		return [32]byte{}, errcode.New(errcode.Invalid, msg)
	}
	v := strings.TrimSpace(s)
	lower := strings.ToLower(v)
	for _, p := range []string{"sha256 fingerprint=", "sha256fingerprint=", "sha256:", "sha-256:", "sha256="} {
		if strings.HasPrefix(lower, p) {
			v = strings.TrimSpace(v[len(p):])
			break
		}
	}
	if v == "" {
		return bad("empty")
	}
	digits := v
	if strings.Contains(v, ":") {
		parts := strings.Split(v, ":")
		for _, p := range parts {
			if len(p) != 2 {
				return bad("colon-separated groups must be two hex digits each, got %q", p)
			}
		}
		digits = strings.Join(parts, "")
	}
	for i, r := range digits {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F') {
			return bad("%q at position %d is not a hex digit", r, i+1)
		}
	}
	switch n := len(digits); {
	case n == 40:
		return bad("got 40 hex digits, which is a SHA-1 fingerprint")
	case n != 64:
		return bad("got %d hex digits", n)
	}
	if _, err := hex.Decode(out[:], []byte(digits)); err != nil {
		return bad("%v", err)
	}
	return out, nil
}

// formatFingerprint renders a SHA-256 fingerprint as Proxmox shows it:
// colon-separated upper-case hex.
func formatFingerprint(sum [32]byte) string {
	var b strings.Builder
	b.Grow(32*3 - 1)
	for i, x := range sum {
		if i > 0 {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%02X", x)
	}
	return b.String()
}
