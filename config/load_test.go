package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
)

func TestLoadFullExample(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	path := writeConfig(t, dir, fullExample, 0o600)

	cfg, warnings, err := config.LoadEnv(path, envOf(home))
	require.NoError(t, err)
	assert.Empty(t, warnings)
	assert.Equal(t, path, cfg.Path)

	p := cfg.Providers["proxmox"]
	require.NotNil(t, p)
	assert.Equal(t, "lab", p.DefaultContext)
	assert.Equal(t, &config.Context{
		Endpoint: "https://pve.lab:8006", Node: "pve1", Credentials: "lab-token",
		Fingerprint: "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89",
	}, p.Contexts["lab"])
	assert.Equal(t, filepath.Join(dir, "certs/prod-ca.pem"), p.Contexts["prod"].CAFile, "relative to the file's directory")
	assert.True(t, p.Contexts["old"].InsecureSkipVerify)
	assert.Equal(t, "root@pam!openctl", p.Credentials["lab-token"].TokenID)
	assert.Equal(t, labSecret, p.Credentials["lab-token"].TokenSecret.Reveal())
	assert.Equal(t, filepath.Join(home, ".openctl/secrets/prod.token"), p.Credentials["prod-token"].TokenSecretFile, "~ expanded")
	assert.Equal(t, map[string]string{"storage": "local-lvm", "bridge": "vmbr0"}, p.Defaults)
	assert.Equal(t, "https://api.example.com", cfg.Providers["custom"].Contexts["one"].Endpoint)
	assert.Equal(t, config.BackendFile, cfg.State.Backend)
	assert.Equal(t, filepath.Join(home, ".openctl/state"), cfg.State.Dir)
	assert.Equal(t, "postgres://openctl:"+dsnPass+"@db.example:5432/openctl", cfg.State.DSN.Reveal())
	assert.Equal(t, 8, cfg.Concurrency())
}

func TestSaveRoundTrip(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	cfg, _, err := config.LoadEnv(writeConfig(t, dir, fullExample, 0o600), envOf(home))
	require.NoError(t, err)

	// Save into a directory that does not exist yet.
	saved := filepath.Join(dir, "new", "dir", "config.yaml")
	cfg.Path = saved
	require.NoError(t, cfg.Save())
	st, err := os.Stat(saved)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	st, err = os.Stat(filepath.Dir(saved))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	entries, err := os.ReadDir(filepath.Dir(saved))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left behind")

	data, err := os.ReadFile(saved)
	require.NoError(t, err)
	text := string(data)
	assert.Contains(t, text, "tokenSecret: "+labSecret, "secrets are written as they are")
	assert.Contains(t, text, dsnPass)
	assert.Contains(t, text, "tokenSecretFile: ~/.openctl/secrets/prod.token", "paths as the file wrote them")
	assert.Contains(t, text, "caFile: certs/prod-ca.pem")
	assert.Contains(t, text, "dir: ~/.openctl/state")
	assert.NotContains(t, text, secret.Redacted)

	// The saved file is in another directory: copy the CA path's base
	// along so that relative paths resolve alike.
	again, warnings, err := config.LoadEnv(saved, envOf(home))
	require.NoError(t, err)
	assert.Empty(t, warnings)
	assert.Equal(t, saved, again.Path)
	cfg.Providers["proxmox"].Contexts["prod"].CAFile = filepath.Join(filepath.Dir(saved), "certs/prod-ca.pem")
	assertSameConfig(t, cfg, again)

	// Saving again over an existing file replaces it atomically, 0600
	// even if it was looser.
	require.NoError(t, os.Chmod(saved, 0o644))
	require.NoError(t, again.UseContext("proxmox", "prod"))
	require.NoError(t, again.Save())
	st, err = os.Stat(saved)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	third, _, err := config.LoadEnv(saved, envOf(home))
	require.NoError(t, err)
	assert.Equal(t, "prod", third.Providers["proxmox"].DefaultContext)
}

// assertSameConfig compares the values of two configurations.
func assertSameConfig(t *testing.T, want, got *config.Config) {
	t.Helper()
	assert.Equal(t, want.Providers, got.Providers)
	assert.Equal(t, want.State.Backend, got.State.Backend)
	assert.Equal(t, want.State.Dir, got.State.Dir)
	assert.True(t, want.State.DSN.Equal(got.State.DSN), "dsn")
	assert.Equal(t, want.Apply, got.Apply)
}

func TestSaveFollowsSymlink(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	real := writeConfig(t, dir, "apply:\n  concurrency: 2\n", 0o600)
	link := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.Symlink(real, link))
	cfg, _, err := config.LoadEnv(link, envOf(home))
	require.NoError(t, err)
	cfg.Apply.Concurrency = 3
	require.NoError(t, cfg.Save())
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode()&os.ModeSymlink, "the link stays a link")
	data, err := os.ReadFile(real)
	require.NoError(t, err)
	assert.Contains(t, string(data), "concurrency: 3")
}

func TestSaveToDefaultPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv("OPENCTL_CONFIG", "")
	t.Setenv("OPENCTL_HOME", filepath.Join(home, "oc"))
	clearOverlayEnv(t)
	cfg, _, err := config.Load("")
	require.NoError(t, err)
	assert.Empty(t, cfg.Path, "no file yet")
	cfg.Providers = map[string]*config.Provider{"proxmox": {Contexts: map[string]*config.Context{"a": {Endpoint: "https://a:8006"}}}}
	require.NoError(t, cfg.Save())
	want := filepath.Join(home, "oc", "config.yaml")
	assert.Equal(t, want, cfg.Path)
	st, err := os.Stat(filepath.Join(home, "oc"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
}

// clearOverlayEnv empties the overlay variables for tests that use the
// process environment.
func clearOverlayEnv(t *testing.T) {
	for _, k := range []string{config.EnvProxmoxURL, config.EnvProxmoxTokenID, config.EnvProxmoxTokenSecret,
		config.EnvProxmoxTokenSecretFile, config.EnvProxmoxFingerprint, config.EnvProxmoxNode,
		config.EnvStateDSN, config.EnvApplyConcurrency} {
		t.Setenv(k, "")
	}
}

func TestLoadMissingFile(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "nope", "config.yaml")
	cfg, warnings, err := config.LoadEnv(path, envOf(home))
	require.NoError(t, err)
	assert.Empty(t, warnings)
	assert.Empty(t, cfg.Path)
	assert.Empty(t, cfg.Providers)
	assert.Nil(t, cfg.Contexts("proxmox"))
	assert.Equal(t, config.DefaultConcurrency, cfg.Concurrency())
	assert.Equal(t, config.BackendFile, cfg.StateBackend())

	_, err = cfg.Proxmox("")
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Invalid))
	for _, s := range []string{path + " does not exist", "providers.proxmox", "OPENCTL_PROXMOX_URL", "OPENCTL_PROXMOX_TOKEN_ID", "OPENCTL_PROXMOX_TOKEN_SECRET", "--sandbox"} {
		assert.Contains(t, err.Error(), s)
	}
}

func TestLoadEmptyFile(t *testing.T) {
	for _, content := range []string{"", "# only a comment\n", "---\n", "~\n"} {
		home := t.TempDir()
		cfg, _, err := config.LoadEnv(writeConfig(t, home, content, 0o600), envOf(home))
		require.NoError(t, err, "%q", content)
		assert.Empty(t, cfg.Providers)
	}
}

func TestDefaultPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("OPENCTL_CONFIG", "")
	t.Setenv("OPENCTL_HOME", "")
	p, err := config.DefaultPath()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, ".openctl", "config.yaml"), p)

	t.Setenv("OPENCTL_HOME", "/opt/oc")
	p, err = config.DefaultPath()
	require.NoError(t, err)
	assert.Equal(t, "/opt/oc/config.yaml", p)

	t.Setenv("OPENCTL_CONFIG", "~/elsewhere.yaml")
	p, err = config.DefaultPath()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, "elsewhere.yaml"), p)
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		line    int
		field   string
		msg     string // part of the message
	}{
		{"unknown field", "providers:\n  proxmox:\n    contexts:\n      lab:\n        endpont: https://x\n", 5, "providers.proxmox.contexts.lab.endpont", "unknown field (known: endpoint, node, credentials, fingerprint, caFile, insecureSkipVerify)"},
		{"unknown top-level", "provider:\n  proxmox: {}\n", 1, "provider", "unknown field (known: providers, state, apply)"},
		{"case suggestion", "providers:\n  proxmox:\n    credentials:\n      a:\n        tokenID: x\n", 5, "providers.proxmox.credentials.a.tokenID", `did you mean "tokenId"?`},
		{"dash suggestion", "providers:\n  proxmox:\n    defaultContext: lab\n", 3, "providers.proxmox.defaultContext", `did you mean "default-context"?`},
		{"bool", "providers:\n  proxmox:\n    contexts:\n      lab:\n        insecureSkipVerify: \"yes\"\n", 5, "providers.proxmox.contexts.lab.insecureSkipVerify", "want true or false, got a string"},
		{"int", "apply:\n  concurrency: eight\n", 2, "apply.concurrency", "want an integer, got a string"},
		{"float", "apply:\n  concurrency: 1.5\n", 2, "apply.concurrency", "want an integer, got a number"},
		{"list for map", "providers:\n  proxmox:\n    contexts:\n      - lab\n", 4, "providers.proxmox.contexts", "want a map of names, got a list"},
		{"map for string", "providers:\n  proxmox:\n    contexts:\n      lab:\n        endpoint: {url: x}\n", 5, "providers.proxmox.contexts.lab.endpoint", "want a string, got a map"},
		{"scalar for struct", "state: file\n", 1, "state", "want a map with the fields backend, dir, dsn, got a string"},
		{"duplicate", "apply:\n  concurrency: 1\n  concurrency: 2\n", 3, "apply.concurrency", "set twice (first at line 2)"},
		{"duplicate context", "providers:\n  proxmox:\n    contexts:\n      lab: {}\n      lab: {}\n", 5, "providers.proxmox.contexts.lab", "set twice"},
		{"backend", "state:\n  backend: mysql\n", 2, "state.backend", `want file or postgres, got "mysql"`},
		{"negative concurrency", "apply:\n  concurrency: -1\n", 2, "apply.concurrency", "must not be negative"},
		{"merge key", "base: &b {concurrency: 1}\napply:\n  <<: *b\n", 1, "base", "unknown field"},
		{"syntax", "apply:\n  concurrency: 1\n bad\n", 2, "", "not valid YAML"},
		{"two documents", "apply: {}\n---\napply: {}\n", 2, "", "more than one YAML document"},
		{"redacted placeholder", "state:\n  dsn: '[redacted]'\n", 2, "state.dsn", "holds the placeholder [redacted], not a secret"},
		{"dotted key", "providers:\n  proxmox:\n    contexts:\n      a.b:\n        x: 1\n", 5, `providers.proxmox.contexts["a.b"].x`, "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeConfig(t, dir, tt.content, 0o600)
			_, _, err := config.LoadEnv(path, envOf(dir))
			require.Error(t, err)
			assert.True(t, errors.Is(err, errcode.Invalid))
			assert.Equal(t, errcode.Invalid, errcode.Of(err))
			errs := config.Errors(err)
			require.NotEmpty(t, errs)
			e := errs[0]
			assert.Equal(t, path, e.File)
			assert.Equal(t, tt.line, e.Line)
			assert.Equal(t, tt.field, e.Field)
			assert.Contains(t, e.Msg, tt.msg)
			prefix := fmt.Sprintf("%s:%d:", path, tt.line)
			assert.True(t, strings.HasPrefix(err.Error(), prefix), "%q starts with %q", err.Error(), prefix)
			if tt.field != "" {
				assert.Contains(t, err.Error(), tt.field+": ")
			}
		})
	}
}

func TestLoadReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, dir, "apply:\n  concurrency: x\n  speed: 2\nstate:\n  dri: /x\n", 0o600)
	_, _, err := config.LoadEnv(path, envOf(dir))
	errs := config.Errors(err)
	require.Len(t, errs, 3)
	assert.Equal(t, []int{2, 3, 5}, []int{errs[0].Line, errs[1].Line, errs[2].Line})
}

func TestLoadMergeKeyMessage(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, dir, "apply:\n  <<: {concurrency: 1}\n", 0o600)
	_, _, err := config.LoadEnv(path, envOf(dir))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "merge keys (<<) are not supported")
}

func TestLoadAliases(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, dir, `providers:
  proxmox:
    contexts:
      a: &ctx {endpoint: https://a:8006, credentials: t}
      b: *ctx
`, 0o600)
	cfg, _, err := config.LoadEnv(path, envOf(dir))
	require.NoError(t, err)
	assert.Equal(t, "https://a:8006", cfg.Providers["proxmox"].Contexts["b"].Endpoint)
	cfg.Providers["proxmox"].Contexts["b"].Endpoint = "https://b:8006"
	assert.Equal(t, "https://a:8006", cfg.Providers["proxmox"].Contexts["a"].Endpoint, "aliases are copies")
}

func TestLoadUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	dir := t.TempDir()
	path := writeConfig(t, dir, "apply: {}\n", 0o000)
	_, _, err := config.LoadEnv(path, envOf(dir))
	require.Error(t, err)
	assert.True(t, errors.Is(err, os.ErrPermission))
	assert.Contains(t, err.Error(), path)

	_, _, err = config.LoadEnv(dir, envOf(dir))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is a directory")
}

func TestTildeExpansion(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	path := writeConfig(t, dir, `providers:
  proxmox:
    contexts:
      a: {endpoint: "https://a:8006", credentials: t, caFile: "~/ca.pem"}
      b: {endpoint: "https://b:8006", credentials: t, caFile: /abs/ca.pem}
      c: {endpoint: "https://c:8006", credentials: t, caFile: "~other/ca.pem"}
    credentials:
      t: {tokenId: "root@pam!ci", tokenSecretFile: "~/secrets/t.token"}
state:
  dir: rel/state
`, 0o600)
	cfg, _, err := config.LoadEnv(path, envOf(home))
	require.NoError(t, err)
	p := cfg.Providers["proxmox"]
	assert.Equal(t, filepath.Join(home, "ca.pem"), p.Contexts["a"].CAFile)
	assert.Equal(t, "/abs/ca.pem", p.Contexts["b"].CAFile)
	assert.Equal(t, "~other/ca.pem", p.Contexts["c"].CAFile, "only ~/ is expanded")
	assert.Equal(t, filepath.Join(home, "secrets/t.token"), p.Credentials["t"].TokenSecretFile)
	assert.Equal(t, filepath.Join(dir, "rel/state"), cfg.State.Dir)
	dirOut, err := cfg.StateDir()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "rel/state"), dirOut)

	pc, err := cfg.Proxmox("a")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, "secrets/t.token"), pc.Contexts["a"].TokenSecretFile)

	// Save writes what the file said, except where the program changed it.
	p.Contexts["b"].CAFile = "/new/ca.pem"
	require.NoError(t, cfg.Save())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	text := string(data)
	assert.Contains(t, text, "caFile: ~/ca.pem")
	assert.Contains(t, text, "caFile: /new/ca.pem")
	assert.Contains(t, text, "tokenSecretFile: ~/secrets/t.token")
	assert.Contains(t, text, "dir: rel/state")
}

func TestModeWarnings(t *testing.T) {
	withSecret := "providers:\n  proxmox:\n    credentials:\n      t:\n        tokenId: root@pam!x\n        tokenSecret: " + labSecret + "\n"
	withFile := "providers:\n  proxmox:\n    credentials:\n      t:\n        tokenId: root@pam!x\n        tokenSecretFile: /run/secrets/t\n"
	withDSN := "state:\n  dsn: postgres://openctl:" + dsnPass + "@db:5432/openctl\n"
	withDSNNoPass := "state:\n  dsn: postgres://openctl@db:5432/openctl\n"
	withKVDSN := "state:\n  dsn: host=db user=openctl password=" + dsnPass + "\n"
	tests := []struct {
		name    string
		content string
		mode    os.FileMode
		want    []string // parts of the one warning; nil for none
	}{
		{"secret 0644", withSecret, 0o644, []string{"holds secrets (tokenSecret)", "readable by group and others", "mode 0644", "chmod 600"}},
		{"secret 0640", withSecret, 0o640, []string{"readable by group", "mode 0640"}},
		{"secret 0600", withSecret, 0o600, nil},
		{"secret 0400", withSecret, 0o400, nil},
		{"secret file only 0644", withFile, 0o644, nil},
		{"dsn 0644", withDSN, 0o644, []string{"holds secrets (dsn)"}},
		{"key=value dsn 0644", withKVDSN, 0o644, []string{"holds secrets (dsn)"}},
		{"dsn without password 0644", withDSNNoPass, 0o644, nil},
		{"writable by others", withFile, 0o666, []string{"writable by group and others", "chmod 600"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeConfig(t, dir, tt.content, tt.mode)
			_, warnings, err := config.LoadEnv(path, envOf(dir))
			require.NoError(t, err)
			if tt.want == nil {
				assert.Empty(t, warnings)
				return
			}
			require.Len(t, warnings, 1)
			w := warnings[0].String()
			assert.Contains(t, w, path)
			for _, s := range tt.want {
				assert.Contains(t, w, s)
			}
			requireNoSecret(t, w)
		})
	}
}

func TestSecretsNeverShown(t *testing.T) {
	// Secrets in the wrong places: the errors describe, never quote.
	for _, content := range []string{
		"apply:\n  concurrency: " + labSecret + "\n",
		"providers:\n  proxmox:\n    credentials:\n      t:\n        tokenSecret: [" + labSecret + "]\n",
		"providers:\n  proxmox:\n    contexts:\n      a:\n        insecureSkipVerify: " + labSecret + "\n",
		"state:\n  dsn: {url: postgres://u:" + dsnPass + "@h/db}\n",
		"state:\n  backend: [" + dsnPass + "]\n",
	} {
		dir := t.TempDir()
		path := writeConfig(t, dir, content, 0o644)
		_, warnings, err := config.LoadEnv(path, envOf(dir))
		require.Error(t, err, content)
		requireNoSecret(t, fmt.Sprintf("%v %+v %#v %s", err, err, err, err))
		requireNoSecret(t, fmt.Sprint(warnings))
	}

	// A valid file: Redacted hides every secret, in YAML and fmt output.
	dir := t.TempDir()
	cfg, warnings, err := config.LoadEnv(writeConfig(t, dir, fullExample, 0o644), envOf(dir))
	require.NoError(t, err)
	require.NotEmpty(t, warnings)
	requireNoSecret(t, fmt.Sprint(warnings))
	requireNoSecret(t, fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg))
	red := cfg.Redacted()
	out, err := yaml.Marshal(red)
	require.NoError(t, err)
	requireNoSecret(t, string(out))
	requireNoSecret(t, fmt.Sprintf("%v %+v %#v", red, red, red))
	assert.Contains(t, string(out), "tokenSecret: '[redacted]'")
	assert.Contains(t, string(out), "dsn: '[redacted]'")
	assert.Equal(t, secret.Redacted, red.Providers["proxmox"].Credentials["lab-token"].TokenSecret.Reveal())
	assert.True(t, red.Providers["proxmox"].Credentials["prod-token"].TokenSecret.IsZero(), "an absent secret stays absent")
	assert.Equal(t, labSecret, cfg.Providers["proxmox"].Credentials["lab-token"].TokenSecret.Reveal(), "the original keeps its secrets")

	// Save refuses the redacted copy.
	err = red.Save()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Redacted")

	// A token secret proxmox.Validate rejects is not quoted either.
	bad := strings.Replace(fullExample, `tokenSecret: "`+labSecret+`"`, `tokenSecret: "`+labSecret+` x"`, 1)
	cfg, _, err = config.LoadEnv(writeConfig(t, t.TempDir(), bad, 0o600), envOf(dir))
	require.NoError(t, err)
	_, err = cfg.Proxmox("")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tokenSecret")
	requireNoSecret(t, fmt.Sprintf("%v %+v", err, err))
}
