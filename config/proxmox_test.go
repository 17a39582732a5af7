package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/proxmox"
)

func TestProxmoxConversion(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	cfg, _, err := config.LoadEnv(writeConfig(t, dir, fullExample, 0o600), envOf(home))
	require.NoError(t, err)

	pc, err := cfg.Proxmox("")
	require.NoError(t, err)
	assert.Equal(t, "lab", pc.DefaultContext)
	assert.Len(t, pc.Contexts, 3)
	lab := pc.Contexts["lab"]
	assert.Equal(t, "https://pve.lab:8006", lab.Endpoint)
	assert.Equal(t, "pve1", lab.Node)
	assert.Equal(t, "root@pam!openctl", lab.TokenID)
	assert.Equal(t, labSecret, lab.TokenSecret.Reveal())
	assert.Empty(t, lab.TokenSecretFile)
	assert.True(t, strings.HasPrefix(lab.Fingerprint, "AB:CD"))
	assert.Equal(t, proxmox.Defaults{Storage: "local-lvm", Bridge: "vmbr0"}, lab.Defaults)
	prod := pc.Contexts["prod"]
	assert.Equal(t, "ci@pve!openctl", prod.TokenID)
	assert.True(t, prod.TokenSecret.IsZero())
	assert.NotEmpty(t, prod.TokenSecretFile)
	assert.NotEmpty(t, prod.CAFile)
	assert.Equal(t, proxmox.Defaults{Storage: "local-lvm", Bridge: "vmbr0"}, prod.Defaults)
	old := pc.Contexts["old"]
	assert.True(t, old.InsecureSkipVerify)
	assert.Equal(t, labSecret, old.TokenSecret.Reveal(), "credentials shared by name")
	assert.Zero(t, pc.Limits)
	assert.Zero(t, pc.Timeouts)
	require.NoError(t, pc.Validate())

	pc, err = cfg.Proxmox("prod")
	require.NoError(t, err)
	assert.Equal(t, "prod", pc.DefaultContext)

	_, err = cfg.Proxmox("staging")
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Invalid))
	assert.Contains(t, err.Error(), `no Proxmox context "staging" (contexts: lab, old, prod)`)
}

func TestProxmoxConversionErrors(t *testing.T) {
	const head = "providers:\n  proxmox:\n"
	tests := []struct {
		name    string
		content string
		want    []string // parts of the message
		line    int      // of the first problem; 0: not checked
	}{
		{
			"unknown credentials",
			head + "    contexts:\n      lab:\n        endpoint: https://a:8006\n        credentials: nope\n    credentials:\n      t1: {tokenId: root@pam!ci, tokenSecretFile: /t}\n",
			[]string{"providers.proxmox.contexts.lab.credentials", `"nope" is not defined under providers.proxmox.credentials (defined: t1)`}, 6,
		},
		{
			"missing credentials",
			head + "    contexts:\n      lab:\n        endpoint: https://a:8006\n",
			[]string{"providers.proxmox.contexts.lab.credentials: required", "(defined: none)"}, 4,
		},
		{
			"unknown default-context",
			head + "    default-context: prod\n    contexts:\n      lab: {endpoint: https://a:8006, credentials: t}\n    credentials:\n      t: {tokenId: root@pam!ci, tokenSecretFile: /t}\n",
			[]string{"providers.proxmox.default-context", `"prod" is not a context (contexts: lab)`}, 3,
		},
		{
			"unknown default key",
			head + "    contexts:\n      lab: {endpoint: https://a:8006, credentials: t}\n    credentials:\n      t: {tokenId: root@pam!ci, tokenSecretFile: /t}\n    defaults:\n      Storage: x\n",
			[]string{"providers.proxmox.defaults.Storage", `unknown Proxmox default (did you mean "storage"?) (known: bridge, storage)`}, 8,
		},
		{
			"invalid context",
			head + "    contexts:\n      lab: {endpoint: http://a:8006, credentials: t}\n    credentials:\n      t: {tokenId: root@pam, tokenSecretFile: /t}\n",
			[]string{`proxmox: context "lab": endpoint:`, `tokenId: "root@pam" is not an API token id`}, 0,
		},
		{
			"several contexts without default",
			head + "    contexts:\n      a: {endpoint: https://a:8006, credentials: t}\n      b: {endpoint: https://b:8006, credentials: t}\n    credentials:\n      t: {tokenId: root@pam!ci, tokenSecretFile: /t}\n",
			[]string{"defaultContext: required when there are several contexts"}, 0,
		},
		{
			"no contexts",
			head + "    defaults: {storage: local}\n",
			[]string{"has no providers.proxmox.contexts", "OPENCTL_PROXMOX_URL"}, 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeConfig(t, dir, tt.content, 0o600)
			cfg, _, err := config.LoadEnv(path, envOf(dir))
			require.NoError(t, err)
			_, err = cfg.Proxmox("")
			require.Error(t, err)
			assert.True(t, errors.Is(err, errcode.Invalid))
			for _, s := range tt.want {
				assert.Contains(t, err.Error(), s)
			}
			if tt.line > 0 {
				errs := config.Errors(err)
				require.NotEmpty(t, errs)
				assert.Equal(t, path, errs[0].File)
				assert.Equal(t, tt.line, errs[0].Line)
			}
		})
	}
}

func TestProxmoxSingleContext(t *testing.T) {
	dir := t.TempDir()
	cfg, _, err := config.LoadEnv(writeConfig(t, dir, `providers:
  proxmox:
    contexts:
      only: {endpoint: "https://a:8006", credentials: t}
    credentials:
      t: {tokenId: "root@pam!ci", tokenSecretFile: /t}
`, 0o600), envOf(dir))
	require.NoError(t, err)
	pc, err := cfg.Proxmox("")
	require.NoError(t, err)
	assert.Empty(t, pc.DefaultContext, "the provider takes the only context")
	assert.Equal(t, []config.ContextInfo{{Name: "only", Endpoint: "https://a:8006", Credentials: "t", Current: true}}, cfg.Contexts("proxmox"))
}

func TestContextsAndUseContext(t *testing.T) {
	dir := t.TempDir()
	cfg, _, err := config.LoadEnv(writeConfig(t, dir, fullExample, 0o600), envOf(dir))
	require.NoError(t, err)
	assert.Equal(t, []config.ContextInfo{
		{Name: "lab", Endpoint: "https://pve.lab:8006", Node: "pve1", Credentials: "lab-token", Current: true},
		{Name: "old", Endpoint: "https://pve.old:8006", Credentials: "lab-token"},
		{Name: "prod", Endpoint: "https://pve.prod:8006", Node: "pve-a", Credentials: "prod-token"},
	}, cfg.Contexts("proxmox"))
	assert.Nil(t, cfg.Contexts("k3s"))

	require.NoError(t, cfg.UseContext("proxmox", "prod"))
	assert.Equal(t, "prod", cfg.Providers["proxmox"].DefaultContext)
	infos := cfg.Contexts("proxmox")
	assert.False(t, infos[0].Current)
	assert.True(t, infos[2].Current)
	pc, err := cfg.Proxmox("")
	require.NoError(t, err)
	assert.Equal(t, "prod", pc.DefaultContext)

	err = cfg.UseContext("proxmox", "staging")
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Invalid))
	assert.Contains(t, err.Error(), `no context "staging" (contexts: lab, old, prod)`)
	assert.Equal(t, "prod", cfg.Providers["proxmox"].DefaultContext, "unchanged")

	err = cfg.UseContext("vsphere", "x")
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Invalid))
	assert.Contains(t, err.Error(), `no provider "vsphere" is configured (providers: custom, proxmox)`)
}
