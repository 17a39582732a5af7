package k3slite

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
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

// keyPair is a certificate with its key, as files under server/tls.
type keyPair struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
}

// loadOrCreateCA reuses server/tls/<name>.crt and .key, or makes a new
// self-signed CA named like k3s's (e.g. k3s-server-ca@<unix time>).
func loadOrCreateCA(f hostFS, dir, name, cn string) (*keyPair, error) {
	crtPath, keyPath := path.Join(dir, name+".crt"), path.Join(dir, name+".key")
	if kp, err := loadKeyPair(f, crtPath, keyPath); err == nil {
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

// issue signs a leaf certificate for cn/orgs with the given SANs.
func (ca *keyPair) issue(cn string, orgs []string, dnsNames []string, ips []net.IP, usage x509.ExtKeyUsage) (*keyPair, error) {
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
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("standin: certificate for %s: %w", cn, err)
	}
	return newKeyPair(der, key)
}

// certRenewBefore: k3s renews a leaf certificate on start once it has
// fewer than 120 days left (90 before the May 2025 releases;
// docs/cli/certificate.md). k3s keeps the key then; the stand-in makes a
// new one.
const certRenewBefore = 120 * 24 * time.Hour

// loadOrIssue reuses the certificate and key at crtPath and keyPath when
// they still fit, as k3s does on every start (deps createClientCertKey):
// signed by ca, with cn and orgs, every SAN asked for (more are fine), at
// least certRenewBefore left, and the key matching. Otherwise it issues a
// new one and writes it.
func (ca *keyPair) loadOrIssue(f hostFS, crtPath, keyPath, cn string, orgs, dnsNames []string, ips []net.IP, usage x509.ExtKeyUsage, now time.Time) (*keyPair, error) {
	if kp, err := loadKeyPair(f, crtPath, keyPath); err == nil && kp.fits(ca, cn, orgs, dnsNames, ips, now) {
		return kp, nil
	}
	kp, err := ca.issue(cn, orgs, dnsNames, ips, usage)
	if err != nil {
		return nil, err
	}
	return kp, kp.write(f, crtPath, keyPath)
}

// fits reports whether kp can be kept (see loadOrIssue).
func (kp *keyPair) fits(ca *keyPair, cn string, orgs, dnsNames []string, ips []net.IP, now time.Time) bool {
	c := kp.cert
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
	if c.CheckSignatureFrom(ca.cert) != nil {
		return false
	}
	pub, ok := kp.key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(c.PublicKey)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func newKeyPair(der []byte, key crypto.Signer) (*keyPair, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("standin: parse certificate: %w", err)
	}
	return &keyPair{cert: cert, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}, nil
}

func (kp *keyPair) keyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(kp.key)
	if err != nil {
		return nil, fmt.Errorf("standin: marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func (kp *keyPair) write(f hostFS, crtPath, keyPath string) error {
	keyPEM, err := kp.keyPEM()
	if err != nil {
		return err
	}
	if err := f.writeFile(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	return f.writeFile(crtPath, kp.certPEM, 0o644)
}

func loadKeyPair(f hostFS, crtPath, keyPath string) (*keyPair, error) {
	crtPEM, err := f.readFile(crtPath)
	if err != nil {
		return nil, fmt.Errorf("standin: %w", err)
	}
	keyPEM, err := f.readFile(keyPath)
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
	return &keyPair{cert: cert, certPEM: crtPEM, key: signer}, nil
}

// loadOrCreateKey reuses or makes the service-account signing key.
func loadOrCreateKey(f hostFS, p string) error {
	if f.exists(p) {
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
	return f.writeFile(p, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}
