package pki

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/openctl/openctl/errcode"
)

// Bundle is the set of CA certificates a party accepts: the agent verifies
// client certificates against it and the controller verifies server
// certificates against it. Outside a rotation it holds one CA; during a
// rotation it holds the old and the new one.
//
// The zero value is an empty bundle. A Bundle is an immutable value: With
// and Without return new bundles. It is safe for concurrent use.
type Bundle struct {
	certs []*x509.Certificate
}

// NewBundle returns a bundle of the given CA certificates, in order,
// without duplicates.
func NewBundle(cas ...*x509.Certificate) Bundle {
	var b Bundle
	for _, c := range cas {
		b = b.With(c)
	}
	return b
}

// ParseBundle parses a PEM file of concatenated CA certificates, as written
// by [Bundle.PEM]. Every certificate must be a CA certificate.
func ParseBundle(data []byte) (Bundle, error) {
	certs, err := ParseCerts(data)
	if err != nil {
		return Bundle{}, err
	}
	for _, c := range certs {
		if !c.IsCA || !c.BasicConstraintsValid {
			return Bundle{}, fmt.Errorf("pki: bundle certificate %q is not a CA certificate: %w", c.Subject.CommonName, errcode.Invalid)
		}
	}
	return NewBundle(certs...), nil
}

// With returns a bundle that also accepts ca (added last). It returns b
// unchanged if ca is nil or already in b.
func (b Bundle) With(ca *x509.Certificate) Bundle {
	if ca == nil || b.Contains(ca) {
		return b
	}
	return Bundle{certs: append(slices.Clip(b.certs), ca)}
}

// Without returns a bundle that no longer accepts ca.
func (b Bundle) Without(ca *x509.Certificate) Bundle {
	if ca == nil {
		return b
	}
	out := Bundle{}
	for _, c := range b.certs {
		if !c.Equal(ca) {
			out.certs = append(out.certs, c)
		}
	}
	return out
}

// Contains reports whether ca is in the bundle.
func (b Bundle) Contains(ca *x509.Certificate) bool {
	return ca != nil && slices.ContainsFunc(b.certs, ca.Equal)
}

// Fingerprints are the SHA-256 fingerprints of the bundle's CA
// certificates (see [Fingerprint]), in the bundle's order.
func (b Bundle) Fingerprints() []string {
	out := make([]string, len(b.certs))
	for i, c := range b.certs {
		out[i] = Fingerprint(c)
	}
	return out
}

// Fingerprint is the SHA-256 of a certificate's DER encoding, in lower-case
// hex: how an agent reports the credentials it uses (agent.Info).
func Fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:])
}

// Len returns the number of CA certificates in the bundle.
func (b Bundle) Len() int { return len(b.certs) }

// Certs returns the bundle's CA certificates, in order. The slice is a
// copy; the certificates must not be changed.
func (b Bundle) Certs() []*x509.Certificate { return slices.Clone(b.certs) }

// PEM returns the bundle's certificates, PEM-encoded and concatenated: the
// contents of ca.pem.
func (b Bundle) PEM() []byte {
	var buf bytes.Buffer
	for _, c := range b.certs {
		buf.Write(EncodeCert(c))
	}
	return buf.Bytes()
}

// Pool returns a new x509.CertPool holding exactly the bundle's
// certificates (no system roots).
func (b Bundle) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range b.certs {
		p.AddCert(c)
	}
	return p
}

// Rotate starts a CA rotation. It makes a new CA named name and returns it
// with a bundle that accepts both the CAs of accepted and the new one.
//
// A rotation has three steps:
//
//  1. Introduce: newCA, overlap, err := pki.Rotate(current, name).
//     Distribute overlap.PEM() as the accepted bundle to every agent and
//     to the controller. Old and new certificates are now both accepted.
//  2. Reissue: issue new server certificates (one per node) and a new
//     client certificate from newCA and install them. Until every party
//     has been reissued, old- and new-CA certificates still meet.
//  3. Drop: final := overlap.Without(oldCA.Cert) and distribute it.
//     Certificates signed by the old CA are rejected from now on.
func Rotate(accepted Bundle, name string, opts ...Option) (*CA, Bundle, error) {
	ca, err := NewCA(name, opts...)
	if err != nil {
		return nil, Bundle{}, err
	}
	return ca, accepted.With(ca.Cert), nil
}
