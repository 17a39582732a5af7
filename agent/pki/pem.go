package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"

	"github.com/openctl/openctl/errcode"
)

// PEM block types written and read by this package.
const (
	certBlock    = "CERTIFICATE"
	keyBlock     = "PRIVATE KEY"    // PKCS #8, written
	ecKeyBlock   = "EC PRIVATE KEY" // SEC 1, accepted when read
	maxPEMBlocks = 64
)

// EncodeCert returns c PEM-encoded ("CERTIFICATE").
func EncodeCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: certBlock, Bytes: c.Raw})
}

// EncodeKey returns k PEM-encoded as PKCS #8 ("PRIVATE KEY").
func EncodeKey(k *ecdsa.PrivateKey) ([]byte, error) {
	if k == nil {
		return nil, fmt.Errorf("pki: no private key: %w", errcode.Invalid)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("pki: encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: keyBlock, Bytes: der}), nil
}

// ParseCerts parses every certificate of a PEM file. Anything but
// CERTIFICATE blocks and surrounding white space is an error, and so is a
// file without certificates.
func ParseCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	rest := data
	for len(bytes.TrimSpace(rest)) > 0 {
		if len(out) == maxPEMBlocks {
			return nil, fmt.Errorf("pki: more than %d certificates: %w", maxPEMBlocks, errcode.Invalid)
		}
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, fmt.Errorf("pki: data after certificate %d is not PEM: %w", len(out), errcode.Invalid)
		}
		if b.Type != certBlock {
			return nil, fmt.Errorf("pki: PEM block %q where a CERTIFICATE was expected: %w", b.Type, errcode.Invalid)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, errcode.Wrap(errcode.Invalid, "pki: parse certificate", err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("pki: no certificate in PEM data: %w", errcode.Invalid)
	}
	return out, nil
}

// ParseCert parses a PEM file holding exactly one certificate.
func ParseCert(data []byte) (*x509.Certificate, error) {
	certs, err := ParseCerts(data)
	if err != nil {
		return nil, err
	}
	if len(certs) != 1 {
		return nil, fmt.Errorf("pki: %d certificates where one was expected: %w", len(certs), errcode.Invalid)
	}
	return certs[0], nil
}

// ParseKey parses a PEM file holding exactly one ECDSA private key, PKCS
// #8 ("PRIVATE KEY") or SEC 1 ("EC PRIVATE KEY").
func ParseKey(data []byte) (*ecdsa.PrivateKey, error) {
	b, rest := pem.Decode(data)
	if b == nil {
		return nil, fmt.Errorf("pki: no PEM private key: %w", errcode.Invalid)
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("pki: data after the private key: %w", errcode.Invalid)
	}
	switch b.Type {
	case keyBlock:
		k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
		if err != nil {
			return nil, errcode.Wrap(errcode.Invalid, "pki: parse private key", err)
		}
		ek, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("pki: private key is a %T, not ECDSA: %w", k, errcode.Invalid)
		}
		return ek, nil
	case ecKeyBlock:
		k, err := x509.ParseECPrivateKey(b.Bytes)
		if err != nil {
			return nil, errcode.Wrap(errcode.Invalid, "pki: parse private key", err)
		}
		return k, nil
	}
	return nil, fmt.Errorf("pki: PEM block %q is not a private key: %w", b.Type, errcode.Invalid)
}
