package node

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"

	"github.com/openctl/openctl/agent/pki"
)

// credentials are what Reload installs: the per-connection TLS
// configuration and the bundle of accepted CAs it was built from.
type credentials struct {
	tls    *tls.Config
	bundle pki.Bundle
	cert   string // the server certificate's fingerprint
}

// Reload replaces the accepted CA bundle and the server certificate, for
// example after a CA rotation step. New connections use the new
// credentials. A connection established before keeps its server
// certificate, but each of its requests is checked against the new
// bundle: a client whose CA was dropped gets 403 UNAUTHORIZED and the
// connection is closed. TLS session resumption is disabled, so a dropped
// CA cannot come back through a session ticket either.
func (s *Server) Reload(caBundle, certPEM, keyPEM []byte) error {
	bundle, err := pki.ParseBundle(caBundle)
	if err != nil {
		return fmt.Errorf("agent: server CA bundle: %w", err)
	}
	leaf, err := pki.ParseLeaf(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("agent: server certificate: %w", err)
	}
	cfg := &tls.Config{
		MinVersion:       tls.VersionTLS13,
		Certificates:     []tls.Certificate{leaf.TLSCertificate()},
		ClientAuth:       tls.RequireAndVerifyClientCert,
		ClientCAs:        bundle.Pool(),
		NextProtos:       []string{"http/1.1"},
		Time:             s.now,
		VerifyConnection: requireClientAuth,
		// Every connection verifies the client's chain afresh.
		SessionTicketsDisabled: true,
	}
	s.creds.Store(&credentials{tls: cfg, bundle: bundle, cert: pki.Fingerprint(leaf.Cert)})
	return nil
}

// recheckClient checks, for every request on a mutual-TLS connection, that
// the client certificate verified at the handshake is still acceptable:
// issued by a CA of the current bundle (it may have been dropped by a
// Reload since) and still within its validity period (a connection can
// outlive its certificate).
func (s *Server) recheckClient(cs *tls.ConnectionState) error {
	c := s.creds.Load()
	if c == nil || len(cs.PeerCertificates) == 0 {
		return errors.New("agent: no verified client certificate")
	}
	if now := s.now(); now.After(cs.PeerCertificates[0].NotAfter) {
		return errors.New("agent: the client certificate has expired")
	}
	for _, chain := range cs.VerifiedChains {
		if len(chain) > 0 && c.bundle.Contains(chain[len(chain)-1]) {
			return nil
		}
	}
	return errors.New("agent: the client certificate's CA is no longer accepted")
}

// requireClientAuth insists on the ClientAuth extended key usage in the
// client's certificate. crypto/tls already verifies the chain for
// ClientAuth, but it also accepts a certificate without any extended key
// usage; ours always have one.
func requireClientAuth(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("agent: no client certificate")
	}
	if !slices.Contains(cs.PeerCertificates[0].ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		return errors.New("agent: client certificate lacks the ClientAuth extended key usage")
	}
	return nil
}

// TLSConfig returns the server's TLS configuration: TLS 1.3 only, client
// certificates required and verified against the CA bundle only, the
// credentials of the latest Reload.
func (s *Server) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := s.creds.Load()
			if c == nil {
				return nil, errors.New("agent: server has no credentials")
			}
			return c.tls, nil
		},
	}
}
