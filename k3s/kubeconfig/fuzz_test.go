package kubeconfig_test

import (
	"bytes"
	"testing"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/k3s/kubeconfig"
)

// FuzzRewrite feeds Rewrite arbitrary kubeconfigs, servers and names. It
// must never panic; an error must be Invalid; a result must be a
// kubeconfig with one cluster, user and context, all named name, whose
// server is server, and rewriting it again must change nothing. The seeds
// (f.Add and testdata/fuzz/FuzzRewrite) run in the normal suite.
func FuzzRewrite(f *testing.F) {
	f.Add([]byte(k3sYAML), "https://10.0.0.10:6443", "lab")
	f.Add([]byte(k3sYAML), "https://[::1]:6443/", "default")
	f.Add([]byte(k3sYAML), "http://x", "a b")
	f.Add([]byte(""), "https://x:1", "x")
	f.Add([]byte("{}"), "https://x:1", "x")
	f.Add([]byte("kind: Config\napiVersion: v1\ncontexts:\n- name: a\n"), "https://x:1", "x")
	f.Add([]byte("kind: Config\napiVersion: v1\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\nclusters:\n- name: c\nusers:\n- name: u\n"), "https://x:1", "x")
	f.Add([]byte(`{"kind":"Config","apiVersion":"v1","contexts":[{"name":"a","context":{"cluster":"a","user":"a"}}],"clusters":[{"name":"a","cluster":{"server":"s"}}],"users":[{"name":"a","user":{}}]}`), "https://h", "n")
	f.Fuzz(func(t *testing.T, data []byte, server, name string) {
		out, err := kubeconfig.Rewrite(data, server, name)
		if err != nil {
			if !errcode.Is(err, errcode.Invalid) {
				t.Fatalf("error not Invalid: %v", err)
			}
			if out != nil {
				t.Fatal("output with an error")
			}
			return
		}
		cfg := loadConfig(t, out)
		if len(cfg.Clusters) != 1 || len(cfg.AuthInfos) != 1 || len(cfg.Contexts) != 1 {
			t.Fatalf("want one of each, got %d clusters, %d users, %d contexts", len(cfg.Clusters), len(cfg.AuthInfos), len(cfg.Contexts))
		}
		c, ok := cfg.Contexts[name]
		if !ok || c.Cluster != name || c.AuthInfo != name || cfg.CurrentContext != name {
			t.Fatalf("context not renamed to %q: %+v, current %q", name, cfg.Contexts, cfg.CurrentContext)
		}
		if cl, ok := cfg.Clusters[name]; !ok || cl.Server != server {
			t.Fatalf("cluster %q: %+v", name, cfg.Clusters)
		}
		if _, ok := cfg.AuthInfos[name]; !ok {
			t.Fatalf("user %q missing", name)
		}
		again, err := kubeconfig.Rewrite(out, server, name)
		if err != nil {
			t.Fatalf("rewriting the output: %v", err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("not idempotent:\n%s\n---\n%s", out, again)
		}
	})
}
