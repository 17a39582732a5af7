package config_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
)

const sectionFile = "/etc/openctl/config.yaml"

func TestSectionDecodeErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		line    int
		column  int
		field   string
		msg     string // the whole message
	}{
		{"unknown field", "contexts:\n  lab:\n    endpont: https://x\n", 3, 5, "providers.files.contexts.lab.endpont",
			"unknown field (known: endpoint, root, credentials, readOnly, retries, labels)"},
		{"unknown top field", "context: {}\n", 1, 1, "providers.files.context",
			"unknown field (known: default-context, contexts, credentials, defaults)"},
		{"case suggestion", "credentials:\n  a:\n    User: ann\n", 3, 5, "providers.files.credentials.a.User",
			`unknown field (did you mean "user"?) (known: user, password, passwordFile)`},
		{"dash suggestion", "defaultContext: lab\n", 1, 1, "providers.files.defaultContext",
			`unknown field (did you mean "default-context"?) (known: default-context, contexts, credentials, defaults)`},
		{"underscore suggestion", "default_context: lab\n", 1, 1, "providers.files.default_context",
			`unknown field (did you mean "default-context"?) (known: default-context, contexts, credentials, defaults)`},
		{"bool", "contexts:\n  lab:\n    readOnly: \"yes\"\n", 3, 15, "providers.files.contexts.lab.readOnly", "want true or false, got a string"},
		{"int", "contexts:\n  lab:\n    retries: 1.5\n", 3, 14, "providers.files.contexts.lab.retries", "want an integer, got a number"},
		{"string gets map", "contexts:\n  lab:\n    endpoint: {url: x}\n", 3, 15, "providers.files.contexts.lab.endpoint", "want a string, got a map"},
		{"string gets list", "default-context: [a]\n", 1, 18, "providers.files.default-context", "want a string, got a list"},
		{"map gets list", "contexts:\n  - lab\n", 2, 3, "providers.files.contexts", "want a map of names, got a list"},
		{"struct gets scalar", "defaults: 0644\n", 1, 11, "providers.files.defaults", "want a map with the fields mode, got an integer"},
		{"section gets list", "- a\n", 1, 1, "providers.files", "want a map with the fields default-context, contexts, credentials, defaults, got a list"},
		{"string map gets map", "contexts:\n  lab:\n    labels: {team: {a: b}}\n", 3, 20, "providers.files.contexts.lab.labels.team", "want a string, got a map"},
		{"duplicate key", "contexts:\n  lab:\n    retries: 1\n    retries: 2\n", 4, 5, "providers.files.contexts.lab.retries", "set twice (first at line 3)"},
		{"duplicate entry", "contexts:\n  lab: {}\n  lab: {}\n", 3, 3, "providers.files.contexts.lab", "set twice (first at line 2)"},
		{"empty name", "contexts:\n  \"\": {}\n", 2, 3, "providers.files.contexts", "a name must not be empty"},
		{"null key", "contexts:\n  ~: {}\n", 2, 3, "providers.files.contexts", "want a name as the key, got null"},
		{"merge key", "contexts:\n  lab:\n    <<: {retries: 1}\n", 3, 5, "providers.files.contexts.lab", "merge keys (<<) are not supported: write the fields out"},
		{"redacted placeholder", "credentials:\n  a:\n    password: '[redacted]'\n", 3, 15, "providers.files.credentials.a.password",
			"holds the placeholder [redacted], not a secret: give the real value"},
		{"secret gets list", "credentials:\n  a:\n    password: [x]\n", 3, 15, "providers.files.credentials.a.password", "want a string, got a list"},
		{"dotted key", "contexts:\n  a.b:\n    x: 1\n", 3, 5, `providers.files.contexts["a.b"].x`, "unknown field (known: endpoint, root, credentials, readOnly, retries, labels)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sec, err := config.NewSection("files", sectionFile, []byte(tt.content))
			require.NoError(t, err)
			var fc filesConfig
			err = sec.Decode(&fc)
			require.Error(t, err)
			assert.True(t, errors.Is(err, errcode.Invalid))
			assert.Equal(t, errcode.Invalid, errcode.Of(err))
			errs := config.Errors(err)
			require.Len(t, errs, 1, "%v", err)
			assert.Equal(t, errcode.InputError{Input: "config", File: sectionFile, Line: tt.line, Column: tt.column, Field: tt.field, Msg: tt.msg}, *errs[0])
			assert.Equal(t, fmt.Sprintf("%s:%d:%d: %s: %s", sectionFile, tt.line, tt.column, tt.field, tt.msg), err.Error())
		})
	}
}

func TestSectionDecodeReportsEveryProblem(t *testing.T) {
	sec, err := config.NewSection("files", sectionFile, []byte("contexts:\n  lab:\n    retries: x\n    port: 1\ndefaults:\n  mode: [a]\n"))
	require.NoError(t, err)
	err = sec.Decode(&filesConfig{})
	errs := config.Errors(err)
	require.Len(t, errs, 3, "%v", err)
	assert.Equal(t, []string{"providers.files.contexts.lab.retries", "providers.files.contexts.lab.port", "providers.files.defaults.mode"},
		[]string{errs[0].Field, errs[1].Field, errs[2].Field})
}

func TestSectionDecodeNeverQuotesValues(t *testing.T) {
	for _, content := range []string{
		"contexts:\n  lab:\n    retries: " + labSecret + "\n",
		"contexts:\n  lab:\n    readOnly: " + labSecret + "\n",
		"credentials:\n  a:\n    password: {v: " + labSecret + "}\n",
		"credentials:\n  a:\n    user: [" + labSecret + "]\n",
	} {
		sec, err := config.NewSection("files", sectionFile, []byte(content))
		require.NoError(t, err)
		err = sec.Decode(&filesConfig{})
		require.Error(t, err, content)
		requireNoSecret(t, fmt.Sprintf("%v %+v %#v", err, err, err))
	}
}

func TestSectionDecodeNotAStruct(t *testing.T) {
	sec, err := config.NewSection("files", sectionFile, []byte("contexts: {}\n"))
	require.NoError(t, err)
	var fc filesConfig
	var nilPtr *filesConfig
	m := map[string]any{}
	for _, v := range []any{fc, nilPtr, &m, nil} {
		err := sec.Decode(v)
		require.Error(t, err, "%T", v)
		assert.True(t, errors.Is(err, errcode.Invalid))
		assert.Contains(t, err.Error(), "want a pointer to a struct")
	}
}

func TestNewSectionSyntaxError(t *testing.T) {
	_, err := config.NewSection("files", sectionFile, []byte("contexts:\n  lab: {\n"))
	require.Error(t, err)
	var e *errcode.InputError
	require.True(t, errors.As(err, &e))
	assert.Equal(t, sectionFile, e.File)
	assert.Contains(t, e.Msg, "not valid YAML")
	assert.True(t, errors.Is(err, errcode.Invalid))
}

func TestSectionPaths(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	const content = `contexts:
  home: {root: "~/files"}
  tilde: {root: "~"}
  abs: {root: /srv/files}
  rel: {root: data/files}
  dotdot: {root: ../files}
  other: {root: "~other/files"}
  empty: {root: ""}
credentials:
  c: {passwordFile: "~/.openctl/c.pw"}
`
	want := map[string]string{
		"home":   filepath.Join(home, "files"),
		"tilde":  home,
		"abs":    "/srv/files",
		"rel":    filepath.Join(dir, "data/files"),
		"dotdot": filepath.Join(filepath.Dir(dir), "files"),
		"other":  "~other/files", // only ~/ is the home directory
		"empty":  "",
	}

	t.Run("loaded", func(t *testing.T) {
		path := writeConfig(t, dir, "providers:\n  files:\n"+indent(content, "    "), 0o600)
		cfg, _, err := config.LoadEnv(path, envOf(home))
		require.NoError(t, err)
		var fc filesConfig
		require.NoError(t, cfg.Section("files").Decode(&fc))
		for name, root := range want {
			assert.Equal(t, root, fc.Contexts[name].Root, name)
		}
		assert.Equal(t, filepath.Join(home, ".openctl/c.pw"), fc.Credentials["c"].PasswordFile)
	})

	t.Run("NewSection", func(t *testing.T) {
		// NewSection knows the file but not the environment Load read:
		// relative paths are relative to the file, ~ is the process's
		// home directory.
		t.Setenv("HOME", home)
		sec, err := config.NewSection("files", filepath.Join(dir, "config.yaml"), []byte(content))
		require.NoError(t, err)
		var fc filesConfig
		require.NoError(t, sec.Decode(&fc))
		assert.Equal(t, filepath.Join(dir, "data/files"), fc.Contexts["rel"].Root)
		assert.Equal(t, "/srv/files", fc.Contexts["abs"].Root)
		assert.Equal(t, filepath.Join(home, "files"), fc.Contexts["home"].Root)
	})

	t.Run("no file", func(t *testing.T) {
		// Without a file a relative path stays relative (to the working
		// directory).
		sec, err := config.NewSection("files", "", []byte(content))
		require.NoError(t, err)
		var fc filesConfig
		require.NoError(t, sec.Decode(&fc))
		assert.Equal(t, "data/files", fc.Contexts["rel"].Root)
	})
}

// indent prefixes each line of s.
func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}

func TestSectionDecodeValues(t *testing.T) {
	sec, err := config.NewSection("files", sectionFile, []byte(`default-context: lab
contexts:
  lab:
    retries: 0x10
    readOnly: false
    labels: {a: "1", b: ""}
  empty:
  "lab.eu": {endpoint: https://eu}
credentials:
  a: {password: s3cret}
  b: {password: ~}
defaults: ~
`))
	require.NoError(t, err)
	fc := filesConfig{Defaults: filesDefaults{Mode: "reset by null"}}
	require.NoError(t, sec.Decode(&fc))
	assert.Equal(t, 16, fc.Contexts["lab"].Retries)
	assert.Equal(t, map[string]string{"a": "1", "b": ""}, fc.Contexts["lab"].Labels)
	require.NotNil(t, fc.Contexts["empty"], `"empty:" is an empty entry, not nil`)
	assert.Zero(t, *fc.Contexts["empty"])
	assert.Equal(t, "https://eu", fc.Contexts["lab.eu"].Endpoint)
	assert.Equal(t, "s3cret", fc.Credentials["a"].Password.Reveal())
	assert.True(t, fc.Credentials["b"].Password.IsZero())
	assert.Zero(t, fc.Defaults, "null is the zero value")
	assert.Equal(t, secret.Redacted, fmt.Sprint(fc.Credentials["a"].Password))
}

func TestSectionErrorf(t *testing.T) {
	sec, err := config.NewSection("files", sectionFile, []byte(`default-context: lab
contexts:
  lab:
    endpoint: https://lab
    credentials: nope
  "lab.eu":
    endpoint: https://eu
`))
	require.NoError(t, err)
	require.NoError(t, sec.Decode(&filesConfig{}))

	tests := []struct {
		name  string
		field string
		want  string
	}{
		{"a field the file has", "contexts.lab.credentials", sectionFile + `:5:5: providers.files.contexts.lab.credentials: "nope" is not defined`},
		{"a field it lacks", "contexts.lab.root", sectionFile + `:3:3: providers.files.contexts.lab.root: "nope" is not defined`},
		{"a quoted key", config.JoinPath("contexts", "lab.eu") + ".credentials", sectionFile + `:6:3: providers.files.contexts["lab.eu"].credentials: "nope" is not defined`},
		{"a top field", config.KeyDefaultContext, sectionFile + `:1:1: providers.files.default-context: "nope" is not defined`},
		{"nothing the file has", "credentials.x", sectionFile + `: providers.files.credentials.x: "nope" is not defined`},
		{"the section", "", sectionFile + `: providers.files: "nope" is not defined`},
		{"an index", `["x"]`, sectionFile + `: providers.files["x"]: "nope" is not defined`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := sec.Errorf(tt.field, "%q is not defined", "nope")
			assert.Equal(t, tt.want, err.Error())
			assert.True(t, errors.Is(err, errcode.Invalid))
			var e *errcode.InputError
			assert.True(t, errors.As(err, &e))
		})
	}
}

func TestJoinPath(t *testing.T) {
	for _, tt := range []struct{ path, key, want string }{
		{"contexts", "lab", "contexts.lab"},
		{"contexts", "lab-1_a", "contexts.lab-1_a"},
		{"contexts", "lab.eu", `contexts["lab.eu"]`},
		{"contexts", "a b", `contexts["a b"]`},
		{"", "lab", "lab"},
	} {
		assert.Equal(t, tt.want, config.JoinPath(tt.path, tt.key))
	}
}

func TestSectionDescribe(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, dir, "providers:\n  files: {}\n  full: {contexts: {a: {}}}\n", 0o600)
	cfg, _, err := config.LoadEnv(path, envOf(dir))
	require.NoError(t, err)
	missing, _, err := config.LoadEnv(filepath.Join(dir, "none.yaml"), envOf(dir))
	require.NoError(t, err)
	fromNew, err := config.NewSection("files", "", []byte("contexts: {a: {}}\n"))
	require.NoError(t, err)
	emptyNew, err := config.NewSection("files", "", nil)
	require.NoError(t, err)

	tests := []struct {
		name     string
		sec      *config.Section
		empty    bool
		file     string
		describe string
	}{
		{"empty section", cfg.Section("files"), true, path, path + ": providers.files"},
		{"full section", cfg.Section("full"), false, path, path + ": providers.full"},
		{"no section", cfg.Section("nope"), true, path, path + " has no providers.nope"},
		{"no file", missing.Section("files"), true, "", filepath.Join(dir, "none.yaml") + " does not exist"},
		{"NewSection without file", fromNew, false, "", "no configuration file"},
		{"NewSection without data", emptyNew, true, "", "no configuration file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.empty, tt.sec.IsEmpty())
			assert.Equal(t, tt.file, tt.sec.File())
			assert.Equal(t, tt.describe, tt.sec.Describe())
		})
	}
}

func TestSectionHome(t *testing.T) {
	home := t.TempDir()
	oc := filepath.Join(home, "oc")
	cfg, _, err := config.LoadEnv(filepath.Join(home, "none.yaml"), envOf(home, config.EnvHome, oc))
	require.NoError(t, err)
	assert.Equal(t, oc, cfg.Section("k3s").Home(), "$OPENCTL_HOME")
	cfg, _, err = config.LoadEnv(filepath.Join(home, "none.yaml"), envOf(home))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, ".openctl"), cfg.Section("k3s").Home(), "else ~/.openctl")
	sec, err := config.NewSection("k3s", "", nil)
	require.NoError(t, err)
	assert.Empty(t, sec.Home())
}
