package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"strings"
	"time"

	"github.com/openctl/openctl/errcode"
)

// ControllerName is the common name of the controller's client certificate
// (the laptop or CI runner that drives the agents).
const ControllerName = "openctl-controller"

// Backdate is how far before "now" a new certificate's NotBefore is set,
// so that a node whose clock is a little behind the controller's accepts
// a certificate issued a moment ago.
const Backdate = 5 * time.Minute

// Option changes how a CA or a leaf certificate is made.
type Option func(*options)

type options struct {
	validity time.Duration
	now      func() time.Time
}

// WithValidity sets how long a certificate is valid from the moment it is
// issued. The defaults are ten years for a CA and one year for a leaf. A
// leaf never outlives the CA that signs it: its NotAfter is capped at the
// CA's.
func WithValidity(d time.Duration) Option { return func(o *options) { o.validity = d } }

// WithClock sets the clock that decides NotBefore and NotAfter (default
// time.Now). Tests use it to make certificates that are expired or not yet
// valid.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

func apply(opts []Option) options {
	o := options{now: time.Now}
	for _, f := range opts {
		f(&o)
	}
	if o.now == nil {
		o.now = time.Now
	}
	return o
}

// validityWindow returns NotBefore and NotAfter for a certificate issued
// now, years being the default lifetime when no WithValidity was given.
func (o options) validityWindow(years int) (time.Time, time.Time, error) {
	now := o.now().UTC().Truncate(time.Second)
	if o.validity < 0 {
		return time.Time{}, time.Time{}, fmt.Errorf("pki: negative validity %v: %w", o.validity, errcode.Invalid)
	}
	notAfter := now.AddDate(years, 0, 0)
	if o.validity > 0 {
		notAfter = now.Add(o.validity)
	}
	return now.Add(-Backdate), notAfter, nil
}

// CA is a certificate authority: a self-signed CA certificate and its
// private key. One CA is made per cluster; it signs one server certificate
// per node and one client certificate for the controller.
//
// A CA is safe for concurrent use once made; its fields must not be
// changed. Printing a CA (fmt, slog) or marshalling it (JSON, YAML) never
// shows its key.
type CA struct {
	Cert *x509.Certificate // the self-signed CA certificate
	Key  *ecdsa.PrivateKey // its private key
}

// Leaf is a certificate signed by a CA together with its private key: a
// node's server certificate or the controller's client certificate.
//
// A Leaf is safe for concurrent use once made; its fields must not be
// changed. Printing a Leaf (fmt, slog) or marshalling it (JSON, YAML)
// never shows its key.
type Leaf struct {
	Cert *x509.Certificate // the certificate, signed by a CA
	Key  *ecdsa.PrivateKey // its private key
}

// NewCA makes a CA with an ECDSA P-256 key, a random 128-bit serial and
// the common name name (for example "openctl dev CA"), valid for ten
// years unless WithValidity says otherwise. The CA can sign leaf
// certificates only, never intermediate CAs (path length zero).
func NewCA(name string, opts ...Option) (*CA, error) {
	if strings.TrimSpace(name) == "" {
		return nil, fmt.Errorf("pki: CA name is empty: %w", errcode.Invalid)
	}
	o := apply(opts)
	notBefore, notAfter, err := o.validityWindow(10)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"openctl"}},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("pki: create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: parse new CA certificate: %w", err)
	}
	return &CA{Cert: cert, Key: key}, nil
}

// IssueServer issues a node's server certificate: common name node, the
// subject alternative names node (a DNS name, or an IP address if node is
// one) and every address in ips, extended key usage ServerAuth only. It is
// valid for one year unless WithValidity says otherwise.
func (ca *CA) IssueServer(node string, ips []net.IP, opts ...Option) (*Leaf, error) {
	if err := checkName(node); err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: node, Organization: []string{"openctl"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	seen := map[string]bool{}
	addIP := func(ip net.IP) {
		if ip4 := ip.To4(); ip4 != nil {
			ip = ip4
		}
		if !seen[string(ip)] {
			seen[string(ip)] = true
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		}
	}
	if ip := net.ParseIP(node); ip != nil {
		addIP(ip)
	} else {
		tmpl.DNSNames = []string{node}
	}
	for _, ip := range ips {
		if len(ip) != net.IPv4len && len(ip) != net.IPv6len {
			return nil, fmt.Errorf("pki: server certificate for %q: invalid IP address %v: %w", node, ip, errcode.Invalid)
		}
		addIP(ip)
	}
	return ca.issue(tmpl, opts)
}

// IssueClient issues a client certificate with common name cn (usually
// [ControllerName]) and extended key usage ClientAuth only. It is valid
// for one year unless WithValidity says otherwise.
func (ca *CA) IssueClient(cn string, opts ...Option) (*Leaf, error) {
	if strings.TrimSpace(cn) == "" {
		return nil, fmt.Errorf("pki: client common name is empty: %w", errcode.Invalid)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn, Organization: []string{"openctl"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return ca.issue(tmpl, opts)
}

func (ca *CA) issue(tmpl *x509.Certificate, opts []Option) (*Leaf, error) {
	if ca == nil || ca.Cert == nil || ca.Key == nil {
		return nil, fmt.Errorf("pki: CA has no certificate or key: %w", errcode.Invalid)
	}
	o := apply(opts)
	notBefore, notAfter, err := o.validityWindow(1)
	if err != nil {
		return nil, err
	}
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: generate key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = notBefore
	tmpl.NotAfter = notAfter
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("pki: create certificate for %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: parse new certificate: %w", err)
	}
	return &Leaf{Cert: cert, Key: key}, nil
}

// newSerial returns a random, positive 128-bit serial number.
func newSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, fmt.Errorf("pki: serial number: %w", err)
		}
		if n.Sign() > 0 {
			return n, nil
		}
	}
}

// checkName accepts a node name usable as a DNS SAN or an IP address.
func checkName(name string) error {
	if name == "" || len(name) > 253 {
		return fmt.Errorf("pki: node name %q: must be 1..253 characters: %w", name, errcode.Invalid)
	}
	if net.ParseIP(name) != nil {
		return nil
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("pki: node name %q: empty or over-long label: %w", name, errcode.Invalid)
		}
		for _, c := range label {
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
			if !ok {
				return fmt.Errorf("pki: node name %q: character %q not allowed in a DNS name: %w", name, c, errcode.Invalid)
			}
		}
	}
	return nil
}

// CertPEM returns the CA certificate, PEM-encoded.
func (ca *CA) CertPEM() []byte { return EncodeCert(ca.Cert) }

// KeyPEM returns the CA private key, PEM-encoded (PKCS #8). Write it only
// to a file of mode 0600 (see [WriteFiles]).
func (ca *CA) KeyPEM() ([]byte, error) { return EncodeKey(ca.Key) }

// String describes the CA without its key.
func (ca CA) String() string { return describe("CA", ca.Cert) }

// GoString describes the CA without its key (%#v).
func (ca CA) GoString() string { return "pki." + ca.String() }

// LogValue describes the CA in log/slog output without its key.
func (ca CA) LogValue() slog.Value { return slog.StringValue(ca.String()) }

// MarshalJSON describes the CA as a JSON string without its key; use
// CertPEM and KeyPEM to store it.
func (ca CA) MarshalJSON() ([]byte, error) { return json.Marshal(ca.String()) }

// MarshalYAML describes the CA without its key (gopkg.in/yaml.v3's
// Marshaler).
func (ca CA) MarshalYAML() (any, error) { return ca.String(), nil }

// CertPEM returns the certificate, PEM-encoded.
func (l *Leaf) CertPEM() []byte { return EncodeCert(l.Cert) }

// KeyPEM returns the private key, PEM-encoded (PKCS #8). Write it only to a
// file of mode 0600 (see [WriteFiles]).
func (l *Leaf) KeyPEM() ([]byte, error) { return EncodeKey(l.Key) }

// TLSCertificate returns the leaf as a tls.Certificate for
// tls.Config.Certificates.
func (l *Leaf) TLSCertificate() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{l.Cert.Raw}, PrivateKey: l.Key, Leaf: l.Cert}
}

// String describes the leaf without its key.
func (l Leaf) String() string { return describe("Leaf", l.Cert) }

// GoString describes the leaf without its key (%#v).
func (l Leaf) GoString() string { return "pki." + l.String() }

// LogValue describes the leaf in log/slog output without its key.
func (l Leaf) LogValue() slog.Value { return slog.StringValue(l.String()) }

// MarshalJSON describes the leaf as a JSON string without its key; use
// CertPEM and KeyPEM to store it.
func (l Leaf) MarshalJSON() ([]byte, error) { return json.Marshal(l.String()) }

// MarshalYAML describes the leaf without its key (gopkg.in/yaml.v3's
// Marshaler).
func (l Leaf) MarshalYAML() (any, error) { return l.String(), nil }

func describe(kind string, c *x509.Certificate) string {
	if c == nil {
		return kind + "{}"
	}
	return fmt.Sprintf("%s{CN=%q serial=%x notAfter=%s key=[redacted]}", kind, c.Subject.CommonName, c.SerialNumber, c.NotAfter.UTC().Format(time.RFC3339))
}

// ParseCA parses a CA from its PEM-encoded certificate and key and checks
// that the certificate is a CA certificate and that the key matches it.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, key, err := parsePair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if !cert.IsCA || !cert.BasicConstraintsValid {
		return nil, fmt.Errorf("pki: certificate %q is not a CA certificate: %w", cert.Subject.CommonName, errcode.Invalid)
	}
	return &CA{Cert: cert, Key: key}, nil
}

// ParseLeaf parses a leaf certificate and its key from PEM and checks that
// the key matches the certificate.
func ParseLeaf(certPEM, keyPEM []byte) (*Leaf, error) {
	cert, key, err := parsePair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return &Leaf{Cert: cert, Key: key}, nil
}

func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cert, err := ParseCert(certPEM)
	if err != nil {
		return nil, nil, err
	}
	key, err := ParseKey(keyPEM)
	if err != nil {
		return nil, nil, err
	}
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok || !pub.Equal(&key.PublicKey) {
		return nil, nil, fmt.Errorf("pki: private key does not match certificate %q: %w", cert.Subject.CommonName, errcode.Invalid)
	}
	return cert, key, nil
}
