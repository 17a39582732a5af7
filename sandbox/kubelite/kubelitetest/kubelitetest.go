// Package kubelitetest serves a kubelite API over TLS for tests, with a
// client CA and an admin client certificate, as a k3s server would.
package kubelitetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/openctl/openctl/sandbox/kubelite"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Token is the bearer token a Server accepts, as user "token-user" in
// group "token-group".
const Token = "secret-token"

// CA is a certificate authority for client certificates.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	Pool *x509.CertPool // holding Cert
}

// NewCA returns a new self-signed CA.
func NewCA(t testing.TB) *CA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "client-ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{cert, key, pool}
}

// Issue returns the PEM certificate and key of a client certificate for
// user cn in groups.
func (ca *CA) Issue(t testing.TB, cn string, groups ...string) (certPEM, keyPEM []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: groups},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// Server is a kubelite API served over TLS for the length of a test.
type Server struct {
	Store  *kubelite.Store
	Server *httptest.Server
	CA     *CA          // the client CA
	Config *rest.Config // user "admin" in system:masters, by client certificate; no client-side rate limit
	Client *kubernetes.Clientset
}

// Start serves the API of store (nil: a new one) until the test ends.
func Start(t testing.TB, store *kubelite.Store) *Server {
	if store == nil {
		store = kubelite.NewStore()
	}
	ca := NewCA(t)
	h := kubelite.NewHandler(store, kubelite.Options{ClientCAs: ca.Pool, Version: "v1.37.2+k3s1", Token: func(tok string) (string, []string, bool) {
		return "token-user", []string{"token-group"}, tok == Token
	}})
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	certPEM, keyPEM := ca.Issue(t, "admin", "system:masters")
	serverCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: serverCA, CertData: certPEM, KeyData: keyPEM}, QPS: -1}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &Server{store, srv, ca, cfg, client}
}
