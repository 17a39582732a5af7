package plugin_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/plugin"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/registry/providertest"
)

var thing = manifest.ID{APIVersion: "fake.openctl.io/v1", Kind: "Thing", Name: "a"}

func echoCaps(caps string) string { return "cat <<'EOF'\n" + caps + "\nEOF" }

// fake loads a scripted plugin "fake" answering every request with body.
func fake(t *testing.T, body string, opts plugin.Options, cfg *plugin.Config) *plugin.Provider {
	t.Helper()
	path := script(t, t.TempDir(), "fake", echoCaps(capsJSON), body)
	p, err := plugin.Load(t.Context(), path, opts)
	require.NoError(t, err)
	return plugin.New(p, cfg, opts)
}

func TestDiscover(t *testing.T) {
	home, bin := t.TempDir(), t.TempDir()
	env := map[string]string{"OPENCTL_HOME": home, "PATH": bin}
	dirs := plugin.Dirs(func(k string) string { return env[k] })
	require.Equal(t, []string{filepath.Join(home, "plugins"), bin}, dirs)
	require.NoError(t, os.MkdirAll(filepath.Join(home, "plugins"), 0o755))
	homeFake := script(t, filepath.Join(home, "plugins"), "fake", echoCaps(capsJSON), "")
	script(t, bin, "fake", echoCaps(capsJSON), "")                                                       // shadowed
	script(t, bin, "old", echoCaps(strings.ReplaceAll(capsJSON, `"fake"`, `"old"`)), "")                 // fine
	require.NoError(t, os.WriteFile(filepath.Join(bin, "openctl-noexec"), []byte("#!/bin/sh\n"), 0o644)) // skipped
	script(t, bin, "v2", echoCaps(strings.NewReplacer(`"fake"`, `"v2"`, `"1.0"`, `"2.0"`).Replace(capsJSON)), "")

	ps, err := plugin.Discover(t.Context(), dirs, plugin.Options{})
	require.Len(t, ps, 2)
	assert.Equal(t, "fake", ps[0].Name())
	assert.Equal(t, homeFake, ps[0].Path, "$OPENCTL_HOME/plugins wins over $PATH")
	assert.Equal(t, "old", ps[1].Name())
	var ve *plugin.VersionError
	require.ErrorAs(t, err, &ve, "the bad plugin is reported, the good ones kept")
	assert.Contains(t, err.Error(), filepath.Join(bin, "openctl-v2"))
	assert.Contains(t, err.Error(), `"2.0"`)
	assert.Contains(t, err.Error(), plugin.ProtocolVersion)
	assert.ErrorIs(t, err, errcode.Invalid)
}

func TestLoadFailures(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, file, caps string
		want             string
	}{
		{"missing", "openctl-missing", "", "no such file"},
		{"extra field", "openctl-fake", strings.Replace(capsJSON, `{"providerName"`, `{"extra":1,"providerName"`, 1), `unknown field "extra"`},
		{"garbage", "openctl-fake", "echo hello", `output starting "hello\n"`},
		{"name mismatch", "openctl-other", capsJSON, `declares provider "fake"`},
		{"crash", "openctl-fake", "echo boom >&2; exit 3", "boom"},
		{"bad action", "openctl-fake", strings.Replace(capsJSON, `"list"`, `"frob"`, 1), `unknown action "frob"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.file)
			if tt.caps != "" {
				c := tt.caps
				if strings.HasPrefix(c, "{") {
					c = echoCaps(c)
				}
				path = script(t, t.TempDir(), strings.TrimPrefix(tt.file, "openctl-"), c, "")
			}
			_, err := plugin.Load(t.Context(), path, plugin.Options{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), path)
		})
	}
	t.Run("not executable", func(t *testing.T) {
		path := filepath.Join(dir, "openctl-plain")
		require.NoError(t, os.WriteFile(path, []byte(capsJSON), 0o644))
		_, err := plugin.Load(t.Context(), path, plugin.Options{})
		require.ErrorIs(t, err, errcode.Invalid)
		assert.Contains(t, err.Error(), "not an executable")
	})
	t.Run("capabilities timeout", func(t *testing.T) {
		path := script(t, t.TempDir(), "fake", "exec sleep 30", "")
		start := time.Now()
		_, err := plugin.Load(t.Context(), path, plugin.Options{CapabilitiesTimeout: 200 * time.Millisecond})
		require.Error(t, err)
		assert.Less(t, time.Since(start), 10*time.Second)
		assert.Contains(t, err.Error(), "no answer within 200ms")
	})
}

func TestCallFailureModes(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		opts  plugin.Options
		code  errcode.Code
		is    error
		wants []string
	}{
		{name: "crash without response", body: "echo 'panic: boom' >&2; exit 2", code: errcode.Internal, wants: []string{"exit status 2", "panic: boom"}},
		{name: "exit 0 without response", body: "exit 0", code: errcode.Internal, wants: []string{"without a response"}},
		{name: "invalid JSON", body: "echo 'Traceback (most recent call last):'", code: errcode.Internal, is: plugin.ErrProtocol, wants: []string{`starting "Traceback`}},
		{name: "extra fields", body: `echo '{"status":"success","resource":{"apiVersion":"fake.openctl.io/v1","kind":"Thing","metadata":{"name":"a"}},"bonus":1}'`, code: errcode.Internal, is: plugin.ErrProtocol, wants: []string{`unknown field "bonus"`}},
		{name: "two documents", body: `echo '{"status":"success"}{"status":"success"}'`, code: errcode.Internal, is: plugin.ErrProtocol, wants: []string{"more than one JSON document"}},
		{name: "bad status", body: `echo '{"status":"ok"}'`, code: errcode.Internal, is: plugin.ErrProtocol, wants: []string{`status "ok"`}},
		{name: "no resource", body: `echo '{"status":"success"}'`, code: errcode.Internal, is: plugin.ErrProtocol, wants: []string{"no resource"}},
		{name: "too large", body: `cat >/dev/null; yes '{"status":"success"}' | head -c 100000`, opts: plugin.Options{MaxResponse: 4096}, code: errcode.Internal, is: plugin.ErrTooLarge, wants: []string{"more than 4096 bytes"}},
		{name: "timeout", body: "exec sleep 30", opts: plugin.Options{Timeout: 200 * time.Millisecond}, code: errcode.Internal, is: context.DeadlineExceeded, wants: []string{"no answer within 200ms"}},
		{name: "not found", body: `echo '{"status":"error","error":{"code":"NOT_FOUND","message":"no thing a","details":"looked everywhere"}}'`, code: errcode.NotFound, wants: []string{"plugin fake: NOT_FOUND: no thing a (looked everywhere)"}},
		{name: "already exists", body: `echo '{"status":"error","error":{"code":"ALREADY_EXISTS","message":"m"}}'`, code: errcode.AlreadyExists},
		{name: "invalid", body: `echo '{"status":"error","error":{"code":"INVALID_REQUEST","message":"m"}}'`, code: errcode.Invalid},
		{name: "unauthorized", body: `echo '{"status":"error","error":{"code":"UNAUTHORIZED","message":"m"}}'`, code: errcode.Unauthorized},
		{name: "internal", body: `echo '{"status":"error","error":{"code":"INTERNAL","message":"m"}}'`, code: errcode.Internal},
		{name: "unknown code", body: `echo '{"status":"error","error":{"code":"QUOTA_EXCEEDED","message":"m"}}'`, code: errcode.Internal, wants: []string{"QUOTA_EXCEEDED"}},
		{name: "error without code", body: `echo '{"status":"error","error":{"message":"m"}}'`, code: errcode.Internal, is: plugin.ErrProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fake(t, tt.body, tt.opts, nil)
			start := time.Now()
			_, err := p.Get(t.Context(), thing)
			require.Error(t, err)
			assert.Less(t, time.Since(start), 10*time.Second, "a hung plugin is killed")
			assert.Equal(t, tt.code, errcode.Of(err), "%v", err)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
			for _, w := range tt.wants {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	t.Run("details and wire code kept", func(t *testing.T) {
		p := fake(t, `echo '{"status":"error","error":{"code":"QUOTA_EXCEEDED","message":"m","details":"d"}}'`, plugin.Options{}, nil)
		_, err := p.Get(t.Context(), thing)
		var pe *plugin.Error
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, plugin.Error{Plugin: "fake", Code: errcode.Internal, Wire: "QUOTA_EXCEEDED", Message: "m", Details: "d"}, *pe)
	})
	t.Run("stderr noise", func(t *testing.T) {
		var log bytes.Buffer
		p := fake(t, `echo 'starting up...' >&2; echo '{"status":"success","resource":{"metadata":{"name":"a"},"status":{"ok":true}}}'; echo 'done' >&2`,
			plugin.Options{Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))}, nil)
		r, err := p.Get(t.Context(), thing)
		require.NoError(t, err)
		assert.Equal(t, thing, r.ID(), "identity filled in")
		assert.Equal(t, true, r.Status["ok"])
		assert.Contains(t, log.String(), "starting up...")
	})
	t.Run("timeout kills the process group", func(t *testing.T) {
		pidFile := filepath.Join(t.TempDir(), "pid")
		p := fake(t, "sleep 30 & echo $! >"+pidFile+"; wait", plugin.Options{Timeout: 300 * time.Millisecond}, nil)
		_, err := p.Get(t.Context(), thing)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		data, err := os.ReadFile(pidFile)
		require.NoError(t, err)
		stat := "/proc/" + strings.TrimSpace(string(data)) + "/stat"
		require.Eventually(t, func() bool {
			b, err := os.ReadFile(stat)
			// Gone, or a zombie nobody has reaped yet: not running.
			return err != nil || strings.Contains(string(b), ") Z ")
		}, 5*time.Second, 20*time.Millisecond, "the plugin's background child is killed with it")
	})
	t.Run("cancelled", func(t *testing.T) {
		p := fake(t, "exec sleep 30", plugin.Options{}, nil)
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		_, err := p.Get(ctx, thing)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestSecretsNeverShown(t *testing.T) {
	const tok = "s3cr3t-t0ken-value"
	const pw = "hunter2-password"
	cfg := plugin.NewConfig(map[string]any{
		"endpoint":    "https://pve.example.com",
		"tokenId":     "root@pam!openctl",
		"tokenSecret": tok,
		"nested":      map[string]any{"password": pw},
	})
	bodies := map[string]string{
		"stderr echo and crash": `cat >&2; exit 1`,
		"error message":         `echo '{"status":"error","error":{"code":"UNAUTHORIZED","message":"token ` + tok + ` refused","details":"pw ` + pw + `"}}'`,
		"garbage output":        `cat`,
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			var log bytes.Buffer
			p := fake(t, body, plugin.Options{Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))}, cfg)
			_, err := p.Get(t.Context(), thing)
			require.Error(t, err)
			for _, s := range []string{tok, pw} {
				assert.NotContains(t, err.Error(), s)
				assert.NotContains(t, log.String(), s)
			}
		})
	}
	t.Run("config view", func(t *testing.T) {
		s := cfg.String()
		assert.NotContains(t, s, tok)
		assert.NotContains(t, s, pw)
		assert.Contains(t, s, "root@pam!openctl", "tokenId is not a secret")
	})
}

func TestConfigPassedThrough(t *testing.T) {
	// The plugin answers with the request it got as the resource's status.
	body := `req=$(cat); printf '{"status":"success","resource":{"metadata":{"name":"a"},"status":{"request":%s}}}' "$req"`
	p := fake(t, body, plugin.Options{}, plugin.NewConfig(map[string]any{"dir": "/x", "defaults": map[string]any{"storage": "local"}}))
	r, err := p.Get(t.Context(), thing)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"version": "1.0", "action": "get", "resourceType": "Thing", "resourceName": "a",
		"config":            map[string]any{"dir": "/x", "defaults": map[string]any{"storage": "local"}},
		"continuationToken": "", "dispatchResults": []any{},
	}, r.Status["request"])
}

func TestConformanceNotes(t *testing.T) {
	p, err := plugin.Load(t.Context(), notesPlugin(t), plugin.Options{})
	require.NoError(t, err)
	prov := plugin.New(p, plugin.NewConfig(map[string]any{"dir": t.TempDir()}), plugin.Options{})
	providertest.RunConformance(t, prov, providertest.Options{
		NewResource: func(name string) *manifest.Resource {
			return &manifest.Resource{APIVersion: "notes.openctl.io/v1", Kind: "Note", Metadata: manifest.Metadata{Name: name}, Spec: map[string]any{"text": "hello " + name}}
		},
		Mutate: func(r *manifest.Resource) *manifest.Resource {
			r = r.DeepCopy()
			r.Spec["text"] = "changed"
			return r
		},
	})
}

func TestDispatch(t *testing.T) {
	notes, err := plugin.Load(t.Context(), notesPlugin(t), plugin.Options{})
	require.NoError(t, err)
	var reg registry.Registry
	require.NoError(t, reg.Register(plugin.New(notes, plugin.NewConfig(map[string]any{"dir": t.TempDir()}), plugin.Options{})))

	// Round 1 asks for a Note and waits for it; round 2 (token "notes-made")
	// answers with what it got back.
	body := `req=$(cat)
case $req in
*'"continuationToken":"notes-made"'*)
	printf '{"status":"success","resource":{"metadata":{"name":"a"},"status":{"got":%s}}}' "$(printf '%s' "$req" | sed 's/.*"dispatchResults"://; s/}$//')" ;;
*)
	echo '{"status":"success","message":"making notes","dispatchRequests":[{"id":"n1","provider":"notes","action":"create","resourceType":"Note","manifest":{"apiVersion":"notes.openctl.io/v1","kind":"Note","metadata":{"name":"child"},"spec":{"text":"hi"}},"waitFor":{"field":"status.state","value":"written","timeout":"5s"}},{"id":"bad","provider":"nope","action":"create","resourceType":"X","manifest":{"apiVersion":"nope.openctl.io/v1","kind":"X","metadata":{"name":"x"}}}],"continuation":{"token":"notes-made"}}' ;;
esac`
	p := fake(t, body, plugin.Options{Dispatcher: plugin.RegistryDispatcher{Registry: &reg}}, nil)
	r, err := p.Apply(t.Context(), &manifest.Resource{APIVersion: thing.APIVersion, Kind: "Thing", Metadata: manifest.Metadata{Name: "a"}})
	require.NoError(t, err)
	got, _ := r.Status["got"].([]any)
	require.Len(t, got, 2)
	ok := got[0].(map[string]any)
	assert.Equal(t, "n1", ok["id"])
	assert.Equal(t, "success", ok["status"])
	assert.Equal(t, "written", ok["resource"].(map[string]any)["status"].(map[string]any)["state"])
	bad := got[1].(map[string]any)
	assert.Equal(t, "error", bad["status"])
	assert.Equal(t, "INVALID_REQUEST", bad["error"].(map[string]any)["code"])

	t.Run("no dispatcher", func(t *testing.T) {
		p := fake(t, body, plugin.Options{}, nil)
		_, err := p.Apply(t.Context(), &manifest.Resource{APIVersion: thing.APIVersion, Kind: "Thing", Metadata: manifest.Metadata{Name: "a"}})
		require.ErrorIs(t, err, errcode.Invalid)
	})
	t.Run("rounds bounded", func(t *testing.T) {
		loop := `echo '{"status":"success","dispatchRequests":[{"id":"n1","provider":"notes","action":"create","resourceType":"Note","manifest":{"apiVersion":"notes.openctl.io/v1","kind":"Note","metadata":{"name":"child"},"spec":{}}}],"continuation":{"token":"again"}}'`
		p := fake(t, loop, plugin.Options{Dispatcher: plugin.RegistryDispatcher{Registry: &reg}, MaxRounds: 3}, nil)
		_, err := p.Apply(t.Context(), &manifest.Resource{APIVersion: thing.APIVersion, Kind: "Thing", Metadata: manifest.Metadata{Name: "a"}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "after 3 rounds")
	})
}
