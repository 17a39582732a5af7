package agent_test

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/errcode"
)

func TestSystemdUnitDefaults(t *testing.T) {
	got, err := agent.SystemdUnit(agent.InstallOptions{})
	require.NoError(t, err)
	assert.Equal(t, `# Managed by openctl: changes are overwritten on reinstall.
[Unit]
Description=openctl node agent
Documentation=https://github.com/openctl/openctl
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
ExecStart=/usr/local/bin/openctl-agent --listen :9443 --ca /etc/openctl-agent/ca.pem --cert /etc/openctl-agent/server.pem --key /etc/openctl-agent/server.key
ExecReload=/bin/kill -HUP $MAINPID
Restart=always
RestartSec=5s
TimeoutStopSec=60s

[Install]
WantedBy=multi-user.target
`, string(got))
}

func TestOpenRCScriptDefaults(t *testing.T) {
	got, err := agent.OpenRCScript(agent.InstallOptions{})
	require.NoError(t, err)
	assert.Equal(t, `#!/sbin/openrc-run
# Managed by openctl: changes are overwritten on reinstall.

name="openctl-agent"
description="openctl node agent"
supervisor=supervise-daemon
command='/usr/local/bin/openctl-agent'
command_args="--listen ':9443' --ca '/etc/openctl-agent/ca.pem' --cert '/etc/openctl-agent/server.pem' --key '/etc/openctl-agent/server.key'"
output_log='/var/log/openctl-agent.log'
error_log='/var/log/openctl-agent.log'
respawn_delay=5
respawn_max=0
retry="TERM/60/KILL/5"
extra_started_commands="reload"

depend() {
	need net
	after firewall
}

reload() {
	ebegin "Reloading ${name} credentials"
	supervise-daemon "${RC_SVCNAME}" --signal HUP
	eend $?
}
`, string(got))
}

func TestRenderCustomOptions(t *testing.T) {
	opts := agent.InstallOptions{
		BinaryPath: "/opt/openctl/bin/openctl-agent",
		ConfigDir:  "/opt/openctl/etc",
		Listen:     "[fd00::10]:10443",
		ReleaseURL: "https://mirror.example.com/k3s/releases%2Fdownload",
	}
	unit, err := agent.SystemdUnit(opts)
	require.NoError(t, err)
	assert.Contains(t, string(unit), "\nExecStart=/opt/openctl/bin/openctl-agent --listen [fd00::10]:10443 --ca /opt/openctl/etc/ca.pem --cert /opt/openctl/etc/server.pem --key /opt/openctl/etc/server.key --release-url \"https://mirror.example.com/k3s/releases%%2Fdownload\"\n",
		"%% keeps systemd from reading a specifier")

	script, err := agent.OpenRCScript(opts)
	require.NoError(t, err)
	assert.Contains(t, string(script), "\ncommand='/opt/openctl/bin/openctl-agent'\n")
	assert.Contains(t, string(script), "\ncommand_args=\"--listen '[fd00::10]:10443' --ca '/opt/openctl/etc/ca.pem' --cert '/opt/openctl/etc/server.pem' --key '/opt/openctl/etc/server.key' --release-url 'https://mirror.example.com/k3s/releases%2Fdownload'\"\n")

	plain, err := agent.SystemdUnit(agent.InstallOptions{ReleaseURL: "http://10.0.0.1:8080/k3s"})
	require.NoError(t, err)
	assert.Contains(t, string(plain), " --release-url http://10.0.0.1:8080/k3s\n")

	withHealth := agent.InstallOptions{ReleaseURL: "http://10.0.0.1:8080/k3s", HealthTimeout: 90 * time.Second}
	unit, err = agent.SystemdUnit(withHealth)
	require.NoError(t, err)
	assert.Contains(t, string(unit), " --release-url http://10.0.0.1:8080/k3s --health-timeout 90s\n")
	script, err = agent.OpenRCScript(withHealth)
	require.NoError(t, err)
	assert.Contains(t, string(script), " --release-url 'http://10.0.0.1:8080/k3s' --health-timeout '90s'\"\n")
}

func TestRenderRejectsInjection(t *testing.T) {
	tests := []struct {
		name string
		opts agent.InstallOptions
	}{
		{"listen with space", agent.InstallOptions{Listen: ":9443 --ca /tmp/evil.pem"}},
		{"listen with newline", agent.InstallOptions{Listen: ":9443\nExecStartPre=/bin/rm -rf /"}},
		{"listen with quote", agent.InstallOptions{Listen: `":9443`}},
		{"listen shell", agent.InstallOptions{Listen: "$(reboot):9443"}},
		{"listen bad host", agent.InstallOptions{Listen: "a_b:9443"}},
		{"listen no port", agent.InstallOptions{Listen: "0.0.0.0"}},
		{"listen port zero", agent.InstallOptions{Listen: ":0"}},
		{"listen port too big", agent.InstallOptions{Listen: ":65536"}},
		{"listen port name", agent.InstallOptions{Listen: ":https"}},
		{"listen port leading zero", agent.InstallOptions{Listen: ":09443"}},
		{"listen zone", agent.InstallOptions{Listen: "[fe80::1%eth0]:9443"}},
		{"url with space", agent.InstallOptions{ReleaseURL: "https://example.com/a b"}},
		{"url with newline", agent.InstallOptions{ReleaseURL: "https://example.com/\n[Service]"}},
		{"url with single quote", agent.InstallOptions{ReleaseURL: "https://example.com/'; reboot; '"}},
		{"url with double quote", agent.InstallOptions{ReleaseURL: `https://example.com/" --key "/tmp/x`}},
		{"url with dollar", agent.InstallOptions{ReleaseURL: "https://example.com/$(reboot)"}},
		{"url with backtick", agent.InstallOptions{ReleaseURL: "https://example.com/`reboot`"}},
		{"url with backslash", agent.InstallOptions{ReleaseURL: `https://example.com/\x`}},
		{"url with tab", agent.InstallOptions{ReleaseURL: "https://example.com/\tx"}},
		{"url non-ascii", agent.InstallOptions{ReleaseURL: "https://exämple.com/k3s"}},
		{"url scheme", agent.InstallOptions{ReleaseURL: "file:///etc/passwd"}},
		{"url no scheme", agent.InstallOptions{ReleaseURL: "example.com/k3s"}},
		{"url no host", agent.InstallOptions{ReleaseURL: "https:///k3s"}},
		{"url user info", agent.InstallOptions{ReleaseURL: "https://user:pw@example.com/k3s"}},
		{"url query", agent.InstallOptions{ReleaseURL: "https://example.com/k3s?x=1"}},
		{"url empty query", agent.InstallOptions{ReleaseURL: "https://example.com/k3s?"}},
		{"url fragment", agent.InstallOptions{ReleaseURL: "https://example.com/k3s#x"}},
		{"negative health timeout", agent.InstallOptions{HealthTimeout: -time.Second}},
		{"health timeout under a second", agent.InstallOptions{HealthTimeout: 500 * time.Millisecond}},
		{"health timeout not whole seconds", agent.InstallOptions{HealthTimeout: 1500 * time.Millisecond}},
		{"health timeout over the maximum", agent.InstallOptions{HealthTimeout: agent.MaxHealthTimeout + time.Second}},
		{"binary relative", agent.InstallOptions{BinaryPath: "usr/local/bin/openctl-agent"}},
		{"binary with space", agent.InstallOptions{BinaryPath: "/usr/local/bin/openctl agent"}},
		{"binary with dotdot", agent.InstallOptions{BinaryPath: "/usr/local/../bin/openctl-agent"}},
		{"binary with percent", agent.InstallOptions{BinaryPath: "/usr/local/bin/%n"}},
		{"binary with semicolon", agent.InstallOptions{BinaryPath: "/usr/local/bin/a;reboot"}},
		{"config dir not clean", agent.InstallOptions{ConfigDir: "/etc/openctl-agent/"}},
		{"config dir root", agent.InstallOptions{ConfigDir: "/"}},
		{"config dir quote", agent.InstallOptions{ConfigDir: "/etc/'x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agent.SystemdUnit(tt.opts)
			require.ErrorIs(t, err, errcode.Invalid)
			assert.True(t, strings.HasPrefix(err.Error(), "agent: install: "), err.Error())
			_, err = agent.OpenRCScript(tt.opts)
			require.ErrorIs(t, err, errcode.Invalid)
			for _, init := range []agent.InitSystem{agent.Systemd, agent.OpenRC} {
				tt.opts.Init = init
				_, err = agent.InstallFiles(tt.opts)
				require.ErrorIs(t, err, errcode.Invalid)
			}
		})
	}
}

func TestRenderAcceptsListenForms(t *testing.T) {
	for _, l := range []string{":9443", "0.0.0.0:9443", "192.168.1.50:9443", "[::]:9443", "[fd00::1]:1", "node-1.example.com:65535", "localhost:9443"} {
		t.Run(l, func(t *testing.T) {
			_, err := agent.SystemdUnit(agent.InstallOptions{Listen: l})
			require.NoError(t, err)
		})
	}
}

func TestInstallFiles(t *testing.T) {
	tests := []struct {
		init    agent.InitSystem
		svcPath string
		svcMode fs.FileMode
		render  func(agent.InstallOptions) ([]byte, error)
	}{
		{agent.Systemd, "/etc/systemd/system/openctl-agent.service", 0o644, agent.SystemdUnit},
		{agent.OpenRC, "/etc/init.d/openctl-agent", 0o755, agent.OpenRCScript},
	}
	for _, tt := range tests {
		t.Run(string(tt.init), func(t *testing.T) {
			opts := agent.InstallOptions{Init: tt.init, ReleaseURL: "https://example.com/k3s"}
			files, err := agent.InstallFiles(opts)
			require.NoError(t, err)
			want, err := tt.render(opts)
			require.NoError(t, err)
			assert.Equal(t, []agent.InstallFile{
				{Path: "/etc/openctl-agent", Mode: fs.ModeDir | 0o700, Owner: "root", Group: "root", Kind: agent.KindDir},
				{Path: "/usr/local/bin/openctl-agent", Mode: 0o755, Owner: "root", Group: "root", Kind: agent.KindBinary},
				{Path: "/etc/openctl-agent/ca.pem", Mode: 0o600, Owner: "root", Group: "root", Kind: agent.KindCA},
				{Path: "/etc/openctl-agent/server.pem", Mode: 0o600, Owner: "root", Group: "root", Kind: agent.KindServerCert},
				{Path: "/etc/openctl-agent/server.key", Mode: 0o600, Owner: "root", Group: "root", Kind: agent.KindServerKey},
				{Path: tt.svcPath, Mode: tt.svcMode, Owner: "root", Group: "root", Kind: agent.KindService, Content: want},
			}, files)
		})
	}
	t.Run("custom paths", func(t *testing.T) {
		files, err := agent.InstallFiles(agent.InstallOptions{Init: agent.OpenRC, BinaryPath: "/opt/bin/oa", ConfigDir: "/opt/etc/oa"})
		require.NoError(t, err)
		var paths []string
		for _, f := range files {
			paths = append(paths, f.Path)
		}
		assert.Equal(t, []string{"/opt/etc/oa", "/opt/bin/oa", "/opt/etc/oa/ca.pem", "/opt/etc/oa/server.pem", "/opt/etc/oa/server.key", "/etc/init.d/openctl-agent"}, paths)
		assert.Contains(t, string(files[5].Content), "--key '/opt/etc/oa/server.key'")
	})
	t.Run("init required", func(t *testing.T) {
		_, err := agent.InstallFiles(agent.InstallOptions{})
		require.ErrorIs(t, err, errcode.Invalid)
		_, err = agent.InstallFiles(agent.InstallOptions{Init: "upstart"})
		require.ErrorIs(t, err, errcode.Invalid)
	})
}

func TestEnableCommands(t *testing.T) {
	cmds, err := agent.EnableCommands(agent.Systemd)
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"systemctl", "daemon-reload"}, {"systemctl", "enable", "openctl-agent"}, {"systemctl", "restart", "openctl-agent"}}, cmds)
	cmds, err = agent.EnableCommands(agent.OpenRC)
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"rc-update", "add", "openctl-agent", "default"}, {"rc-service", "openctl-agent", "restart"}}, cmds)
	_, err = agent.EnableCommands("")
	require.ErrorIs(t, err, errcode.Invalid)
}

// FuzzRenderListen checks that whatever listen address and release URL
// are accepted, the rendered unit and script keep the command on one line
// and every value inside its quotes.
func FuzzRenderListen(f *testing.F) {
	f.Add(":9443", "https://github.com/k3s-io/k3s/releases/download")
	f.Add("[::1]:1", "http://h/%41")
	f.Add(":9443\n", "https://x/'")
	f.Fuzz(func(t *testing.T, listen, url string) {
		opts := agent.InstallOptions{Listen: listen, ReleaseURL: url}
		unit, err := agent.SystemdUnit(opts)
		if err != nil {
			require.ErrorIs(t, err, errcode.Invalid)
			return
		}
		script, err := agent.OpenRCScript(opts)
		require.NoError(t, err, "systemd and OpenRC accept the same values")
		for _, v := range []string{listen, url} {
			require.NotContains(t, v, "\n")
			require.NotContains(t, v, "'")
			require.NotContains(t, v, `"`)
			require.NotContains(t, v, "$")
			require.NotContains(t, v, "`")
			require.NotContains(t, v, `\`)
			require.NotContains(t, v, " ")
		}
		require.Equal(t, 1, strings.Count(string(unit), "ExecStart="))
		require.Equal(t, 1, strings.Count(string(script), "command_args="))
	})
}

func TestDefaultListenAddrMatchesDefaultPort(t *testing.T) {
	assert.Equal(t, ":"+strconv.Itoa(agent.DefaultPort), agent.DefaultListenAddr)
}

// The K3s provider places each file over SSH (contents it supplies itself
// for the binary and the certificate material), then runs EnableCommands.
func ExampleInstallFiles() {
	files, err := agent.InstallFiles(agent.InstallOptions{Init: agent.OpenRC})
	if err != nil {
		panic(err)
	}
	for _, f := range files {
		fmt.Printf("%-36s %v %s:%s %s\n", f.Path, f.Mode, f.Owner, f.Group, f.Kind)
	}
	cmds, _ := agent.EnableCommands(agent.OpenRC)
	fmt.Println(cmds)
	// Output:
	// /etc/openctl-agent                   drwx------ root:root dir
	// /usr/local/bin/openctl-agent         -rwxr-xr-x root:root binary
	// /etc/openctl-agent/ca.pem            -rw------- root:root ca
	// /etc/openctl-agent/server.pem        -rw------- root:root server-cert
	// /etc/openctl-agent/server.key        -rw------- root:root server-key
	// /etc/init.d/openctl-agent            -rwxr-xr-x root:root service
	// [[rc-update add openctl-agent default] [rc-service openctl-agent restart]]
}

// systemdExecStart splits an ExecStart= value into the argument vector
// systemd would run, by systemd.service(5)'s rules for the values the
// helpers may write: words separated by spaces, double quotes with \\ and
// \" escapes, %% for a literal % and $$ for a literal $. Anything else
// that systemd would interpret (a lone % or $, a single quote, a
// backslash outside quotes) is an error: the helpers must not emit it.
func systemdExecStart(line string) ([]string, error) {
	var out []string
	for i := 0; i < len(line); {
		if line[i] == ' ' {
			i++
			continue
		}
		var w strings.Builder
		if line[i] == '"' {
			for i++; ; i++ {
				if i >= len(line) {
					return nil, fmt.Errorf("unterminated quote in %q", line)
				}
				if line[i] == '"' {
					i++
					break
				}
				if line[i] == '\\' {
					i++
					if i >= len(line) || (line[i] != '\\' && line[i] != '"') {
						return nil, fmt.Errorf("escape in %q", line)
					}
				}
				w.WriteByte(line[i])
			}
			if i < len(line) && line[i] != ' ' {
				return nil, fmt.Errorf("text after a quote in %q", line)
			}
		} else {
			for ; i < len(line) && line[i] != ' '; i++ {
				if strings.IndexByte(`\"'`, line[i]) >= 0 {
					return nil, fmt.Errorf("%q in a bare word of %q", line[i], line)
				}
				w.WriteByte(line[i])
			}
		}
		word, err := systemdUnspecify(w.String())
		if err != nil {
			return nil, err
		}
		out = append(out, word)
	}
	return out, nil
}

// systemdUnspecify undoes %% and $$ and refuses any other specifier or
// variable reference.
func systemdUnspecify(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' || s[i] == '$' {
			if i+1 >= len(s) || s[i+1] != s[i] {
				return "", fmt.Errorf("systemd would expand %q in %q", s[i:], s)
			}
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String(), nil
}

// openrcArgv runs an OpenRC script's assignments in sh and evaluates
// "$command $command_args" as supervise-daemon.sh's eval does, returning
// the resulting argument vector.
func openrcArgv(t *testing.T, script []byte) []string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	f := filepath.Join(t.TempDir(), "svc")
	require.NoError(t, os.WriteFile(f, script, 0o644))
	out, err := exec.CommandContext(t.Context(), sh, "-c", `. "$1" && eval "set -- $command $command_args" && printf '%s\n' "$@"`, "sh", f).Output()
	require.NoError(t, err)
	var argv []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		argv = append(argv, sc.Text())
	}
	return argv
}

// Odd but valid options reach the agent as exactly the intended argument
// vector through both the systemd unit and the OpenRC script.
func TestInstallOddValuesRoundTrip(t *testing.T) {
	for _, opts := range []agent.InstallOptions{
		{},
		{BinaryPath: "/opt/open+ctl@v1.2/bin/openctl-agent", ConfigDir: "/etc/openctl_agent.d/-x", Listen: "[::1]:9443",
			ReleaseURL: "https://mirror.example.com:8443/k3s/%2Breleases/download;v=1/~user/(x)&y=z!*,@:"},
		{Listen: "node-1.example.com.:1", ReleaseURL: "http://[fd00::1]:8080/k3s/"},
		{Listen: "0.0.0.0:65535", ReleaseURL: "https://h/a%25b%41"},
		{Listen: "[::]:443", ReleaseURL: "https://h/*;|&<>(){}[]"},
		{HealthTimeout: agent.MaxHealthTimeout},
	} {
		t.Run(opts.Listen+" "+opts.ReleaseURL, func(t *testing.T) {
			bin, dir, listen := opts.BinaryPath, opts.ConfigDir, opts.Listen
			if bin == "" {
				bin = agent.DefaultBinaryPath
			}
			if dir == "" {
				dir = agent.DefaultConfigDir
			}
			if listen == "" {
				listen = agent.DefaultListenAddr
			}
			want := []string{bin, "--listen", listen, "--ca", dir + "/ca.pem", "--cert", dir + "/server.pem", "--key", dir + "/server.key"}
			if opts.ReleaseURL != "" {
				want = append(want, "--release-url", opts.ReleaseURL)
			}
			if opts.HealthTimeout != 0 {
				want = append(want, "--health-timeout", "1800s")
			}

			unit, err := agent.SystemdUnit(opts)
			require.NoError(t, err)
			var execStart string
			for line := range strings.Lines(string(unit)) {
				if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
					execStart = strings.TrimSuffix(v, "\n")
				}
			}
			got, err := systemdExecStart(execStart)
			require.NoError(t, err)
			assert.Equal(t, want, got, "systemd: %s", execStart)

			script, err := agent.OpenRCScript(opts)
			require.NoError(t, err)
			assert.Equal(t, want, openrcArgv(t, script), "OpenRC:\n%s", script)
		})
	}
}

// FuzzSystemdRoundTrip: whatever listen address and release URL the
// helpers accept reach the agent unchanged through the systemd unit.
func FuzzSystemdRoundTrip(f *testing.F) {
	f.Add(":9443", "https://github.com/k3s-io/k3s/releases/download")
	f.Add("[::1]:1", "https://h/a%25b%41;x=(y)&z!*")
	f.Add("node.example.:9443", "http://[fd00::1]:8080/")
	f.Add(":9443", "https://h/%")
	f.Fuzz(func(t *testing.T, listen, url string) {
		unit, err := agent.SystemdUnit(agent.InstallOptions{Listen: listen, ReleaseURL: url})
		if err != nil {
			return
		}
		var execStart string
		for line := range strings.Lines(string(unit)) {
			if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
				execStart = strings.TrimSuffix(v, "\n")
			}
		}
		got, err := systemdExecStart(execStart)
		require.NoError(t, err)
		if listen == "" {
			listen = agent.DefaultListenAddr
		}
		want := []string{agent.DefaultBinaryPath, "--listen", listen, "--ca", "/etc/openctl-agent/ca.pem",
			"--cert", "/etc/openctl-agent/server.pem", "--key", "/etc/openctl-agent/server.key"}
		if url != "" {
			want = append(want, "--release-url", url)
		}
		require.Equal(t, want, got)
	})
}
