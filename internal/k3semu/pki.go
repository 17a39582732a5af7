package k3semu

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path"
	"slices"
	"time"
)

// KeyPair is a certificate with its key, as files under server/tls.
type KeyPair struct {
	Cert    *x509.Certificate
	CertPEM []byte
	Key     crypto.Signer
}

// LoadOrCreateCA reuses server/tls/<name>.crt and .key, or makes a new
// self-signed CA named like k3s's (e.g. k3s-server-ca@<unix time>).
func LoadOrCreateCA(f FS, dir, name, cn string) (*KeyPair, error) {
	crtPath, keyPath := path.Join(dir, name+".crt"), path.Join(dir, name+".key")
	if kp, err := LoadKeyPair(f, crtPath, keyPath); err == nil {
		return kp, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("standin: ca key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(0),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", cn, now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("standin: ca %s: %w", name, err)
	}
	kp, err := newKeyPair(der, key)
	if err != nil {
		return nil, err
	}
	return kp, kp.write(f, crtPath, keyPath)
}

// Issue signs a leaf certificate for cn/orgs with the given SANs.
func (ca *KeyPair) Issue(cn string, orgs []string, dnsNames []string, ips []net.IP, usage x509.ExtKeyUsage) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("standin: key for %s: %w", cn, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("standin: serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("standin: certificate for %s: %w", cn, err)
	}
	return newKeyPair(der, key)
}

// certRenewBefore: k3s renews a leaf certificate on start once it has
// fewer than 120 days left (90 before the May 2025 releases;
// docs/cli/certificate.md). k3s keeps the key then; the twins make a
// new one.
const certRenewBefore = 120 * 24 * time.Hour

// LoadOrIssue reuses the certificate and key at crtPath and keyPath when
// they still fit, as k3s does on every start (deps createClientCertKey):
// signed by ca, with cn and orgs, every SAN asked for (more are fine), at
// least certRenewBefore left, and the key matching. Otherwise it issues a
// new one and writes it.
func (ca *KeyPair) LoadOrIssue(f FS, crtPath, keyPath, cn string, orgs, dnsNames []string, ips []net.IP, usage x509.ExtKeyUsage, now time.Time) (*KeyPair, error) {
	if kp, err := LoadKeyPair(f, crtPath, keyPath); err == nil && kp.fits(ca, cn, orgs, dnsNames, ips, now) {
		return kp, nil
	}
	kp, err := ca.Issue(cn, orgs, dnsNames, ips, usage)
	if err != nil {
		return nil, err
	}
	return kp, kp.write(f, crtPath, keyPath)
}

// fits reports whether kp can be kept (see loadOrIssue).
func (kp *KeyPair) fits(ca *KeyPair, cn string, orgs, dnsNames []string, ips []net.IP, now time.Time) bool {
	c := kp.Cert
	if c.Subject.CommonName != cn || !sameSet(c.Subject.Organization, orgs) || now.Add(certRenewBefore).After(c.NotAfter) {
		return false
	}
	for _, d := range dnsNames {
		if !slices.Contains(c.DNSNames, d) {
			return false
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(c.IPAddresses, ip.Equal) {
			return false
		}
	}
	if c.CheckSignatureFrom(ca.Cert) != nil {
		return false
	}
	pub, ok := kp.Key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(c.PublicKey)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func newKeyPair(der []byte, key crypto.Signer) (*KeyPair, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("standin: parse certificate: %w", err)
	}
	return &KeyPair{Cert: cert, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), Key: key}, nil
}

// KeyPEM is the private key, PKCS #8 in PEM.
func (kp *KeyPair) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(kp.Key)
	if err != nil {
		return nil, fmt.Errorf("standin: marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func (kp *KeyPair) write(f FS, crtPath, keyPath string) error {
	keyPEM, err := kp.KeyPEM()
	if err != nil {
		return err
	}
	if err := f.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	return f.WriteFile(crtPath, kp.CertPEM, 0o644)
}

// LoadKeyPair reads a certificate and its key.
func LoadKeyPair(f FS, crtPath, keyPath string) (*KeyPair, error) {
	crtPEM, err := f.ReadFile(crtPath)
	if err != nil {
		return nil, fmt.Errorf("standin: %w", err)
	}
	keyPEM, err := f.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("standin: %w", err)
	}
	cb, _ := pem.Decode(crtPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("standin: %s or %s is not PEM", crtPath, keyPath)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("standin: %s: %w", crtPath, err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("standin: %s: %w", keyPath, err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("standin: %s: key of type %T cannot sign", keyPath, k)
	}
	return &KeyPair{Cert: cert, CertPEM: crtPEM, Key: signer}, nil
}

// LoadOrCreateKey reuses or makes the service-account signing key.
func LoadOrCreateKey(f FS, p string) error {
	if f.Exists(p) {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("standin: service-account key: %w", err)
	}
	// SEC 1 ("EC PRIVATE KEY"): the apiserver's --service-account-key-file
	// reads public keys from it, and it does not accept PKCS #8 there.
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("standin: service-account key: %w", err)
	}
	return f.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// TLSCertificate is kp as a tls.Certificate.
func (kp *KeyPair) TLSCertificate() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{kp.Cert.Raw}, PrivateKey: kp.Key, Leaf: kp.Cert}
}
