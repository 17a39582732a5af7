package k3s_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/k3s"
)

// decode decodes a providers.k3s section written in a config file.
func decode(t *testing.T, section string) error {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte("providers:\n  k3s:\n"+section), 0o600))
	cfg, _, err := config.LoadEnv(path, func(k string) string {
		if k == "OPENCTL_HOME" {
			return dir
		}
		return ""
	})
	require.NoError(t, err)
	_, err = k3s.Driver{}.DecodeConfig(cfg.Section(k3s.Name))
	return err
}

func TestDriverConfigSSHAndAddressMap(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(priv, "")
	require.NoError(t, err)
	key := filepath.Join(t.TempDir(), "id")
	require.NoError(t, os.WriteFile(key, pem.EncodeToMemory(block), 0o600))

	require.NoError(t, decode(t, "    ssh: {port: 2222, identityFile: "+key+"}\n    addressMap: 127.80.0.0/16\n"))
	for section, want := range map[string]string{
		"    ssh: {port: 70000}\n":                   "ssh.port",
		"    ssh: {identityFile: /nonexistent}\n":    "ssh.identityFile",
		"    addressMap: 192.168.1.0\n":              "want an IPv4 prefix like 127.80.0.0/16",
		"    addressMap: 127.80.1.0/16\n":            "want an IPv4 prefix like 127.80.0.0/16",
		"    ssh: {identityFile: " + key + ".pub}\n": "ssh.identityFile",
	} {
		err := decode(t, section)
		require.Error(t, err, section)
		assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
		assert.Contains(t, err.Error(), want)
		assert.Contains(t, err.Error(), "config.yaml:", "names the file and line")
	}
}
