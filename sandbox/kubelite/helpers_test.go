package kubelite_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/openctl/openctl/sandbox/kubelite"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// testCA is a CA for client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newCA(t testing.TB) *testCA {
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
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert, key, pool}
}

// issue returns PEM cert and key of a client certificate for user cn in groups.
func (ca *testCA) issue(t testing.TB, cn string, groups ...string) (certPEM, keyPEM []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: groups},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// cluster is a test server of one store.
type cluster struct {
	store  *kubelite.Store
	server *httptest.Server
	ca     *testCA
	config *rest.Config // admin, by client certificate
	client *kubernetes.Clientset
}

const testToken = "secret-token"

func newCluster(t testing.TB) *cluster {
	return newClusterOf(t, kubelite.NewStore())
}

func newClusterOf(t testing.TB, store *kubelite.Store) *cluster {
	ca := newCA(t)
	h := kubelite.NewHandler(store, kubelite.Options{ClientCAs: ca.pool, Version: "v1.37.2+k3s1", Token: func(tok string) (string, []string, bool) {
		return "token-user", []string{"token-group"}, tok == testToken
	}})
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	certPEM, keyPEM := ca.issue(t, "admin", "system:masters")
	serverCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: serverCA, CertData: certPEM, KeyData: keyPEM}}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{store, srv, ca, cfg, client}
}

// httpClient is an HTTP client authenticating with the admin certificate.
func (c *cluster) httpClient(t testing.TB) *http.Client {
	tr, err := rest.TransportFor(c.config)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: tr}
}
