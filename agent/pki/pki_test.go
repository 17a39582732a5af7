package pki_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/errcode"
)

func newCA(t *testing.T, opts ...pki.Option) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA("test CA", opts...)
	require.NoError(t, err)
	return ca
}

func TestNewCADefaults(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ca := newCA(t, pki.WithClock(func() time.Time { return now }))
	c := ca.Cert
	assert.True(t, c.IsCA)
	assert.True(t, c.BasicConstraintsValid)
	assert.True(t, c.MaxPathLenZero)
	assert.Equal(t, 0, c.MaxPathLen)
	assert.Equal(t, "test CA", c.Subject.CommonName)
	assert.Equal(t, x509.ECDSA, c.PublicKeyAlgorithm)
	assert.Equal(t, elliptic.P256(), c.PublicKey.(*ecdsa.PublicKey).Curve)
	assert.NotZero(t, c.KeyUsage&x509.KeyUsageCertSign)
	assert.Equal(t, now.Add(-pki.Backdate), c.NotBefore)
	assert.Equal(t, now.AddDate(10, 0, 0), c.NotAfter)
	assert.NotEmpty(t, c.SubjectKeyId)
	require.NoError(t, c.CheckSignatureFrom(c))
}

func TestLeafDefaults(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := pki.WithClock(func() time.Time { return now })
	ca := newCA(t, clock)

	srv, err := ca.IssueServer("node-1.example", []net.IP{net.ParseIP("10.0.0.5"), net.ParseIP("fd00::5"), net.ParseIP("10.0.0.5")}, clock)
	require.NoError(t, err)
	c := srv.Cert
	assert.False(t, c.IsCA)
	assert.Equal(t, "node-1.example", c.Subject.CommonName)
	assert.Equal(t, []string{"node-1.example"}, c.DNSNames)
	require.Len(t, c.IPAddresses, 2, "duplicates removed")
	assert.True(t, c.IPAddresses[0].Equal(net.ParseIP("10.0.0.5")))
	assert.True(t, c.IPAddresses[1].Equal(net.ParseIP("fd00::5")))
	assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, c.ExtKeyUsage)
	assert.Equal(t, x509.KeyUsageDigitalSignature, c.KeyUsage)
	assert.Equal(t, now.AddDate(1, 0, 0), c.NotAfter)
	assert.Equal(t, ca.Cert.SubjectKeyId, c.AuthorityKeyId)
	require.NoError(t, c.CheckSignatureFrom(ca.Cert))

	cli, err := ca.IssueClient(pki.ControllerName, clock, pki.WithValidity(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, pki.ControllerName, cli.Cert.Subject.CommonName)
	assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, cli.Cert.ExtKeyUsage)
	assert.Empty(t, cli.Cert.DNSNames)
	assert.Equal(t, now.Add(time.Hour), cli.Cert.NotAfter)
}

func TestServerNamedByIP(t *testing.T) {
	ca := newCA(t)
	srv, err := ca.IssueServer("192.168.1.50", nil)
	require.NoError(t, err)
	assert.Empty(t, srv.Cert.DNSNames)
	require.Len(t, srv.Cert.IPAddresses, 1)
	_, err = srv.Cert.Verify(x509.VerifyOptions{Roots: pki.NewBundle(ca.Cert).Pool(), DNSName: "192.168.1.50"})
	require.NoError(t, err)
}

func TestLeafNeverOutlivesCA(t *testing.T) {
	ca := newCA(t, pki.WithValidity(24*time.Hour))
	l, err := ca.IssueClient("c", pki.WithValidity(365*24*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, ca.Cert.NotAfter, l.Cert.NotAfter)
}

func TestSerialsRandom(t *testing.T) {
	ca := newCA(t)
	seen := map[string]bool{ca.Cert.SerialNumber.String(): true}
	for range 20 {
		l, err := ca.IssueClient("c")
		require.NoError(t, err)
		s := l.Cert.SerialNumber
		assert.Positive(t, s.Sign())
		assert.LessOrEqual(t, s.BitLen(), 128)
		assert.False(t, seen[s.String()], "serial repeated")
		seen[s.String()] = true
	}
}

func TestBadInput(t *testing.T) {
	ca := newCA(t)
	cases := map[string]func() error{
		"empty CA name":     func() error { _, err := pki.NewCA(" "); return err },
		"negative validity": func() error { _, err := pki.NewCA("x", pki.WithValidity(-time.Hour)); return err },
		"empty node":        func() error { _, err := ca.IssueServer("", nil); return err },
		"space in node":     func() error { _, err := ca.IssueServer("a b", nil); return err },
		"empty label":       func() error { _, err := ca.IssueServer("a..b", nil); return err },
		"bad IP":            func() error { _, err := ca.IssueServer("a", []net.IP{{1, 2, 3}}); return err },
		"empty client CN":   func() error { _, err := ca.IssueClient(""); return err },
		"nil CA":            func() error { _, err := (&pki.CA{}).IssueClient("x"); return err },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			err := f()
			require.Error(t, err)
			assert.True(t, errors.Is(err, errcode.Invalid), "%v", err)
			assert.True(t, strings.HasPrefix(err.Error(), "pki: "), err.Error())
		})
	}
}

// The CA has path length zero: an intermediate it signs cannot sign leaves
// that verify.
func TestNoIntermediates(t *testing.T) {
	ca := newCA(t)
	ikey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	itmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "rogue"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	ider, err := x509.CreateCertificate(rand.Reader, itmpl, ca.Cert, &ikey.PublicKey, ca.Key)
	require.NoError(t, err)
	inter, err := x509.ParseCertificate(ider)
	require.NoError(t, err)
	rogue := &pki.CA{Cert: inter, Key: ikey}
	leaf, err := rogue.IssueClient("evil")
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(inter)
	_, err = leaf.Cert.Verify(x509.VerifyOptions{
		Roots: pki.NewBundle(ca.Cert).Pool(), Intermediates: pool,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	require.Error(t, err)
}

func TestPEMRoundTrip(t *testing.T) {
	ca := newCA(t)
	keyPEM, err := ca.KeyPEM()
	require.NoError(t, err)
	b, _ := pem.Decode(keyPEM)
	require.Equal(t, "PRIVATE KEY", b.Type)
	got, err := pki.ParseCA(ca.CertPEM(), keyPEM)
	require.NoError(t, err)
	assert.True(t, got.Cert.Equal(ca.Cert))
	assert.True(t, got.Key.Equal(ca.Key))

	leaf, err := ca.IssueClient("c")
	require.NoError(t, err)
	lk, err := leaf.KeyPEM()
	require.NoError(t, err)
	gl, err := pki.ParseLeaf(leaf.CertPEM(), lk)
	require.NoError(t, err)
	assert.True(t, gl.Cert.Equal(leaf.Cert))

	// SEC 1 keys are accepted too.
	der, err := x509.MarshalECPrivateKey(leaf.Key)
	require.NoError(t, err)
	k, err := pki.ParseKey(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	require.NoError(t, err)
	assert.True(t, k.Equal(leaf.Key))

	tc := leaf.TLSCertificate()
	assert.Equal(t, leaf.Cert, tc.Leaf)
	assert.Equal(t, [][]byte{leaf.Cert.Raw}, tc.Certificate)
}

func TestParseErrors(t *testing.T) {
	ca := newCA(t)
	other := newCA(t)
	caKey, _ := ca.KeyPEM()
	otherKey, _ := other.KeyPEM()
	leaf, _ := ca.IssueClient("c")
	leafKey, _ := leaf.KeyPEM()
	rsaLike := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte{1}})
	cases := map[string]func() error{
		"empty certs":      func() error { _, err := pki.ParseCerts(nil); return err },
		"garbage":          func() error { _, err := pki.ParseCerts([]byte("hello")); return err },
		"trailing garbage": func() error { _, err := pki.ParseCerts(append(ca.CertPEM(), "x"...)); return err },
		"key as cert":      func() error { _, err := pki.ParseCerts(caKey); return err },
		"bad DER": func() error {
			_, err := pki.ParseCert(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2}}))
			return err
		},
		"two certs for one": func() error { _, err := pki.ParseCert(append(ca.CertPEM(), other.CertPEM()...)); return err },
		"no key":            func() error { _, err := pki.ParseKey(nil); return err },
		"wrong key type":    func() error { _, err := pki.ParseKey(rsaLike); return err },
		"two keys":          func() error { _, err := pki.ParseKey(append(caKey, otherKey...)); return err },
		"key mismatch":      func() error { _, err := pki.ParseCA(ca.CertPEM(), otherKey); return err },
		"leaf as CA":        func() error { _, err := pki.ParseCA(leaf.CertPEM(), leafKey); return err },
		"leaf in bundle":    func() error { _, err := pki.ParseBundle(append(ca.CertPEM(), leaf.CertPEM()...)); return err },
		"bad PKCS8": func() error {
			_, err := pki.ParseKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}}))
			return err
		},
		"bad SEC1": func() error {
			_, err := pki.ParseKey(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte{1}}))
			return err
		},
		"encode nil key":     func() error { _, err := pki.EncodeKey(nil); return err },
		"leaf key mismatch":  func() error { _, err := pki.ParseLeaf(leaf.CertPEM(), caKey); return err },
		"empty bundle":       func() error { _, err := pki.ParseBundle([]byte("\n")); return err },
		"write bad filename": func() error { return pki.WriteFiles(t.TempDir(), map[string][]byte{"../x": nil}) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			err := f()
			require.Error(t, err)
			assert.True(t, errors.Is(err, errcode.Invalid), "%v", err)
		})
	}
}

func TestBundle(t *testing.T) {
	a, b := newCA(t), newCA(t)
	var zero pki.Bundle
	assert.Equal(t, 0, zero.Len())
	assert.Empty(t, zero.PEM())

	ab := pki.NewBundle(a.Cert, b.Cert, a.Cert)
	assert.Equal(t, 2, ab.Len())
	assert.True(t, ab.Contains(a.Cert))
	assert.True(t, ab.Contains(b.Cert))
	assert.Equal(t, ab, ab.With(a.Cert), "adding a member changes nothing")

	onlyB := ab.Without(a.Cert)
	assert.Equal(t, 1, onlyB.Len())
	assert.False(t, onlyB.Contains(a.Cert))
	assert.Equal(t, 2, ab.Len(), "Without does not change the receiver")

	parsed, err := pki.ParseBundle(ab.PEM())
	require.NoError(t, err)
	require.Equal(t, 2, parsed.Len())
	assert.True(t, parsed.Certs()[0].Equal(a.Cert))
	assert.True(t, parsed.Certs()[1].Equal(b.Cert))

	// With on a bundle sharing a backing array does not clobber another.
	base := pki.NewBundle(a.Cert)
	x := base.With(b.Cert)
	c := newCA(t)
	y := base.With(c.Cert)
	assert.True(t, x.Certs()[1].Equal(b.Cert))
	assert.True(t, y.Certs()[1].Equal(c.Cert))
}

func TestRotation(t *testing.T) {
	oldCA := newCA(t)
	oldSrv, err := oldCA.IssueServer("n1", nil)
	require.NoError(t, err)
	oldCli, err := oldCA.IssueClient(pki.ControllerName)
	require.NoError(t, err)

	newCA, overlap, err := pki.Rotate(pki.NewBundle(oldCA.Cert), "test CA") // same name on purpose
	require.NoError(t, err)
	newSrv, err := newCA.IssueServer("n1", nil)
	require.NoError(t, err)
	newCli, err := newCA.IssueClient(pki.ControllerName)
	require.NoError(t, err)

	verify := func(b pki.Bundle, l *pki.Leaf, usage x509.ExtKeyUsage) error {
		_, err := l.Cert.Verify(x509.VerifyOptions{Roots: b.Pool(), KeyUsages: []x509.ExtKeyUsage{usage}})
		return err
	}
	for _, l := range []*pki.Leaf{oldSrv, newSrv} {
		assert.NoError(t, verify(overlap, l, x509.ExtKeyUsageServerAuth))
	}
	for _, l := range []*pki.Leaf{oldCli, newCli} {
		assert.NoError(t, verify(overlap, l, x509.ExtKeyUsageClientAuth))
	}
	final := overlap.Without(oldCA.Cert)
	assert.Error(t, verify(final, oldSrv, x509.ExtKeyUsageServerAuth))
	assert.Error(t, verify(final, oldCli, x509.ExtKeyUsageClientAuth))
	assert.NoError(t, verify(final, newSrv, x509.ExtKeyUsageServerAuth))
	assert.NoError(t, verify(final, newCli, x509.ExtKeyUsageClientAuth))

	_, _, err = pki.Rotate(overlap, "")
	assert.ErrorIs(t, err, errcode.Invalid)
}

func TestWriteAndLoadFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "k3s", "dev")
	ca := newCA(t)
	cli, err := ca.IssueClient(pki.ControllerName)
	require.NoError(t, err)
	caKey, err := ca.KeyPEM()
	require.NoError(t, err)
	cliKey, err := cli.KeyPEM()
	require.NoError(t, err)
	files := map[string][]byte{
		pki.CACertFile:     pki.NewBundle(ca.Cert).PEM(),
		pki.CAKeyFile:      caKey,
		pki.ClientCertFile: cli.CertPEM(),
		pki.ClientKeyFile:  cliKey,
	}
	require.NoError(t, pki.WriteFiles(dir, files))
	st, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 4, "no temporary files left")
	for _, e := range entries {
		fi, err := e.Info()
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), e.Name())
	}

	gotCA, err := pki.LoadCA(filepath.Join(dir, pki.CACertFile), filepath.Join(dir, pki.CAKeyFile))
	require.NoError(t, err)
	assert.True(t, gotCA.Cert.Equal(ca.Cert))
	gotCli, err := pki.LoadLeaf(filepath.Join(dir, pki.ClientCertFile), filepath.Join(dir, pki.ClientKeyFile))
	require.NoError(t, err)
	assert.True(t, gotCli.Cert.Equal(cli.Cert))
	b, err := pki.LoadBundle(filepath.Join(dir, pki.CACertFile))
	require.NoError(t, err)
	assert.True(t, b.Contains(ca.Cert))

	// Overwriting replaces contents; mode stays 0600 even for a file that was wider.
	require.NoError(t, os.Chmod(filepath.Join(dir, pki.CACertFile), 0o644))
	other := newCA(t)
	require.NoError(t, pki.WriteFiles(dir, map[string][]byte{pki.CACertFile: pki.NewBundle(ca.Cert, other.Cert).PEM()}))
	b, err = pki.LoadBundle(filepath.Join(dir, pki.CACertFile))
	require.NoError(t, err)
	assert.Equal(t, 2, b.Len())
	fi, err := os.Stat(filepath.Join(dir, pki.CACertFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	_, err = pki.LoadBundle(filepath.Join(dir, "missing.pem"))
	assert.ErrorIs(t, err, errcode.NotFound)
	_, err = pki.LoadLeaf(filepath.Join(dir, pki.ClientCertFile), filepath.Join(dir, "missing.key"))
	assert.ErrorIs(t, err, errcode.NotFound)
	_, err = pki.LoadCA(filepath.Join(dir, pki.ClientCertFile), filepath.Join(dir, pki.ClientKeyFile))
	assert.ErrorIs(t, err, errcode.Invalid)
}

func TestKeysNeverPrinted(t *testing.T) {
	ca := newCA(t)
	leaf, err := ca.IssueClient("c")
	require.NoError(t, err)
	var sb strings.Builder
	log := slog.New(slog.NewTextHandler(&sb, nil))
	log.Info("x", "ca", ca, "leaf", leaf, "caval", *ca)
	outs := []string{
		fmt.Sprintf("%v %+v %#v %s", ca, *ca, *ca, leaf),
		fmt.Sprintf("%v %+v %#v", *leaf, leaf, *leaf),
		sb.String(),
	}
	d := ca.Key.D.String()
	for _, out := range outs {
		assert.NotContains(t, out, d)
		assert.Contains(t, out, "[redacted]")
	}
}

func FuzzParseBundle(f *testing.F) {
	a, _ := pki.NewCA("a")
	b, _ := pki.NewCA("b")
	key, _ := a.KeyPEM()
	f.Add(pki.NewBundle(a.Cert, b.Cert).PEM())
	f.Add(a.CertPEM())
	f.Add(key)
	f.Add([]byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		bundle, err := pki.ParseBundle(data)
		if err == nil {
			again, err := pki.ParseBundle(bundle.PEM())
			require.NoError(t, err)
			require.Equal(t, bundle.Len(), again.Len())
		}
		_, _ = pki.ParseKey(data)
	})
}

// A CA or a leaf marshalled to JSON or YAML (a state file, a debug dump)
// does not carry its private key: STYLE's "secrets redact themselves in
// String(), %v, JSON and YAML output".
func TestKeysNeverMarshalled(t *testing.T) {
	ca, err := pki.NewCA("redact CA")
	require.NoError(t, err)
	leaf, err := ca.IssueClient(pki.ControllerName)
	require.NoError(t, err)
	for name, v := range map[string]any{"CA": ca, "*CA": &ca, "Leaf": leaf, "CA value": *ca, "Leaf value": *leaf} {
		d := ca.Key.D.String()
		if strings.HasPrefix(name, "Leaf") {
			d = leaf.Key.D.String()
		}
		j, err := json.Marshal(v)
		require.NoError(t, err, name)
		assert.False(t, strings.Contains(string(j), d), "%s: JSON carries the private scalar", name)
		assert.Contains(t, string(j), "redacted", name)
		y, err := yaml.Marshal(v)
		require.NoError(t, err, name)
		assert.False(t, strings.Contains(string(y), d), "%s: YAML carries the private scalar", name)
		assert.False(t, strings.Contains(fmt.Sprintf("%v %+v %#v", v, v, v), d), name)
	}
}
