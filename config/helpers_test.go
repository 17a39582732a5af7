package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Secrets the tests put in configurations; no error, warning or redacted
// output may contain them.
const (
	labSecret = "5ec12e7a-1ab5-4c3e-9d1e-000000000001"
	dsnPass   = "pw-5ec12e7-dsn"
	envSecret = "5ec12e7a-e000-4c3e-9d1e-00000000e7e7"
)

// fullExample is the configuration of the package documentation, with a
// secret in each place one can be.
const fullExample = `providers:
  proxmox:
    default-context: lab
    contexts:
      lab:
        endpoint: https://pve.lab:8006
        node: pve1
        credentials: lab-token
        fingerprint: "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89"
      prod:
        endpoint: https://pve.prod:8006
        node: pve-a
        credentials: prod-token
        caFile: certs/prod-ca.pem
      old:
        endpoint: https://pve.old:8006
        credentials: lab-token
        insecureSkipVerify: true
    credentials:
      lab-token:
        tokenId: root@pam!openctl
        tokenSecret: "` + labSecret + `"
      prod-token:
        tokenId: ci@pve!openctl
        tokenSecretFile: ~/.openctl/secrets/prod.token
    defaults:
      storage: local-lvm
      bridge: vmbr0
  custom:
    contexts:
      one:
        endpoint: https://api.example.com
state:
  backend: file
  dir: ~/.openctl/state
  dsn: postgres://openctl:` + dsnPass + `@db.example:5432/openctl
apply:
  concurrency: 8
`

// writeConfig writes content to dir/config.yaml with mode and returns the
// path.
func writeConfig(t *testing.T, dir, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), mode))
	require.NoError(t, os.Chmod(path, mode)) // despite the umask
	return path
}

// envOf returns a getenv that sees HOME=home and the pairs kv, and
// nothing else of the process's environment.
func envOf(home string, kv ...string) func(string) string {
	m := map[string]string{"HOME": home}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// requireNoSecret fails if s holds one of the test secrets.
func requireNoSecret(t *testing.T, s string) {
	t.Helper()
	for _, sec := range []string{labSecret, dsnPass, envSecret} {
		require.NotContains(t, s, sec)
	}
}
