package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/secret"
)

// Secrets the tests put in configurations; no error or warning may
// contain them.
const (
	labSecret = "5ec12e7a-1ab5-4c3e-9d1e-000000000001"
	dsnPass   = "pw-5ec12e7-dsn"
	envSecret = "5ec12e7a-e000-4c3e-9d1e-00000000e7e7"
)

// filesConfig is the section of a made-up provider, "files", decoded the
// way a driver decodes its own: the layout every provider section
// follows (default-context, contexts, credentials, defaults).
type filesConfig struct {
	DefaultContext string                       `yaml:"default-context"`
	Contexts       map[string]*filesContext     `yaml:"contexts"`
	Credentials    map[string]*filesCredentials `yaml:"credentials"`
	Defaults       filesDefaults                `yaml:"defaults"`
}

type filesContext struct {
	Endpoint    string            `yaml:"endpoint"`
	Root        string            `yaml:"root" openctl:"path"`
	Credentials string            `yaml:"credentials"`
	ReadOnly    bool              `yaml:"readOnly"`
	Retries     int               `yaml:"retries"`
	Labels      map[string]string `yaml:"labels"`
}

type filesCredentials struct {
	User         string        `yaml:"user"`
	Password     secret.Secret `yaml:"password"`
	PasswordFile string        `yaml:"passwordFile" openctl:"path"`
}

type filesDefaults struct {
	Mode string `yaml:"mode"`
}

// fullExample is a configuration with a section for "files", one for a
// provider the tests never decode, a secret in each place one can be, and
// comments Save must keep.
const fullExample = `providers:
  files:
    # The lab is where we try things.
    default-context: lab
    contexts:
      lab:
        endpoint: https://files.lab:8443
        root: ~/files/lab
        credentials: lab-user
        retries: 3
        labels: {team: infra}
      prod:
        endpoint: https://files.prod:8443
        root: data/prod # relative to this file
        credentials: prod-user
        readOnly: true
    credentials:
      lab-user:
        user: ann
        password: "` + labSecret + `"
      prod-user:
        user: ci
        passwordFile: ~/.openctl/secrets/prod.pw
    defaults:
      mode: "0644"
  other:
    anything: [1, 2]
state:
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

// readFile returns the contents of path.
func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}
