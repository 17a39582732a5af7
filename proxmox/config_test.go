package proxmox

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
)

const (
	testSecret = "8d3f0b5e-1c2a-4e6f-9b7d-0a1b2c3d4e5f"
	testFP     = "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89"
)

func validContext() Context {
	return Context{
		Endpoint:    "https://pve.example.com:8006",
		TokenID:     "root@pam!openctl",
		TokenSecret: secret.New(testSecret),
		Fingerprint: testFP,
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	one := func(mod func(*Context)) Config {
		c := validContext()
		mod(&c)
		return Config{Contexts: map[string]Context{"lab": c}}
	}
	cases := []struct {
		name string
		cfg  Config
		want []string // substrings of the error; none: valid
	}{
		{"valid", one(func(*Context) {}), nil},
		{"valid secret file", one(func(c *Context) { c.TokenSecret = secret.Secret{}; c.TokenSecretFile = "/run/secrets/pve" }), nil},
		{"valid caFile", one(func(c *Context) { c.Fingerprint = ""; c.CAFile = "/etc/pve-root-ca.pem" }), nil},
		{"valid system roots, api2 suffix", one(func(c *Context) { c.Fingerprint = ""; c.Endpoint = "https://pve:8006/api2/json/" }), nil},
		{"valid http with insecure", one(func(c *Context) { c.Fingerprint = ""; c.InsecureSkipVerify = true; c.Endpoint = "http://pve:8006" }), nil},
		{"valid node and defaults", one(func(c *Context) { c.Node = "pve1"; c.Defaults = Defaults{Storage: "local-lvm", Bridge: "vmbr0"} }), nil},

		{"no contexts", Config{}, []string{"contexts: at least one"}},
		{"bad context name", Config{Contexts: map[string]Context{"my lab": validContext()}}, []string{`context "my lab"`, "name"}},
		{"no endpoint", one(func(c *Context) { c.Endpoint = "" }), []string{`context "lab": endpoint: required`}},
		{"no scheme", one(func(c *Context) { c.Endpoint = "pve.example.com:8006" }), []string{`context "lab": endpoint: "pve.example.com:8006" has no scheme`}},
		{"ftp", one(func(c *Context) { c.Endpoint = "ftp://pve:8006" }), []string{`context "lab": endpoint:`, "scheme must be https"}},
		{"http without insecure", one(func(c *Context) { c.Endpoint = "http://pve:8006" }), []string{`context "lab": endpoint:`, "http://"}},
		{"no host", one(func(c *Context) { c.Endpoint = "https://:8006" }), []string{`context "lab": endpoint:`, "no host"}},
		{"credentials in URL", one(func(c *Context) { c.Endpoint = "https://root:" + testSecret + "@pve:8006" }), []string{`context "lab": endpoint:`, "credentials"}},
		{"query", one(func(c *Context) { c.Endpoint = "https://pve:8006/?x=1" }), []string{`context "lab": endpoint:`, "query"}},
		{"no tokenId", one(func(c *Context) { c.TokenID = "" }), []string{`context "lab": tokenId: required`}},
		{"tokenId without token name", one(func(c *Context) { c.TokenID = "root@pam" }), []string{`context "lab": tokenId: "root@pam"`, "user@realm!name"}},
		{"tokenId without realm", one(func(c *Context) { c.TokenID = "root!openctl" }), []string{`context "lab": tokenId:`}},
		{"tokenId with the secret pasted", one(func(c *Context) { c.TokenID = "root@pam!openctl=" + testSecret }), []string{`context "lab": tokenId: "root@pam!openctl"`, "tokenSecret"}},
		{"no secret", one(func(c *Context) { c.TokenSecret = secret.Secret{} }), []string{`context "lab": tokenSecret: one of`}},
		{"both secrets", one(func(c *Context) { c.TokenSecretFile = "/x" }), []string{`context "lab": tokenSecret: set only one`}},
		{"secret with newline", one(func(c *Context) { c.TokenSecret = secret.New(testSecret + "\n") }), []string{`context "lab": tokenSecret: contains white space`}},
		{"bad fingerprint", one(func(c *Context) { c.Fingerprint = "AB:CD" }), []string{`context "lab": fingerprint:`, "64 hex digits"}},
		{"fingerprint and caFile", one(func(c *Context) { c.CAFile = "/ca.pem" }), []string{`context "lab": fingerprint: set at most one`, "fingerprint and caFile"}},
		{"caFile and insecure", one(func(c *Context) { c.Fingerprint = ""; c.CAFile = "/ca.pem"; c.InsecureSkipVerify = true }), []string{`context "lab": caFile: set at most one`}},
		{"fingerprint and insecure", one(func(c *Context) { c.InsecureSkipVerify = true }), []string{`context "lab": fingerprint: set at most one`, "insecureSkipVerify"}},
		{"bad node", one(func(c *Context) { c.Node = "pve_1" }), []string{`context "lab": node: "pve_1"`}},
		{"bad storage", one(func(c *Context) { c.Defaults.Storage = "Local LVM" }), []string{`context "lab": defaults.storage:`}},
		{"bad bridge", one(func(c *Context) { c.Defaults.Bridge = "vmbr 0" }), []string{`context "lab": defaults.bridge:`}},
		{"unknown default", Config{Contexts: map[string]Context{"lab": validContext()}, DefaultContext: "prod"}, []string{`defaultContext: "prod" is not a context (contexts: lab)`}},
		{"default required", Config{Contexts: map[string]Context{"lab": validContext(), "prod": validContext()}}, []string{"defaultContext: required", "lab, prod"}},
		{"negative limit", Config{Contexts: map[string]Context{"lab": validContext()}, Limits: Limits{PerNode: -1}}, []string{"limits.perNode"}},
		{"negative timeout", Config{Contexts: map[string]Context{"lab": validContext()}, Timeouts: Timeouts{Clone: -time.Second}}, []string{"timeouts.clone"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.cfg.Validate()
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, errcode.Is(err, errcode.Invalid), "want INVALID, got %v", err)
			assert.Equal(t, errcode.Invalid, errcode.Of(err))
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.True(t, strings.HasPrefix(err.Error(), "proxmox: "), err.Error())
			for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
				assert.NotContains(t, s, testSecret, "the token secret leaked")
			}
		})
	}
}

func TestConfigValidateListsEveryProblem(t *testing.T) {
	t.Parallel()
	cfg := Config{Contexts: map[string]Context{
		"a": {Endpoint: "http://x", TokenID: "root@pam!tok", TokenSecret: secret.New("s")},
		"b": {Endpoint: "https://x", TokenID: "nope", TokenSecret: secret.New("s")},
	}, DefaultContext: "a"}
	err := cfg.Validate()
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 2, err.Error())
	assert.Contains(t, lines[0], `proxmox: context "a": endpoint:`)
	assert.Contains(t, lines[1], `proxmox: context "b": tokenId:`)
}

func TestConfigPrintsNoSecret(t *testing.T) {
	t.Parallel()
	cfg := Config{Contexts: map[string]Context{"lab": validContext()}}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg)} {
		assert.NotContains(t, s, testSecret)
	}
	b, err := json.Marshal(validContext())
	require.NoError(t, err)
	assert.NotContains(t, string(b), testSecret)
	assert.Contains(t, string(b), `"tokenSecret":"[redacted]"`)
	assert.Contains(t, string(b), `"tokenId":"root@pam!openctl"`)
}

func TestContextName(t *testing.T) {
	t.Parallel()
	single := Config{Contexts: map[string]Context{"lab": validContext()}}
	multi := Config{Contexts: map[string]Context{"lab": validContext(), "prod": validContext()}, DefaultContext: "prod"}
	noDefault := Config{Contexts: map[string]Context{"lab": validContext(), "prod": validContext()}}

	for _, tc := range []struct {
		cfg        Config
		in, want   string
		wantErrSub string
	}{
		{single, "", "lab", ""},
		{single, "lab", "lab", ""},
		{multi, "", "prod", ""},
		{multi, "lab", "lab", ""},
		{multi, "staging", "", `unknown context "staging" (contexts: lab, prod)`},
		{noDefault, "", "", "no default context (contexts: lab, prod)"},
	} {
		got, err := tc.cfg.contextName(tc.in)
		if tc.wantErrSub != "" {
			require.Error(t, err)
			assert.True(t, errcode.Is(err, errcode.Invalid))
			assert.Contains(t, err.Error(), tc.wantErrSub)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, got)
	}
}

func TestWithDefaults(t *testing.T) {
	t.Parallel()
	assert.Equal(t, Timeouts{
		Clone: 10 * time.Minute, Config: 2 * time.Minute, Start: 5 * time.Minute, Stop: 2 * time.Minute,
		Shutdown: 3 * time.Minute, Reboot: 5 * time.Minute, Destroy: 5 * time.Minute, Resize: 2 * time.Minute,
		GuestAgent: 5 * time.Minute,
	}, Timeouts{}.withDefaults())
	got := Timeouts{Clone: time.Second, GuestAgent: time.Minute}.withDefaults()
	assert.Equal(t, time.Second, got.Clone)
	assert.Equal(t, time.Minute, got.GuestAgent)
	assert.Equal(t, 2*time.Minute, got.Config)

	assert.Equal(t, Limits{PerNode: 4, PerTemplate: 4}, Limits{}.withDefaults())
	assert.Equal(t, Limits{PerNode: 1, PerTemplate: 4}, Limits{PerNode: 1}.withDefaults())
}

func TestAPIBaseURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://pve:8006":                "https://pve:8006/api2/json",
		"https://pve:8006/":               "https://pve:8006/api2/json",
		"https://pve:8006/api2/json":      "https://pve:8006/api2/json",
		"https://pve:8006/api2/json/":     "https://pve:8006/api2/json",
		"https://proxy.example/pve":       "https://proxy.example/pve/api2/json",
		"https://[2001:db8::1]:8006":      "https://[2001:db8::1]:8006/api2/json",
		"https://10.0.0.5:8006/api2/json": "https://10.0.0.5:8006/api2/json",
	} {
		got, err := apiBaseURL(in, false)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
}

func TestParseFingerprint(t *testing.T) {
	t.Parallel()
	const hexFP = "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
	want, err := ParseFingerprint(hexFP)
	require.NoError(t, err)
	assert.Equal(t, byte(0xab), want[0])
	assert.Equal(t, byte(0x89), want[31])
	assert.Equal(t, testFP, formatFingerprint(want))

	for _, in := range []string{
		testFP,
		strings.ToLower(testFP),
		strings.ToUpper(hexFP),
		"sha256:" + hexFP,
		"SHA256:" + testFP,
		"sha256 Fingerprint=" + testFP,
		"SHA256 Fingerprint=" + testFP + "\n",
		"  " + testFP + "  ",
	} {
		got, err := ParseFingerprint(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}

	for _, tc := range []struct{ in, sub string }{
		{"", "empty"},
		{"sha256:", "empty"},
		{hexFP[:62], "got 62 hex digits"},
		{hexFP + "00", "got 66 hex digits"},
		{hexFP[:40], "SHA-1"},
		{strings.Replace(hexFP, "a", "g", 1), "not a hex digit"},
		{testFP[:len(testFP)-3] + ":ABC", "two hex digits"},
		{strings.Replace(testFP, ":", "", 1), "two hex digits"},
		{"md5:" + hexFP, `got "md5"`},
		{"root@pam!t", "not a hex digit"},
	} {
		_, err := ParseFingerprint(tc.in)
		require.Error(t, err, tc.in)
		assert.True(t, errcode.Is(err, errcode.Invalid), tc.in)
		assert.Contains(t, err.Error(), tc.sub, tc.in)
		assert.Contains(t, err.Error(), "64 hex digits", "the error says what is expected")
	}
}

func FuzzParseFingerprint(f *testing.F) {
	f.Add(testFP)
	f.Add("sha256 Fingerprint=" + testFP)
	f.Add("sha256:abcdef")
	f.Add(":::")
	f.Fuzz(func(t *testing.T, s string) {
		fp, err := ParseFingerprint(s)
		if err != nil {
			return
		}
		again, err := ParseFingerprint(formatFingerprint(fp))
		if err != nil || again != fp {
			t.Fatalf("%q parsed to %x, which does not round-trip: %v", s, fp, err)
		}
	})
}
