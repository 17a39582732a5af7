package config

import (
	"errors"
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
)

// fuzzSection is a provider section as a driver decodes it, with every
// kind of field Section.Decode supports.
type fuzzSection struct {
	DefaultContext string                     `yaml:"default-context"`
	Contexts       map[string]*fuzzContext    `yaml:"contexts"`
	Credentials    map[string]fuzzCredentials `yaml:"credentials"`
	Defaults       *struct {
		S string `yaml:"storage"`
	} `yaml:"defaults"`
	Raw *yaml.Node `yaml:"raw"`
}

type fuzzContext struct {
	Endpoint string            `yaml:"endpoint"`
	CAFile   string            `yaml:"caFile" openctl:"path"`
	Insecure bool              `yaml:"insecureSkipVerify"`
	Retries  int               `yaml:"retries"`
	Labels   map[string]string `yaml:"labels"`
}

type fuzzCredentials struct {
	TokenSecret secret.Secret `yaml:"tokenSecret"`
}

// requireConfigErrors fails unless err is made of *errcode.InputError values only,
// each an errcode.Invalid error.
func requireConfigErrors(t *testing.T, what string, err error) {
	t.Helper()
	parts := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		if _, isErr := err.(*errcode.InputError); !isErr {
			parts = j.Unwrap()
		}
	}
	for _, e := range parts {
		var ce *errcode.InputError
		if !errors.As(e, &ce) || ce != e {
			t.Fatalf("%s: %T is not a *errcode.InputError: %v", what, e, e)
		}
		if !errors.Is(e, errcode.Invalid) || errcode.Of(e) != errcode.Invalid {
			t.Fatalf("%s: not errcode.Invalid: %v", what, e)
		}
	}
	if len(Errors(err)) == 0 {
		t.Fatalf("%s: Errors found nothing in %v", what, err)
	}
}

// FuzzDecode checks that any file either decodes or fails with *errcode.InputError
// values matching errcode.Invalid, never panics; that its provider
// sections decode the same way; and that what Save writes loads again to
// the same configuration.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"",
		"providers:\n  proxmox:\n    default-context: lab\n    contexts:\n      lab: {endpoint: https://a:8006, credentials: t}\n    credentials:\n      t: {tokenId: root@pam!ci, tokenSecret: s3cret}\n    defaults: {storage: local-lvm}\n",
		"state: {backend: postgres, dsn: 'postgres://u:p@h/db'}\napply: {concurrency: 3}\n",
		"state: {backend: file, dir: ~/st}\n",
		"state: {dsn: 'file:rel/state'}\n",
		"a: &x {b: *x}\n",
		"providers: {p: {contexts: {\"a.b\": ~, c: {insecureSkipVerify: true}}}}\n",
		"apply:\n  concurrency: 99999999999999999999999\n",
		"- 1\n- 2\n",
		"providers: !!binary aGVsbG8=\n",
		"providers: {}\n",
		"providers: {p: {contexts: {}, defaults: {}}}\n",
		"providers: {p: {credentials: {t: {tokenSecret: '[redacted]'}}, raw: [1, {a: b}]}}\n",
		"# comment\nproviders: # p\n  p:\n    default-context: x # trailing\n",
		"apply: {}\n---\napply: {}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		getenv := func(k string) string {
			if k == "HOME" {
				return "/home/fuzz"
			}
			return ""
		}
		c := &Config{Path: "/fuzz/config.yaml", meta: meta{pos: map[string]position{}, getenv: getenv}}
		if _, err := c.decode("/fuzz/config.yaml", data); err != nil {
			requireConfigErrors(t, "decode", err)
			return
		}
		for _, name := range c.ProviderNames() {
			var s fuzzSection
			if err := c.Section(name).Decode(&s); err != nil {
				requireConfigErrors(t, "section "+name, err)
			}
			_ = c.Section(name).Errorf("contexts.x.endpoint", "checked")
		}
		if c.meta.doc == nil {
			return
		}
		// Save's encoding loads again, to the same values.
		for _, name := range c.ProviderNames() {
			if n := c.meta.sections[name]; n == nil || n.Kind != yaml.MappingNode {
				continue
			}
			if c.UseContext(name, "fuzz") != nil {
				t.Fatalf("UseContext on section %q of the file failed", name)
			}
		}
		out, err := yaml.Marshal(c.meta.doc)
		if err != nil {
			t.Fatalf("encoding: %v", err)
		}
		again := &Config{meta: meta{pos: map[string]position{}, getenv: getenv}}
		if _, err := again.decode("/fuzz/config.yaml", out); err != nil {
			t.Fatalf("decoding what Save writes: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(c.ProviderNames(), again.ProviderNames()) || c.Apply != again.Apply || !c.State.DSN.Equal(again.State.DSN) {
			t.Fatalf("round trip changed the configuration:\n%s", out)
		}
	})
}
