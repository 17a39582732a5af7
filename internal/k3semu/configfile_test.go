package k3semu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeConfig writes files (name → contents) under dir, creating parents.
func writeConfig(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o600))
	}
}

func TestParseConfigData(t *testing.T) {
	for _, c := range []struct {
		name string
		data string
		want []configEntry
		err  string
	}{
		{name: "empty", data: "", want: []configEntry{}},
		{name: "comment only", data: "# nothing\n", want: []configEntry{}},
		{name: "scalars", data: "token: s3cret\ncluster-init: true\nhttps-listen-port: 7443\nwrite-kubeconfig-mode: \"0644\"\nnode-ip:\n",
			want: []configEntry{
				{Key: "token", Values: []string{"s3cret"}, File: "f"},
				{Key: "cluster-init", Values: []string{"true"}, File: "f"},
				{Key: "https-listen-port", Values: []string{"7443"}, File: "f"},
				{Key: "write-kubeconfig-mode", Values: []string{"0644"}, File: "f"},
				{Key: "node-ip", Values: []string{""}, File: "f"},
			}},
		// YAML 1.1, as k3s parses it: an unquoted 0644 is octal 420.
		{name: "octal", data: "write-kubeconfig-mode: 0644\n",
			want: []configEntry{{Key: "write-kubeconfig-mode", Values: []string{"420"}, File: "f"}}},
		{name: "lists and append", data: "tls-san:\n  - a.test\n  - 10.0.0.1\nnode-label+: [x=y]\n",
			want: []configEntry{
				{Key: "tls-san", Values: []string{"a.test", "10.0.0.1"}, File: "f"},
				{Key: "node-label+", Values: []string{"x=y"}, File: "f"},
			}},
		{name: "syntax error names file and line", data: "token: a\n  bad: [\n", err: "standin: config file f: yaml: line 2:"},
		{name: "not a mapping", data: "- a\n- b\n", err: "standin: config file f: yaml: unmarshal errors"},
		{name: "map value", data: "token:\n  a: b\n", err: "standin: config file f: key token: a value of type"},
		{name: "nested list", data: "tls-san: [[a]]\n", err: "standin: config file f: key tls-san: a value of type"},
		{name: "empty key", data: "\"\": x\n", err: "not a flag name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseConfigData("f", []byte(c.data))
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

// The example of k3s's docs (docs/installation/configuration.md,
// "Multiple Config Files"), plus a .yml drop-in, a file that is not YAML
// by name, and a directory, which are skipped or read as k3s does.
func TestReadConfigFilesMerge(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	writeConfig(t, dir, map[string]string{
		"config.yaml":                   "token: boop\nnode-label:\n  - foo=bar\n  - bar=baz\n",
		"config.yaml.d/test1.yaml":      "write-kubeconfig-mode: 600\nnode-taint:\n  - alice=bob:NoExecute\n",
		"config.yaml.d/test2.yaml":      "write-kubeconfig-mode: 777\nnode-label:\n  - other=what\n  - foo=three\nnode-taint+:\n  - charlie=delta:NoSchedule\n",
		"config.yaml.d/test3.YML":       "tls-san+: x.test\ntls-san+: [y.test]\n",
		"config.yaml.d/ignored.txt":     "token: nope\n",
		"config.yaml.d/sub.yaml/a.yaml": "token: nope\n",
	})
	got, err := readConfigFiles(OSFS{}, path)
	require.NoError(t, err)
	d := filepath.Join(dir, "config.yaml.d")
	assert.Equal(t, []configEntry{
		{Key: "token", Values: []string{"boop"}, File: path},
		{Key: "node-label", Values: []string{"other=what", "foo=three"}, File: filepath.Join(d, "test2.yaml")},
		{Key: "write-kubeconfig-mode", Values: []string{"777"}, File: filepath.Join(d, "test2.yaml")},
		{Key: "node-taint", Values: []string{"alice=bob:NoExecute", "charlie=delta:NoSchedule"}, File: filepath.Join(d, "test2.yaml")},
		{Key: "tls-san", Values: []string{"x.test", "y.test"}, File: filepath.Join(d, "test3.YML")},
	}, got)

	// Drop-ins alone (no config.yaml) are read; nothing at all is no error.
	require.NoError(t, os.Remove(path))
	got, err = readConfigFiles(OSFS{}, path)
	require.NoError(t, err)
	assert.Equal(t, "node-taint", got[1].Key)
	got, err = readConfigFiles(OSFS{}, filepath.Join(dir, "absent.yaml"))
	require.NoError(t, err)
	assert.Empty(t, got)

	// A broken drop-in is an error naming it.
	writeConfig(t, dir, map[string]string{"config.yaml.d/zz.yaml": "a: [\n"})
	_, err = readConfigFiles(OSFS{}, path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(d, "zz.yaml")+": yaml: line ")
}

func TestParseServerArgsConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	writeConfig(t, dir, map[string]string{
		"config.yaml": `token: from-file
data-dir: /file/data
node-name: file-node
cluster-init: true
tls-san: [a.test, b.test]
node-label: [from=file]
write-kubeconfig-mode: "0644"
disable: servicelb
kube-apiserver-arg: v=2
agent-token: only-in-file
no-such-flag: x
`,
		"config.yaml.d/10.yaml": "tls-san+: [c.test]\nnode-taint: [k=v:NoSchedule]\n",
	})
	envs := map[string]string{"K3S_CONFIG_FILE": path, "K3S_TOKEN": "from-env", "K3S_NODE_NAME": "env-node",
		"K3S_DATA_DIR": "/env/data", "K3S_KUBECONFIG_MODE": "0600"}
	cfg, err := ParseServerArgs(OSFS{}, []string{"--node-label", "from=cli", "--data-dir", "/cli/data"}, env(envs))
	require.NoError(t, err)
	assert.Equal(t, path, cfg.ConfigFile)
	assert.Equal(t, "from-file", cfg.Token, "a file value wins over the variable (it becomes a flag)")
	assert.Equal(t, "file-node", cfg.NodeName)
	assert.Equal(t, "0644", cfg.KubeconfigMode)
	assert.Equal(t, "/cli/data", cfg.DataDir, "the command line wins over the file")
	assert.True(t, cfg.ClusterInit)
	assert.Equal(t, []string{"a.test", "b.test", "c.test"}, cfg.TLSSANs)
	assert.Equal(t, []string{"from=cli"}, cfg.NodeLabels, "a repeatable flag on the command line replaces the file's list")
	assert.Equal(t, []string{"k=v:NoSchedule"}, cfg.NodeTaints)
	assert.Equal(t, []string{"v=2"}, cfg.APIServerArgs, "a scalar is accepted for a repeatable flag")
	assert.Equal(t, "only-in-file", cfg.AgentToken)
	assert.Equal(t, "true", cfg.Critical["disable-servicelb"])
	assert.Contains(t, cfg.Ignored, "disable")
	assert.Equal(t, []string{"Unknown flag --no-such-flag found in config.yaml, skipping"}, cfg.ConfigWarnings)

	// Without the file, the variables apply.
	delete(envs, "K3S_CONFIG_FILE")
	cfg, err = ParseServerArgs(OSFS{}, []string{"--config", filepath.Join(dir, "absent.yaml")}, env(envs))
	require.NoError(t, err, "k3s ignores a missing config file, even one named explicitly")
	assert.Equal(t, "from-env", cfg.Token)
	assert.Equal(t, "env-node", cfg.NodeName)

	// -c names the file; $K3S_CONFIG_FILE wins over it.
	other := filepath.Join(dir, "other.yaml")
	writeConfig(t, dir, map[string]string{"other.yaml": "node-name: other\n"})
	cfg, err = ParseServerArgs(OSFS{}, []string{"-c", other}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, "other", cfg.NodeName)
	cfg, err = ParseServerArgs(OSFS{}, []string{"-c", other}, env(map[string]string{"K3S_CONFIG_FILE": path}))
	require.NoError(t, err)
	assert.Equal(t, "file-node", cfg.NodeName)

	// Bad values name the file.
	writeConfig(t, dir, map[string]string{"bad.yaml": "https-listen-port: many\n"})
	_, err = ParseServerArgs(OSFS{}, nil, env(map[string]string{"K3S_CONFIG_FILE": filepath.Join(dir, "bad.yaml")}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "standin: server: config file "+filepath.Join(dir, "bad.yaml")+": invalid argument \"many\" for \"--https-listen-port\"")
	writeConfig(t, dir, map[string]string{"bad2.yaml": "cluster-init: maybe\n"})
	_, err = ParseServerArgs(OSFS{}, nil, env(map[string]string{"K3S_CONFIG_FILE": filepath.Join(dir, "bad2.yaml")}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "bad2.yaml"))
}

func TestParseAgentArgsConfigFile(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, map[string]string{
		"agent.yaml":                  "server: https://10.0.0.1:6443\ntoken: file-token\nnode-label: [a=b]\n",
		"agent.yaml.d/50-labels.yaml": "node-label+: [c=d]\ndebug: true\n",
		"server.yaml":                 "token: t\nserver: https://10.0.0.1:6443\nwrite-kubeconfig-mode: \"0644\"\n",
	})
	cfg, err := ParseAgentArgs(OSFS{}, []string{"--config", filepath.Join(dir, "agent.yaml")}, env(map[string]string{"K3S_TOKEN": "env-token"}))
	require.NoError(t, err)
	assert.Equal(t, "https://10.0.0.1:6443", cfg.Server)
	assert.Equal(t, "file-token", cfg.Token)
	assert.Equal(t, []string{"a=b", "c=d"}, cfg.NodeLabels)
	assert.Equal(t, []string{"debug"}, cfg.Ignored)

	// k3s's agent refuses a server-only key in its config file (k3s#6565).
	_, err = ParseAgentArgs(OSFS{}, nil, env(map[string]string{"K3S_CONFIG_FILE": filepath.Join(dir, "server.yaml")}))
	require.Error(t, err)
	assert.Equal(t, "standin: agent: config file "+filepath.Join(dir, "server.yaml")+": flag provided but not defined: -write-kubeconfig-mode", err.Error())
}

// FuzzConfigFile: any file content parses or fails with an error naming
// the file, never panics; a parsed file's entries merge and turn into
// flag arguments without panicking, and parsing is deterministic.
func FuzzConfigFile(f *testing.F) {
	for _, seed := range []string{
		"",
		"token: s3cret\ncluster-init: true\n",
		"tls-san:\n  - a\n  - 10.0.0.1\nnode-label+: [x=y]\n",
		"write-kubeconfig-mode: 0644\n",
		"a: [\n",
		"- a\n",
		"token:\n  a: b\n",
		"\"+\": x\n",
		"? [a, b]\n: c\n",
		"disable: servicelb\ndisable+: traefik\n",
		"n: ~\nf: 1.5\nb: no\n",
		"&a x: *a\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseConfigData("fuzz.yaml", data)
		if err != nil {
			assert.Contains(t, err.Error(), "config file fuzz.yaml")
			return
		}
		again, err := parseConfigData("fuzz.yaml", data)
		require.NoError(t, err)
		require.Equal(t, got, again)
		keys := map[string]bool{}
		for _, e := range got {
			keys[strings.TrimSuffix(e.Key, "+")] = true
		}
		merged := mergeConfig(mergeConfig(nil, got), got)
		assert.Len(t, merged, len(keys))
		for _, e := range merged {
			assert.True(t, keys[e.Key], e.Key)
		}
	})
}
