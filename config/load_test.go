package config_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/internal/testenv"
	"github.com/openctl/openctl/secret"
)

func TestLoadFullExample(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	path := writeConfig(t, dir, fullExample, 0o600)

	cfg, warnings, err := config.LoadEnv(path, envOf(home))
	require.NoError(t, err)
	assert.Empty(t, warnings)
	assert.Equal(t, path, cfg.Path)
	assert.Equal(t, []string{"files", "other"}, cfg.ProviderNames())
	assert.Equal(t, 8, cfg.Concurrency())
	dsn, err := cfg.StateDSN()
	require.NoError(t, err)
	assert.Equal(t, "postgres://openctl:"+dsnPass+"@db.example:5432/openctl", dsn)

	sec := cfg.Section("files")
	assert.Equal(t, "files", sec.Name())
	assert.Equal(t, "providers.files", sec.Path())
	assert.Equal(t, path, sec.File())
	assert.Equal(t, path+": providers.files", sec.Describe())
	assert.False(t, sec.IsEmpty())

	var fc filesConfig
	require.NoError(t, sec.Decode(&fc))
	assert.Equal(t, filesConfig{
		DefaultContext: "lab",
		Contexts: map[string]*filesContext{
			"lab": {
				Endpoint: "https://files.lab:8443", Root: filepath.Join(home, "files/lab"), Credentials: "lab-user",
				Retries: 3, Labels: map[string]string{"team": "infra"},
			},
			"prod": {Endpoint: "https://files.prod:8443", Root: filepath.Join(dir, "data/prod"), Credentials: "prod-user", ReadOnly: true},
		},
		Credentials: map[string]*filesCredentials{
			"lab-user":  {User: "ann", Password: secret.New(labSecret)},
			"prod-user": {User: "ci", PasswordFile: filepath.Join(home, ".openctl/secrets/prod.pw")},
		},
		Defaults: filesDefaults{Mode: "0644"},
	}, fc)

	// A provider the file has no section for.
	none := cfg.Section("vsphere")
	assert.True(t, none.IsEmpty())
	assert.Equal(t, path+" has no providers.vsphere", none.Describe())
	assert.Equal(t, path, none.File())
	fc = filesConfig{DefaultContext: "kept"}
	require.NoError(t, none.Decode(&fc))
	assert.Equal(t, filesConfig{DefaultContext: "kept"}, fc, "an empty section leaves the value as it is")
}

func TestLoadMissingFile(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "nope", "config.yaml")
	cfg, warnings, err := config.LoadEnv(path, envOf(home))
	require.NoError(t, err)
	assert.Empty(t, warnings)
	assert.Empty(t, cfg.Path)
	assert.Empty(t, cfg.ProviderNames())
	assert.Equal(t, config.DefaultConcurrency, cfg.Concurrency())
	dsn, err := cfg.StateDSN()
	require.NoError(t, err)
	assert.Equal(t, "file:"+filepath.Join(home, ".openctl")+"/state", dsn)

	sec := cfg.Section("files")
	assert.True(t, sec.IsEmpty())
	assert.Empty(t, sec.File(), "no file exists")
	assert.Equal(t, path+" does not exist", sec.Describe())
	var fc filesConfig
	require.NoError(t, sec.Decode(&fc))
	assert.Zero(t, fc)
}

func TestLoadEmptyFile(t *testing.T) {
	for _, content := range []string{"", "# only a comment\n", "---\n", "~\n", "providers: {}\n", "providers:\n  files:\n"} {
		t.Run(fmt.Sprintf("%q", content), func(t *testing.T) {
			home := t.TempDir()
			path := writeConfig(t, home, content, 0o600)
			cfg, warnings, err := config.LoadEnv(path, envOf(home))
			require.NoError(t, err)
			assert.Empty(t, warnings)
			assert.Equal(t, path, cfg.Path, "the file exists")
			assert.True(t, cfg.Section("files").IsEmpty())
			assert.Equal(t, config.DefaultConcurrency, cfg.Concurrency())
		})
	}
}

func TestDefaultPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	tests := []struct {
		name, config, ochome, want string
	}{
		{"home", "", "", filepath.Join(home, ".openctl", "config.yaml")},
		{"OPENCTL_HOME", "", "/opt/oc", "/opt/oc/config.yaml"},
		{"OPENCTL_HOME with ~", "", "~/oc", filepath.Join(home, "oc", "config.yaml")},
		{"OPENCTL_CONFIG wins", "~/elsewhere.yaml", "/opt/oc", filepath.Join(home, "elsewhere.yaml")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(config.EnvConfig, tt.config)
			t.Setenv(config.EnvHome, tt.ochome)
			p, err := config.DefaultPath()
			require.NoError(t, err)
			assert.Equal(t, tt.want, p)
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		line    int
		column  int // 0: not checked
		field   string
		msg     string // part of the message
	}{
		{"unknown top-level", "provider:\n  files: {}\n", 1, 1, "provider", "unknown field (known: providers, state, apply, plugins)"},
		{"case suggestion", "apply:\n  Concurrency: 2\n", 2, 3, "apply.Concurrency", `unknown field (did you mean "concurrency"?) (known: concurrency)`},
		{"unknown state field", "state:\n  dns: file:/x\n", 2, 3, "state.dns", "unknown field (known: dsn, backend, dir)"},
		{"int", "apply:\n  concurrency: eight\n", 2, 16, "apply.concurrency", "want an integer, got a string"},
		{"float", "apply:\n  concurrency: 1.5\n", 2, 16, "apply.concurrency", "want an integer, got a number"},
		{"bool for int", "apply:\n  concurrency: true\n", 2, 16, "apply.concurrency", "want an integer, got a boolean"},
		{"too large", "apply:\n  concurrency: 99999999999999999999999\n", 2, 16, "apply.concurrency", "want an integer, got a number"},
		{"scalar for struct", "state: file\n", 1, 8, "state", "want a map with the fields dsn, backend, dir, got a string"},
		{"list for the file", "- 1\n- 2\n", 1, 1, "", "want a map with the fields providers, state, apply, plugins, got a list"},
		{"list for providers", "providers:\n  - files\n", 2, 3, "providers", "want a map of names, got a list"},
		{"provider not a map", "providers:\n  files: [a]\n", 2, 10, "providers.files", "want a map"},
		{"map for string", "state:\n  dsn: {url: x}\n", 2, 8, "state.dsn", "want a string, got a map"},
		{"duplicate", "apply:\n  concurrency: 1\n  concurrency: 2\n", 3, 3, "apply.concurrency", "set twice (first at line 2)"},
		{"duplicate provider", "providers:\n  files: {}\n  files: {}\n", 3, 3, "providers.files", "set twice (first at line 2)"},
		{"negative concurrency", "apply:\n  concurrency: -1\n", 2, 3, "apply.concurrency", "must not be negative"},
		{"merge key", "apply:\n  <<: {concurrency: 1}\n", 2, 3, "apply", "merge keys (<<) are not supported"},
		{"syntax", "apply:\n  concurrency: 1\n bad\n", 2, 0, "", "not valid YAML"},
		{"tab", "apply:\n\tconcurrency: 1\n", 2, 0, "", "not valid YAML"},
		{"two documents", "apply: {}\n---\napply: {}\n", 2, 0, "", "more than one YAML document"},
		{"redacted placeholder", "state:\n  dsn: '[redacted]'\n", 2, 8, "state.dsn", "holds the placeholder [redacted], not a secret"},
		{"dotted key", "providers:\n  a.b: [x]\n", 2, 8, `providers["a.b"]`, "want a map"},
		{"legacy backend", "state:\n  backend: mysql\n", 2, 3, "state.backend", `want file or postgres, got "mysql"`},
		{"legacy postgres without dsn", "state:\n  backend: postgres\n", 1, 1, "state.dsn", "required with backend postgres"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeConfig(t, dir, tt.content, 0o600)
			cfg, _, err := config.LoadEnv(path, envOf(dir))
			require.Error(t, err)
			assert.Nil(t, cfg)
			assert.True(t, errors.Is(err, errcode.Invalid))
			assert.Equal(t, errcode.Invalid, errcode.Of(err))
			errs := config.Errors(err)
			require.NotEmpty(t, errs)
			e := errs[0]
			assert.Equal(t, path, e.File)
			assert.Equal(t, tt.line, e.Line)
			if tt.column > 0 {
				assert.Equal(t, tt.column, e.Column)
			}
			assert.Equal(t, tt.field, e.Field)
			assert.Contains(t, e.Msg, tt.msg)
			prefix := fmt.Sprintf("%s:%d:", path, tt.line)
			if tt.column > 0 {
				prefix += fmt.Sprintf("%d:", tt.column)
			}
			if tt.field != "" {
				prefix += " " + tt.field + ":"
			}
			assert.True(t, strings.HasPrefix(err.Error(), prefix), "%q starts with %q", err.Error(), prefix)
		})
	}
}

func TestLoadErrorFormat(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, dir, "apply:\n  Concurrency: 2\n", 0o600)
	_, _, err := config.LoadEnv(path, envOf(dir))
	require.Error(t, err)
	assert.Equal(t, path+`:2:3: apply.Concurrency: unknown field (did you mean "concurrency"?) (known: concurrency)`, err.Error())
	var e *errcode.InputError
	require.True(t, errors.As(err, &e))
	assert.Equal(t, errcode.InputError{Input: "config", File: path, Line: 2, Column: 3, Field: "apply.Concurrency", Msg: `unknown field (did you mean "concurrency"?) (known: concurrency)`}, *e)
}

func TestLoadReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, dir, "state:\n  dri: /x\napply:\n  speed: 2\n  concurrency: x\n", 0o600)
	_, _, err := config.LoadEnv(path, envOf(dir))
	require.Error(t, err)
	errs := config.Errors(err)
	require.Len(t, errs, 3)
	var lines []int
	for _, e := range errs {
		lines = append(lines, e.Line)
		assert.True(t, errors.Is(e, errcode.Invalid))
	}
	assert.Equal(t, []int{2, 4, 5}, lines, "sorted by line")
	assert.Equal(t, []string{"state.dri", "apply.speed", "apply.concurrency"}, []string{errs[0].Field, errs[1].Field, errs[2].Field})
}

func TestLoadManyProblemsSummarised(t *testing.T) {
	var b strings.Builder
	b.WriteString("apply:\n")
	for i := range 60 {
		fmt.Fprintf(&b, "  k%d: 1\n", i)
	}
	dir := t.TempDir()
	_, _, err := config.LoadEnv(writeConfig(t, dir, b.String(), 0o600), envOf(dir))
	require.Error(t, err)
	errs := config.Errors(err)
	require.Len(t, errs, 51)
	assert.Equal(t, "apply.k0", errs[0].Field)
	assert.Contains(t, errs[50].Msg, "... and 10 more problems")
}

func TestLoadTooLarge(t *testing.T) {
	dir := t.TempDir()
	big := "# " + strings.Repeat("x", 4<<20) + "\n"
	path := writeConfig(t, dir, big, 0o600)
	_, _, err := config.LoadEnv(path, envOf(dir))
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Invalid))
	assert.Equal(t, path+": larger than 4 MiB: not a configuration file", err.Error())
}

func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	_, _, err := config.LoadEnv(dir, envOf(dir))
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Invalid))
	assert.Equal(t, dir+": is a directory, not a configuration file", err.Error())
}

func TestLoadUnreadable(t *testing.T) {
	// Root reads files whatever their mode: as root the check runs in a
	// child process as nobody.
	testenv.RunUnprivileged(t, func(t *testing.T) {
		dir := t.TempDir()
		path := writeConfig(t, dir, "apply: {}\n", 0o000)
		_, _, err := config.LoadEnv(path, envOf(dir))
		require.Error(t, err)
		assert.True(t, errors.Is(err, fs.ErrPermission))
		assert.True(t, errors.Is(err, errcode.Invalid))
		assert.True(t, strings.HasPrefix(err.Error(), path+": cannot read the configuration: "), err.Error())
	})
}

func TestLoadAliases(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, dir, `providers:
  files:
    contexts:
      a: &ctx {endpoint: https://a:8443, credentials: t}
      b: *ctx
apply: &apply
  concurrency: 3
`, 0o600)
	cfg, _, err := config.LoadEnv(path, envOf(dir))
	require.NoError(t, err)
	assert.Equal(t, 3, cfg.Concurrency())
	var fc filesConfig
	require.NoError(t, cfg.Section("files").Decode(&fc))
	assert.Equal(t, "https://a:8443", fc.Contexts["b"].Endpoint)
	fc.Contexts["b"].Endpoint = "https://b:8443"
	assert.Equal(t, "https://a:8443", fc.Contexts["a"].Endpoint, "aliases are copies")
}

func TestModeWarnings(t *testing.T) {
	section := func(kv string) string {
		return "providers:\n  files:\n    credentials:\n      t:\n        user: ann\n        " + kv + "\n"
	}
	withSecret := section("password: " + labSecret)
	withFile := section("passwordFile: /run/secrets/t")
	tests := []struct {
		name    string
		content string
		mode    os.FileMode
		want    [][]string // parts of each warning, in order
	}{
		{"secret 0644", withSecret, 0o644, [][]string{{"holds secrets (password)", "readable by group and others", "mode 0644", "chmod 600"}}},
		{"secret 0640", withSecret, 0o640, [][]string{{"holds secrets (password)", "readable by group (mode 0640)"}}},
		{"secret 0604", withSecret, 0o604, [][]string{{"readable by others (mode 0604)"}}},
		{"secret 0600", withSecret, 0o600, nil},
		{"secret 0400", withSecret, 0o400, nil},
		{"secret 0611", withSecret, 0o611, nil},
		{"secret file only 0644", withFile, 0o644, nil},
		{"empty secret 0644", section(`password: ""`), 0o644, nil},
		{"null secret 0644", section("password: ~"), 0o644, nil},
		{"token key 0644", section("apiToken: " + labSecret), 0o644, [][]string{{"holds secrets (apiToken)"}}},
		{"tokenSecret key 0644", section("tokenSecret: " + labSecret), 0o644, [][]string{{"holds secrets (tokenSecret)"}}},
		{"several secrets", "providers:\n  a:\n    password: " + labSecret + "\n  b:\n    list:\n      - apiKey: " + labSecret + "\n      - password: x\nstate:\n  dsn: postgres://u:" + dsnPass + "@db/x\n", 0o644,
			[][]string{{"holds secrets (password, apiKey, dsn)"}}},
		{"dsn 0644", "state:\n  dsn: postgres://openctl:" + dsnPass + "@db:5432/openctl\n", 0o644, [][]string{{"holds secrets (dsn)"}}},
		{"dsn password parameter 0644", "state:\n  dsn: postgres://db/openctl?password=" + dsnPass + "\n", 0o644, [][]string{{"holds secrets (dsn)"}}},
		{"key=value dsn 0644", "state:\n  dsn: host=db user=openctl password=" + dsnPass + "\n", 0o644, [][]string{{"holds secrets (dsn)"}}},
		{"dsn without password 0644", "state:\n  dsn: postgres://openctl@db:5432/openctl\n", 0o644, nil},
		{"file dsn 0644", "state:\n  dsn: file:/var/lib/openctl\n", 0o644, nil},
		{"writable by others", withFile, 0o666, [][]string{{"writable by group and others (mode 0666)", "chmod 600"}}},
		{"writable by group", withFile, 0o620, [][]string{{"writable by group (mode 0620)"}}},
		{"secret and writable", withSecret, 0o664, [][]string{{"holds secrets (password)", "readable by group and others"}, {"writable by group (mode 0664)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeConfig(t, dir, tt.content, tt.mode)
			_, warnings, err := config.LoadEnv(path, envOf(dir))
			require.NoError(t, err)
			require.Len(t, warnings, len(tt.want), "%q", warnings)
			for i, parts := range tt.want {
				w := warnings[i].String()
				assert.True(t, strings.HasPrefix(w, path+" "), w)
				for _, s := range parts {
					assert.Contains(t, w, s)
				}
				requireNoSecret(t, w)
			}
		})
	}
}

func TestSecretsNeverShown(t *testing.T) {
	// Secrets in the wrong places: the errors describe, never quote.
	for i, content := range []string{
		"apply:\n  concurrency: " + labSecret + "\n",
		"state:\n  dsn: {url: postgres://u:" + dsnPass + "@h/db}\n",
		"state:\n  dsn: [" + dsnPass + "]\n",
		"state:\n  backend: [" + dsnPass + "]\n",
		"providers:\n  files: " + labSecret + "\n",
		"apply: {concurrency: 1}\nstate: {dsn: postgres://u:" + dsnPass + "@h/db}\n---\nx: 1\n",
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) { // the name must not hold the secret: TempDir uses it
			dir := t.TempDir()
			path := writeConfig(t, dir, content, 0o644)
			_, warnings, err := config.LoadEnv(path, envOf(dir))
			require.Error(t, err)
			requireNoSecret(t, fmt.Sprintf("%v %+v %#v %s", err, err, err, err))
			requireNoSecret(t, fmt.Sprint(warnings))
		})
	}

	// A valid file: the Config prints no secret.
	dir := t.TempDir()
	cfg, warnings, err := config.LoadEnv(writeConfig(t, dir, fullExample, 0o644), envOf(dir))
	require.NoError(t, err)
	require.NotEmpty(t, warnings)
	requireNoSecret(t, fmt.Sprint(warnings))
	requireNoSecret(t, fmt.Sprintf("%v %+v", cfg.State, cfg.State))
}

func TestLegacyStateLayout(t *testing.T) {
	const pg = "postgres://openctl@db.example:5432/openctl"
	tests := []struct {
		name    string
		state   string
		wantDSN func(home, dir string) string
	}{
		{"file backend and dir", "  backend: file\n  dir: ~/st\n", func(home, _ string) string { return "file:" + filepath.Join(home, "st") }},
		{"dir alone", "  dir: rel/state\n", func(_, dir string) string { return "file:" + filepath.Join(dir, "rel/state") }},
		{"absolute dir", "  dir: /var/lib/openctl\n", func(string, string) string { return "file:/var/lib/openctl" }},
		{"file backend alone", "  backend: file\n", func(home, _ string) string { return "file:" + filepath.Join(home, ".openctl") + "/state" }},
		{"postgres backend", "  backend: postgres\n  dsn: " + pg + "\n", func(string, string) string { return pg }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, dir := t.TempDir(), t.TempDir()
			path := writeConfig(t, dir, "state:\n"+tt.state, 0o600)
			cfg, warnings, err := config.LoadEnv(path, envOf(home))
			require.NoError(t, err)
			require.Len(t, warnings, 1)
			assert.Equal(t, path+": state.backend and state.dir are the old layout: write the store as one DSN, state.dsn: file:DIR or postgres://...", warnings[0].String())
			dsn, err := cfg.StateDSN()
			require.NoError(t, err)
			assert.Equal(t, tt.wantDSN(home, dir), dsn)
		})
	}
}

// TestLegacyStateFileBackendWithDSN: before DSNs, "backend: file" chose
// the file store even when a dsn was also written (it was only read by
// the postgres backend). The conversion must keep the state where it was.
func TestLegacyStateFileBackendWithDSN(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	path := writeConfig(t, dir, "state:\n  backend: file\n  dir: ~/st\n  dsn: postgres://openctl@db.example:5432/openctl\n", 0o600)
	cfg, warnings, err := config.LoadEnv(path, envOf(home))
	require.NoError(t, err)
	assert.Len(t, warnings, 1)
	dsn, err := cfg.StateDSN()
	require.NoError(t, err)
	assert.Equal(t, "file:"+filepath.Join(home, "st"), dsn, "backend: file wins, as it did")
}

func TestStateDSN(t *testing.T) {
	tests := []struct {
		name string
		dsn  string // state.dsn in the file
		env  []string
		want func(home, dir string) string
	}{
		{"default", "", nil, func(home, _ string) string { return "file:" + filepath.Join(home, ".openctl") + "/state" }},
		{"OPENCTL_HOME", "", []string{config.EnvHome, "/opt/oc"}, func(string, string) string { return "file:/opt/oc/state" }},
		{"OPENCTL_HOME with ~", "", []string{config.EnvHome, "~/oc"}, func(home, _ string) string { return "file:" + filepath.Join(home, "oc") + "/state" }},
		{"file with ~", "file:~/st", nil, func(home, _ string) string { return "file:" + filepath.Join(home, "st") }},
		{"file relative", "file:st", nil, func(_, dir string) string { return "file:" + filepath.Join(dir, "st") }},
		{"file absolute", "file:/var/lib/openctl", nil, func(string, string) string { return "file:/var/lib/openctl" }},
		{"file URL", "file:///var/lib/openctl", nil, func(string, string) string { return "file:/var/lib/openctl" }},
		{"postgres", "postgres://u@db/x", nil, func(string, string) string { return "postgres://u@db/x" }},
		{"key=value", "host=db dbname=x", nil, func(string, string) string { return "host=db dbname=x" }},
		{"file wins over OPENCTL_HOME", "file:/srv/st", []string{config.EnvHome, "/opt/oc"}, func(string, string) string { return "file:/srv/st" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, dir := t.TempDir(), t.TempDir()
			content := ""
			if tt.dsn != "" {
				content = "state:\n  dsn: " + tt.dsn + "\n"
			}
			path := writeConfig(t, dir, content, 0o600)
			cfg, warnings, err := config.LoadEnv(path, envOf(home, tt.env...))
			require.NoError(t, err)
			assert.Empty(t, warnings)
			dsn, err := cfg.StateDSN()
			require.NoError(t, err)
			assert.Equal(t, tt.want(home, dir), dsn)
		})
	}
}

func TestStateDSNWithoutHome(t *testing.T) {
	t.Setenv("HOME", "") // os.UserHomeDir fails
	dir := t.TempDir()
	cfg, _, err := config.LoadEnv(filepath.Join(dir, "config.yaml"), func(string) string { return "" })
	require.NoError(t, err)
	_, err = cfg.StateDSN()
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Invalid))
	assert.Equal(t, "config: no home directory for the state: set state.dsn, OPENCTL_STATE_DSN or OPENCTL_HOME", err.Error())

	// A configuration built in code with a DSN needs no home.
	cfg = &config.Config{State: config.State{DSN: secret.New("file:/srv/st")}}
	dsn, err := cfg.StateDSN()
	require.NoError(t, err)
	assert.Equal(t, "file:/srv/st", dsn)
}

func TestConcurrency(t *testing.T) {
	for _, tt := range []struct{ set, want int }{{0, config.DefaultConcurrency}, {-3, config.DefaultConcurrency}, {1, 1}, {16, 16}} {
		cfg := &config.Config{Apply: config.Apply{Concurrency: tt.set}}
		assert.Equal(t, tt.want, cfg.Concurrency(), "%d", tt.set)
	}
}
