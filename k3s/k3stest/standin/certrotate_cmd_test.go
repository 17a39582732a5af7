package standin_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// servedCert is the certificate server presents on its https port.
func servedCert(t *testing.T, server *proc) *x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", server.ip+":6443", &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reading the certificate
	require.NoError(t, err)
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

func certFile(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	blk, _ := pem.Decode(b)
	require.NotNil(t, blk, path)
	c, err := x509.ParseCertificate(blk.Bytes)
	require.NoError(t, err)
	return c
}

// TestCertificateRotate: leaf certificates survive a restart; `k3s
// certificate rotate` (k3s stopped) backs server/tls up to
// server/tls-<unix time> and removes the leaves of the services asked
// for, keeping the CAs, so the next start issues new ones — with the SANs
// of that start's configuration (CONTRACT §6: adding a --tls-san later;
// here through a config.yaml.d drop-in appending to tls-san).
func TestCertificateRotate(t *testing.T) {
	c := newCluster(t)
	// The flags come from a config file here (its parsing is unit-tested;
	// this checks the binary reads it): an unknown key is warned about.
	config := filepath.Join(c.dir, "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte("cluster-init: true\ntoken: s3cret\ntls-san: [a.test]\nno-such-flag: x\n"), 0o600))
	args := []string{"server", "--config", config}
	s1 := c.start("server-1", 1, args...)
	s1.waitReady(t, 2*time.Minute)
	assert.Contains(t, s1.logs.String(), `level=warning msg="Unknown flag --no-such-flag found in config.yaml, skipping"`)
	dataDir := filepath.Join(s1.dir, "data")
	tlsDir := filepath.Join(dataDir, "server", "tls")
	caPEM, err := os.ReadFile(filepath.Join(tlsDir, "server-ca.crt"))
	require.NoError(t, err)
	serving := certFile(t, filepath.Join(tlsDir, "serving-kube-apiserver.crt"))
	admin := certFile(t, filepath.Join(tlsDir, "client-admin.crt"))
	assert.True(t, servedCert(t, s1).Equal(serving))
	assert.Contains(t, serving.DNSNames, "a.test")
	stop := func(p *proc) {
		t.Helper()
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		code, _ := p.waitExit(t, time.Minute)
		require.Equal(t, 0, code)
	}

	// Rotate admin only: the serving certificate is kept across the restart.
	stop(s1)
	_, errOut, err := c.k3s("certificate", "rotate", "--data-dir", dataDir, "--service", "admin")
	require.NoError(t, err, errOut)
	assert.Contains(t, errOut, `msg="Rotating certificates for admin service"`)
	assert.Regexp(t, `msg="Successfully backed up certificates for all services to path `+regexp.QuoteMeta(dataDir)+`/server/tls-\d+, please restart k3s server or agent to rotate certificates"`, errOut)
	backups, err := filepath.Glob(filepath.Join(dataDir, "server", "tls-*"))
	require.NoError(t, err)
	require.Len(t, backups, 1)
	assert.True(t, certFile(t, filepath.Join(backups[0], "client-admin.crt")).Equal(admin), "the old admin certificate is backed up")
	s1b := c.start("server-1", 1, args...)
	s1b.waitReady(t, 2*time.Minute)
	assert.True(t, certFile(t, filepath.Join(tlsDir, "serving-kube-apiserver.crt")).Equal(serving), "kept")
	assert.True(t, servedCert(t, s1b).Equal(serving))
	admin2 := certFile(t, filepath.Join(tlsDir, "client-admin.crt"))
	assert.False(t, admin2.Equal(admin), "reissued")
	c.mustKubectl(s1b, "get", "nodes")

	// Rotate everything, start with another --tls-san: a new serving
	// certificate with both names, from the same CA.
	stop(s1b) // a start lies between the two rotations, so their backups (named by the second) differ
	_, errOut, err = c.k3s("certificate", "rotate", "--data-dir", dataDir)
	require.NoError(t, err, errOut)
	assert.Contains(t, errOut, `msg="Server detected, rotating server certificates"`)
	require.NoError(t, os.MkdirAll(config+".d", 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(config+".d", "20-san.yaml"), []byte("tls-san+: [b.test]\n"), 0o600))
	s1c := c.start("server-1", 1, args...)
	s1c.waitReady(t, 2*time.Minute)
	serving3 := certFile(t, filepath.Join(tlsDir, "serving-kube-apiserver.crt"))
	assert.False(t, serving3.Equal(serving))
	assert.Subset(t, serving3.DNSNames, []string{"a.test", "b.test"})
	assert.True(t, servedCert(t, s1c).Equal(serving3))
	caPEM2, err := os.ReadFile(filepath.Join(tlsDir, "server-ca.crt"))
	require.NoError(t, err)
	assert.Equal(t, string(caPEM), string(caPEM2), "the CA is kept")
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	_, err = serving3.Verify(x509.VerifyOptions{Roots: pool, DNSName: "b.test"})
	assert.NoError(t, err)
	assert.False(t, certFile(t, filepath.Join(tlsDir, "client-admin.crt")).Equal(admin2))
	c.mustKubectl(s1c, "get", "nodes")
	backups, err = filepath.Glob(filepath.Join(dataDir, "server", "tls-*"))
	require.NoError(t, err)
	assert.Len(t, backups, 2)
}
