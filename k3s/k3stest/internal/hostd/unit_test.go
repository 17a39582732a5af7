package main

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`/usr/local/bin/k3s     server  '--token' 'a b'`, []string{"/usr/local/bin/k3s", "server", "--token", "a b"}},
		{`"GREETING=hello world" A=b`, []string{"GREETING=hello world", "A=b"}},
		{`a\ b "c\"d"`, []string{"a b", `c"d`}},
		{``, nil},
	} {
		got, err := splitWords(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
	_, err := splitWords(`'unterminated`)
	assert.Error(t, err)
}

func TestParseSpan(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"0": 0, "5": 5 * time.Second, "5s": 5 * time.Second, "100ms": 100 * time.Millisecond,
		"1min 30s": 90 * time.Second, "infinity": 0, "2h": 2 * time.Hour,
	} {
		got, err := parseSpan(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := parseSpan("5 parsecs")
	assert.Error(t, err)
}

func TestParseUnit(t *testing.T) {
	d := &serviceDef{name: "k3s.service", typ: "simple", restart: "no"}
	require.NoError(t, d.parse([]byte(`[Unit]
Description=Lightweight Kubernetes
[Service]
Type=notify
EnvironmentFile=-/etc/default/%N
EnvironmentFile=-/etc/systemd/system/k3s.service.env
TimeoutStartSec=0
Restart=always
RestartSec=5s
ExecStartPre=/bin/sh -xc '! /usr/bin/systemctl is-enabled --quiet nm-cloud-setup.service 2>/dev/null'
ExecStartPre=-/sbin/modprobe br_netfilter
ExecStart=/usr/local/bin/k3s \
    server \
	'--cluster-init' \

[Install]
WantedBy=multi-user.target
`)))
	assert.Equal(t, "notify", d.typ)
	assert.Equal(t, []envFile{{"/etc/default/k3s", true}, {"/etc/systemd/system/k3s.service.env", true}}, d.envFiles)
	assert.Equal(t, time.Duration(0), d.startTO)
	assert.Equal(t, "always", d.restart)
	assert.Equal(t, 5*time.Second, d.restartSec)
	require.Len(t, d.preStart, 2)
	assert.Equal(t, []string{"/bin/sh", "-xc", "! /usr/bin/systemctl is-enabled --quiet nm-cloud-setup.service 2>/dev/null"}, d.preStart[0].argv)
	assert.True(t, d.preStart[1].ignoreFailure)
	assert.Equal(t, []string{"/usr/local/bin/k3s", "server", "--cluster-init"}, d.start.argv)
	assert.Equal(t, []string{"multi-user.target"}, d.wantedBy)
}

func TestReadEnvFile(t *testing.T) {
	p := t.TempDir() + "/env"
	require.NoError(t, writeTestFile(p, "# comment\nK3S_TOKEN='abc::server:x'\nK3S_URL=\"https://10.0.0.1:6443\"\n\nPLAIN=v\n"))
	env, err := readEnvFile(p)
	require.NoError(t, err)
	assert.Equal(t, []string{"K3S_TOKEN=abc::server:x", "K3S_URL=https://10.0.0.1:6443", "PLAIN=v"}, env)
}

func FuzzParseUnit(f *testing.F) {
	f.Add([]byte("[Service]\nExecStart=/bin/true 'a' \"b\" \\\n c\nRestartSec=1min 5s\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := &serviceDef{name: "x.service"}
		_ = d.parse(b) // must not panic
	})
}

func writeTestFile(p, s string) error { return os.WriteFile(p, []byte(s), 0o600) }
