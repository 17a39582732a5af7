package config

import (
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzDecode checks that any input either decodes or fails with *Error
// values, never panics, and that what decodes survives Save's encoding.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"",
		"providers:\n  proxmox:\n    default-context: lab\n    contexts:\n      lab: {endpoint: https://a:8006, credentials: t}\n    credentials:\n      t: {tokenId: root@pam!ci, tokenSecret: s3cret}\n    defaults: {storage: local-lvm}\n",
		"state: {backend: postgres, dsn: 'postgres://u:p@h/db'}\napply: {concurrency: 3}\n",
		"a: &x {b: *x}\n",
		"providers: {p: {contexts: {\"a.b\": ~, c: {insecureSkipVerify: true}}}}\n",
		"apply:\n  concurrency: 99999999999999999999999\n",
		"- 1\n- 2\n",
		"providers: !!binary aGVsbG8=\n",
		"providers: {}\n",
		"providers: {p: {contexts: {}, defaults: {}}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &Config{meta: meta{pos: map[string]position{}}}
		err := c.decode("fuzz.yaml", data)
		if err != nil {
			if len(Errors(err)) == 0 {
				t.Fatalf("error without *Error: %v", err)
			}
			return
		}
		out, err := yaml.Marshal(c.fileForm())
		if err != nil {
			t.Fatalf("encoding: %v", err)
		}
		again := &Config{meta: meta{pos: map[string]position{}}}
		if err := again.decode("again.yaml", out); err != nil {
			t.Fatalf("decoding what Save writes: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(c.Providers, again.Providers) || c.State != again.State || c.Apply != again.Apply {
			t.Fatalf("round trip changed the configuration:\n%s", out)
		}
	})
}
