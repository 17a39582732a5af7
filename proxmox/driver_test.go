package proxmox_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/registry"
)

const driverFile = "/home/ann/.openctl/config.yaml"

// driverSection is a providers.proxmox section with three contexts.
const driverSection = `default-context: lab
contexts:
  lab:
    endpoint: https://pve.lab:8006
    node: pve1
    credentials: lab-token
    fingerprint: "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89"
  prod:
    endpoint: https://pve.prod:8006
    credentials: prod-token
    caFile: certs/prod-ca.pem
  old:
    endpoint: https://pve.old:8006
    credentials: lab-token
    insecureSkipVerify: true
credentials:
  lab-token:
    tokenId: root@pam!openctl
    tokenSecret: 5ec12e7a-1ab5-4c3e-9d1e-000000000001
  prod-token:
    tokenId: ci@pve!openctl
    tokenSecretFile: secrets/prod.token
defaults:
  storage: local-lvm
  bridge: vmbr0
`

// decodeSection decodes content as providers.proxmox of driverFile.
func decodeSection(t *testing.T, content string) (registry.DriverConfig, error) {
	t.Helper()
	sec, err := config.NewSection(proxmox.Name, driverFile, []byte(content))
	require.NoError(t, err)
	return proxmox.Driver{}.DecodeConfig(sec)
}

// asYAML renders a DriverConfig as `openctl config view` would.
func asYAML(t *testing.T, cfg registry.DriverConfig) map[string]any {
	t.Helper()
	out, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(out, &m))
	return m
}

func TestDriverDecodeConfig(t *testing.T) {
	assert.Equal(t, []string{"ENDPOINT", "NODE", "CREDENTIALS"}, proxmox.Driver{}.Info().ContextColumns)

	cfg, err := decodeSection(t, driverSection)
	require.NoError(t, err)
	assert.Equal(t, []registry.ContextInfo{
		{Name: "lab", Current: true, Columns: []string{"https://pve.lab:8006", "pve1", "lab-token"}},
		{Name: "old", Columns: []string{"https://pve.old:8006", "<none>", "lab-token"}},
		{Name: "prod", Columns: []string{"https://pve.prod:8006", "<none>", "prod-token"}},
	}, cfg.Contexts())

	// Paths are relative to the file; secrets are redacted in the view.
	view := asYAML(t, cfg)
	creds := view["credentials"].(map[string]any)
	assert.Equal(t, "[redacted]", creds["lab-token"].(map[string]any)["tokenSecret"])
	assert.Equal(t, "/home/ann/.openctl/secrets/prod.token", creds["prod-token"].(map[string]any)["tokenSecretFile"])
	assert.Equal(t, "/home/ann/.openctl/certs/prod-ca.pem", view["contexts"].(map[string]any)["prod"].(map[string]any)["caFile"])
	assert.NotContains(t, mustMarshal(t, cfg), "5ec12e7a")

	// WithContext moves the current marker, leaving cfg as it was.
	prod, err := cfg.WithContext("prod")
	require.NoError(t, err)
	assert.Equal(t, []bool{false, false, true}, currents(prod.Contexts()))
	assert.Equal(t, []bool{true, false, false}, currents(cfg.Contexts()))

	// The only context is the current one without a default.
	one, err := decodeSection(t, "contexts:\n  only: {endpoint: https://a:8006, credentials: t}\ncredentials:\n  t: {tokenId: root@pam!ci, tokenSecretFile: /t}\n")
	require.NoError(t, err)
	assert.Equal(t, []registry.ContextInfo{{Name: "only", Current: true, Columns: []string{"https://a:8006", "<none>", "t"}}}, one.Contexts())

	// Several contexts without a default: none is current.
	two, err := decodeSection(t, "contexts:\n  a: {endpoint: https://a:8006, credentials: t}\n  b: {endpoint: https://b:8006, credentials: t}\ncredentials:\n  t: {tokenId: root@pam!ci, tokenSecretFile: /t}\n")
	require.NoError(t, err)
	assert.Equal(t, []bool{false, false}, currents(two.Contexts()))
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	out, err := yaml.Marshal(v)
	require.NoError(t, err)
	return string(out)
}

func currents(infos []registry.ContextInfo) []bool {
	var out []bool
	for _, c := range infos {
		out = append(out, c.Current)
	}
	return out
}

func TestDriverDecodeConfigErrors(t *testing.T) {
	const creds = "credentials:\n  t1: {tokenId: root@pam!ci, tokenSecretFile: /t}\n"
	tests := []struct {
		name    string
		content string
		want    []string // the messages, in order
	}{
		{
			"unknown field",
			"contexts:\n  lab:\n    endpoint: https://a:8006\n    credentials: t1\n" + creds + "  t2:\n    tokenID: root@pam!ci\n",
			[]string{driverFile + `:8:5: providers.proxmox.credentials.t2.tokenID: unknown field (did you mean "tokenId"?) (known: tokenId, tokenSecret, tokenSecretFile)`},
		},
		{
			"undefined credentials",
			"contexts:\n  lab:\n    endpoint: https://a:8006\n    credentials: nope\n" + creds,
			[]string{driverFile + `:4:5: providers.proxmox.contexts.lab.credentials: "nope" is not defined under providers.proxmox.credentials (defined: t1)`},
		},
		{
			"missing credentials",
			"contexts:\n  lab:\n    endpoint: https://a:8006\n",
			[]string{driverFile + `:2:3: providers.proxmox.contexts.lab.credentials: required: the name of an entry of providers.proxmox.credentials (defined: none)`},
		},
		{
			"unknown default-context",
			"default-context: prod\ncontexts:\n  lab: {endpoint: https://a:8006, credentials: t1}\n" + creds,
			[]string{driverFile + `:1:1: providers.proxmox.default-context: "prod" is not a context (contexts: lab)`},
		},
		{
			"every problem",
			"default-context: prod\ncontexts:\n  a: {endpoint: https://a:8006}\n  b: {endpoint: https://b:8006, credentials: x}\n",
			[]string{
				driverFile + `:3:3: providers.proxmox.contexts.a.credentials: required: the name of an entry of providers.proxmox.credentials (defined: none)`,
				driverFile + `:4:33: providers.proxmox.contexts.b.credentials: "x" is not defined under providers.proxmox.credentials (defined: none)`,
				driverFile + `:1:1: providers.proxmox.default-context: "prod" is not a context (contexts: a, b)`,
			},
		},
		{
			"wrong type",
			"contexts:\n  lab:\n    insecureSkipVerify: \"yes\"\n",
			[]string{driverFile + `:3:25: providers.proxmox.contexts.lab.insecureSkipVerify: want true or false, got a string`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := decodeSection(t, tt.content)
			require.Error(t, err)
			assert.Nil(t, cfg)
			assert.True(t, errors.Is(err, errcode.Invalid))
			var msgs []string
			for _, e := range config.Errors(err) {
				msgs = append(msgs, e.Error())
			}
			assert.Equal(t, tt.want, msgs)
		})
	}
}

func TestDriverWithContextUnknown(t *testing.T) {
	cfg, err := decodeSection(t, driverSection)
	require.NoError(t, err)
	_, err = cfg.WithContext("staging")
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Invalid))
	assert.Equal(t, errcode.New(errcode.Invalid, `proxmox: no Proxmox context "staging" (contexts: lab, old, prod)`).Error(), err.Error())

	empty, err := decodeSection(t, "")
	require.NoError(t, err)
	_, err = empty.WithContext("lab")
	require.Error(t, err)
	assert.Equal(t, errcode.New(errcode.Invalid, `proxmox: no Proxmox context "lab" (contexts: none)`).Error(), err.Error())
}

func TestDriverOpenWithoutContexts(t *testing.T) {
	dir := t.TempDir()
	missing, _, err := config.LoadEnv(filepath.Join(dir, "config.yaml"), func(string) string { return "" })
	require.NoError(t, err)
	noData, err := config.NewSection(proxmox.Name, "", nil)
	require.NoError(t, err)
	emptyMap, err := config.NewSection(proxmox.Name, driverFile, []byte("defaults: {storage: local}\n"))
	require.NoError(t, err)

	tests := []struct {
		name  string
		sec   *config.Section
		where string
	}{
		{"no file", missing.Section(proxmox.Name), filepath.Join(dir, "config.yaml") + " does not exist"},
		{"no section", noData, "no configuration file"},
		{"no contexts", emptyMap, driverFile + ": providers.proxmox"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := proxmox.Driver{}.DecodeConfig(tt.sec)
			require.NoError(t, err, "an empty section is not an error by itself")
			assert.Empty(t, cfg.Contexts())
			p, err := proxmox.Driver{}.Open(t.Context(), cfg, registry.OpenOptions{})
			require.Error(t, err)
			assert.Nil(t, p)
			assert.True(t, errors.Is(err, errcode.Invalid))
			for _, s := range []string{"proxmox: no Proxmox VE endpoint is configured (" + tt.where + ")", "providers.proxmox",
				proxmox.EnvURL, proxmox.EnvTokenID, proxmox.EnvTokenSecret, "--sandbox"} {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestDriverOpenInvalidContext(t *testing.T) {
	cfg, err := decodeSection(t, "contexts:\n  lab: {endpoint: https://a:8006, credentials: t}\ncredentials:\n  t: {tokenId: root@pam, tokenSecretFile: /t}\n")
	require.NoError(t, err)
	_, err = proxmox.Driver{}.Open(t.Context(), cfg, registry.OpenOptions{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Invalid))
	assert.Contains(t, err.Error(), driverFile+": proxmox: context \"lab\": tokenId:")
}

func TestDriverOpen(t *testing.T) {
	cfg, err := decodeSection(t, driverSection)
	require.NoError(t, err)
	p, err := proxmox.Driver{}.Open(t.Context(), cfg, registry.OpenOptions{})
	require.NoError(t, err)
	assert.Equal(t, proxmox.Name, p.Name())
	assert.Equal(t, proxmox.Driver{}.Info().Kinds, p.Kinds())
	assert.Equal(t, proxmox.Name, proxmox.Driver{}.Info().Name)
	pp, ok := p.(*proxmox.Provider)
	require.True(t, ok, "%T", p)
	assert.Equal(t, proxmox.Driver{}.Info().Actions, pp.Actions())
}

// otherConfig is a DriverConfig of some other driver.
type otherConfig struct{}

func (otherConfig) Contexts() []registry.ContextInfo                  { return nil }
func (otherConfig) WithContext(string) (registry.DriverConfig, error) { return otherConfig{}, nil }

func TestDriverForeignConfig(t *testing.T) {
	_, err := proxmox.Driver{}.Open(t.Context(), otherConfig{}, registry.OpenOptions{})
	require.Error(t, err)
	assert.Equal(t, errcode.Internal, errcode.Of(err))
	_, err = proxmox.Driver{}.ConfigFromEnv(otherConfig{}, func(string) string { return "" })
	require.Error(t, err)
	assert.Equal(t, errcode.Internal, errcode.Of(err))
}

func TestDriverConfigFromEnv(t *testing.T) {
	const url = "https://pve.ci:8006"
	const fp = "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89"
	envOf := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}

	t.Run("URL and token", func(t *testing.T) {
		for _, file := range []string{"", driverSection} {
			base, err := decodeSection(t, file)
			require.NoError(t, err)
			cfg, err := proxmox.Driver{}.ConfigFromEnv(base, envOf(
				proxmox.EnvURL, url, proxmox.EnvTokenID, "ci@pve!openctl", proxmox.EnvTokenSecret, "s3cret-env",
				proxmox.EnvFingerprint, fp, proxmox.EnvNode, "pve9"))
			require.NoError(t, err)
			infos := cfg.Contexts()
			var env *registry.ContextInfo
			for i := range infos {
				if infos[i].Name == proxmox.EnvContext {
					env = &infos[i]
				} else {
					assert.False(t, infos[i].Current, "env is the default")
				}
			}
			require.NotNil(t, env)
			assert.Equal(t, registry.ContextInfo{Name: "env", Current: true, Columns: []string{url, "pve9", "env"}}, *env)
			assert.Len(t, infos, len(base.Contexts())+1, "the file's contexts stay")

			view := asYAML(t, cfg)
			assert.Equal(t, "env", view["default-context"])
			assert.Equal(t, map[string]any{"endpoint": url, "node": "pve9", "credentials": "env", "fingerprint": fp}, view["contexts"].(map[string]any)["env"])
			assert.Equal(t, map[string]any{"tokenId": "ci@pve!openctl", "tokenSecret": "[redacted]"}, view["credentials"].(map[string]any)["env"])
			assert.NotContains(t, mustMarshal(t, cfg), "s3cret-env")
			assert.NotContains(t, mustMarshal(t, base), "env:", "the file's configuration is left alone")

			// --context still picks a file's context.
			if file != "" {
				lab, err := cfg.WithContext("lab")
				require.NoError(t, err)
				assert.True(t, lab.Contexts()[slicesIndex(lab.Contexts(), "lab")].Current)
			}
		}
	})

	t.Run("token secret file, replacing the file's env context", func(t *testing.T) {
		base, err := decodeSection(t, "contexts:\n  env: {endpoint: https://pve.file:8006, credentials: c}\ncredentials:\n  c: {tokenId: root@pam!file, tokenSecretFile: /f}\n")
		require.NoError(t, err)
		cfg, err := proxmox.Driver{}.ConfigFromEnv(base, envOf(proxmox.EnvURL, url, proxmox.EnvTokenID, "ci@pve!openctl", proxmox.EnvTokenSecretFile, "/run/secrets/pve"))
		require.NoError(t, err)
		assert.Equal(t, []registry.ContextInfo{{Name: "env", Current: true, Columns: []string{url, "<none>", "env"}}}, cfg.Contexts())
		view := asYAML(t, cfg)
		assert.Equal(t, map[string]any{"tokenId": "ci@pve!openctl", "tokenSecretFile": "/run/secrets/pve"}, view["credentials"].(map[string]any)["env"])
	})

	t.Run("no variables", func(t *testing.T) {
		base, err := decodeSection(t, driverSection)
		require.NoError(t, err)
		cfg, err := proxmox.Driver{}.ConfigFromEnv(base, envOf("OPENCTL_STATE_DSN", "file:/x"))
		require.NoError(t, err)
		assert.Same(t, base, cfg, "unchanged")
	})

	errorTests := []struct {
		name string
		kv   []string
		want string
	}{
		{"no token", []string{proxmox.EnvURL, url},
			"proxmox: OPENCTL_PROXMOX_URL is set but OPENCTL_PROXMOX_TOKEN_ID and OPENCTL_PROXMOX_TOKEN_SECRET (or OPENCTL_PROXMOX_TOKEN_SECRET_FILE) are not: set them to the API token (user@realm!name and its secret)"},
		{"no token id", []string{proxmox.EnvURL, url, proxmox.EnvTokenSecret, "s3cret-env"},
			"proxmox: OPENCTL_PROXMOX_URL is set but OPENCTL_PROXMOX_TOKEN_ID is not: set it to the API token (user@realm!name and its secret)"},
		{"no secret", []string{proxmox.EnvURL, url, proxmox.EnvTokenID, "ci@pve!openctl"},
			"proxmox: OPENCTL_PROXMOX_URL is set but OPENCTL_PROXMOX_TOKEN_SECRET (or OPENCTL_PROXMOX_TOKEN_SECRET_FILE) is not: set it to the API token (user@realm!name and its secret)"},
		{"both secrets", []string{proxmox.EnvURL, url, proxmox.EnvTokenID, "ci@pve!openctl", proxmox.EnvTokenSecret, "s3cret-env", proxmox.EnvTokenSecretFile, "/x"},
			"proxmox: both OPENCTL_PROXMOX_TOKEN_SECRET and OPENCTL_PROXMOX_TOKEN_SECRET_FILE are set: set only one"},
		{"token without URL", []string{proxmox.EnvTokenID, "ci@pve!openctl", proxmox.EnvTokenSecret, "s3cret-env"},
			"proxmox: OPENCTL_PROXMOX_TOKEN_ID, OPENCTL_PROXMOX_TOKEN_SECRET are set but OPENCTL_PROXMOX_URL is not: set it to the Proxmox VE API URL (https://pve.example.com:8006), or unset OPENCTL_PROXMOX_TOKEN_ID, OPENCTL_PROXMOX_TOKEN_SECRET"},
		{"node without URL", []string{proxmox.EnvNode, "pve1"},
			"proxmox: OPENCTL_PROXMOX_NODE is set but OPENCTL_PROXMOX_URL is not: set it to the Proxmox VE API URL (https://pve.example.com:8006), or unset OPENCTL_PROXMOX_NODE"},
	}
	for _, tt := range errorTests {
		t.Run(tt.name, func(t *testing.T) {
			base, err := decodeSection(t, "")
			require.NoError(t, err)
			cfg, err := proxmox.Driver{}.ConfigFromEnv(base, envOf(tt.kv...))
			require.Error(t, err)
			assert.Nil(t, cfg)
			assert.True(t, errors.Is(err, errcode.Invalid))
			assert.Equal(t, errcode.New(errcode.Invalid, tt.want).Error(), err.Error())
			assert.NotContains(t, err.Error(), "s3cret-env")
		})
	}
}

// TestDriverConfigFromEnvOpens: what the variables say reaches the
// provider: it talks to the simulator with the token, pinning the
// certificate.
func TestDriverConfigFromEnvOpens(t *testing.T) {
	srv := proxmoxtest.NewTestServer(t)
	id, tok := srv.Token()
	env := map[string]string{proxmox.EnvURL: srv.URL(), proxmox.EnvTokenID: id, proxmox.EnvTokenSecret: tok, proxmox.EnvFingerprint: srv.Fingerprint()}
	base, err := decodeSection(t, "")
	require.NoError(t, err)
	cfg, err := proxmox.Driver{}.ConfigFromEnv(base, func(k string) string { return env[k] })
	require.NoError(t, err)
	p, err := proxmox.Driver{}.Open(t.Context(), cfg, registry.OpenOptions{})
	require.NoError(t, err)
	require.NoError(t, p.(*proxmox.Provider).Ping(t.Context(), nil))

	env[proxmox.EnvTokenSecret] = "00000000-0000-4000-8000-000000000000"
	cfg, err = proxmox.Driver{}.ConfigFromEnv(base, func(k string) string { return env[k] })
	require.NoError(t, err)
	p, err = proxmox.Driver{}.Open(t.Context(), cfg, registry.OpenOptions{})
	require.NoError(t, err)
	assert.Error(t, p.(*proxmox.Provider).Ping(t.Context(), nil), "a wrong secret is refused")
}

func slicesIndex(infos []registry.ContextInfo, name string) int {
	for i, c := range infos {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func TestDriverSandbox(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var d registry.Sandboxer = proxmox.Driver{}
	sb, err := d.Sandbox(ctx, registry.SandboxOptions{})
	require.NoError(t, err)
	closed := false
	defer func() {
		if !closed {
			assert.NoError(t, sb.Close())
		}
	}()
	assert.Contains(t, sb.Description, "a simulated Proxmox VE (nodes pve1..pve3) at https://127.0.0.1:")
	infos := sb.Config.Contexts()
	require.Len(t, infos, 1)
	assert.Equal(t, "sandbox", infos[0].Name)
	assert.True(t, infos[0].Current)
	assert.Contains(t, sb.Description, infos[0].Columns[0], "the endpoint")

	p, err := proxmox.Driver{}.Open(ctx, sb.Config, registry.OpenOptions{})
	require.NoError(t, err)
	pinger, ok := p.(registry.Pinger)
	require.True(t, ok, "%T has no Ping", p)
	require.NoError(t, pinger.Ping(ctx, nil), "the token is accepted and the certificate pinned")

	nodes, err := p.(*proxmox.Provider).List(ctx, proxmox.KindNode)
	require.NoError(t, err)
	assert.Len(t, nodes, 3)

	require.NoError(t, sb.Close())
	closed = true
	pingCtx, cancelPing := context.WithTimeout(ctx, 10*time.Second)
	defer cancelPing()
	assert.Error(t, pinger.Ping(pingCtx, nil), "the simulator is gone")
}
