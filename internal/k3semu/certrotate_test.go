package k3semu

import (
	"bytes"
	"crypto/x509"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// k3s regenerates a leaf certificate on start when it misses a SAN, has
// other subject fields, is not signed by the CA or is close to expiry
// (deps createClientCertKey); otherwise it keeps it.
func TestLoadOrIssue(t *testing.T) {
	dir := t.TempDir()
	ca, err := LoadOrCreateCA(OSFS{}, dir, "server-ca", "k3s-server-ca")
	require.NoError(t, err)
	other, err := LoadOrCreateCA(OSFS{}, dir, "other-ca", "other-ca")
	require.NoError(t, err)
	crt, key := filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
	now := time.Now()
	ip := net.ParseIP("10.0.0.1")
	issue := func(ca *KeyPair, cn string, dns []string, at time.Time) *x509.Certificate {
		t.Helper()
		kp, err := ca.LoadOrIssue(OSFS{}, crt, key, cn, nil, dns, []net.IP{ip}, x509.ExtKeyUsageServerAuth, at)
		require.NoError(t, err)
		onDisk, err := LoadKeyPair(OSFS{}, crt, key)
		require.NoError(t, err)
		require.True(t, onDisk.Cert.Equal(kp.Cert), "what is returned is what is on disk")
		return kp.Cert
	}
	first := issue(ca, "kube-apiserver", []string{"a.test"}, now)
	assert.True(t, issue(ca, "kube-apiserver", []string{"a.test"}, now).Equal(first), "same names: kept")
	assert.True(t, issue(ca, "kube-apiserver", nil, now).Equal(first), "fewer names: kept")
	second := issue(ca, "kube-apiserver", []string{"a.test", "b.test"}, now)
	assert.False(t, second.Equal(first), "a new SAN: regenerated")
	assert.ElementsMatch(t, []string{"a.test", "b.test"}, second.DNSNames)
	assert.False(t, issue(ca, "other-cn", []string{"a.test", "b.test"}, now).Equal(second), "another CN: regenerated")
	third := issue(other, "other-cn", []string{"a.test", "b.test"}, now)
	require.NoError(t, third.CheckSignatureFrom(other.Cert), "another CA: regenerated")
	assert.True(t, issue(other, "other-cn", nil, now.Add(200*24*time.Hour)).Equal(third), "200 days on: kept")
	assert.False(t, issue(other, "other-cn", nil, now.Add(300*24*time.Hour)).Equal(third), "fewer than 120 days left: regenerated")
}

func TestRotateCertificates(t *testing.T) {
	data := t.TempDir()
	tls := filepath.Join(data, "server", "tls")
	files := map[string]string{
		"server/tls/server-ca.crt": "ca", "server/tls/server-ca.key": "cakey",
		"server/tls/client-ca.crt": "cca", "server/tls/client-ca.key": "ccakey",
		"server/tls/serving-kube-apiserver.crt": "serving", "server/tls/serving-kube-apiserver.key": "servingkey",
		"server/tls/client-admin.crt": "admin", "server/tls/client-admin.key": "adminkey",
		"server/tls/sub/x.crt":     "nested",
		"agent/client-kubelet.crt": "kubelet", "agent/client-kubelet.key": "kubeletkey",
	}
	writeConfig(t, data, files)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	now := time.Unix(1764619200, 0)

	err := RotateCertificates(OSFS{}, CertRotateOptions{DataDir: data, Services: []string{"admin"}}, now, log)
	require.NoError(t, err)
	backup := filepath.Join(data, "server", "tls-1764619200")
	for name, want := range map[string]string{"client-admin.crt": "admin", "serving-kube-apiserver.crt": "serving", "sub/x.crt": "nested", "client-kubelet.key": "kubeletkey"} {
		b, err := os.ReadFile(filepath.Join(backup, name))
		require.NoError(t, err, name)
		assert.Equal(t, want, string(b), name)
	}
	st, err := os.Stat(filepath.Join(backup, "client-kubelet.key"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	assert.NoFileExists(t, filepath.Join(tls, "client-admin.crt"))
	assert.NoFileExists(t, filepath.Join(tls, "client-admin.key"))
	assert.FileExists(t, filepath.Join(tls, "serving-kube-apiserver.crt"), "only admin was asked for")
	assert.Contains(t, logs.String(), "Rotating certificates for admin service")
	assert.Contains(t, logs.String(), "Successfully backed up certificates for all services to path "+backup+", please restart k3s server or agent to rotate certificates")

	logs.Reset()
	require.NoError(t, RotateCertificates(OSFS{}, CertRotateOptions{DataDir: data}, now.Add(time.Second), log))
	assert.Contains(t, logs.String(), "Server detected, rotating server certificates")
	assert.Contains(t, logs.String(), "Rotating dynamic listener certificate")
	for _, gone := range []string{"server/tls/serving-kube-apiserver.crt", "server/tls/serving-kube-apiserver.key", "agent/client-kubelet.crt"} {
		assert.NoFileExists(t, filepath.Join(data, gone))
	}
	for _, kept := range []string{"server-ca.crt", "server-ca.key", "client-ca.crt", "client-ca.key"} {
		assert.FileExists(t, filepath.Join(tls, kept), "CAs are kept")
	}
	assert.DirExists(t, filepath.Join(data, "server", "tls-1764619201"))

	assert.EqualError(t, RotateCertificates(OSFS{}, CertRotateOptions{DataDir: data, Services: []string{"nope"}}, now, log), "Service nope is not recognized")
	// As in k3s, the backup needs server/tls.
	require.Error(t, RotateCertificates(OSFS{}, CertRotateOptions{DataDir: t.TempDir()}, now, log))

	o, err := ParseCertRotateArgs([]string{"-s", "admin,api-server", "--service", "kubelet"}, env(map[string]string{"K3S_DATA_DIR": "/d"}))
	require.NoError(t, err)
	assert.Equal(t, CertRotateOptions{DataDir: "/d", Services: []string{"admin", "api-server", "kubelet"}}, o)
}
