package agent_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
)

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
func TestReviewInstallOddValuesRoundTrip(t *testing.T) {
	for _, opts := range []agent.InstallOptions{
		{},
		{BinaryPath: "/opt/open+ctl@v1.2/bin/openctl-agent", ConfigDir: "/etc/openctl_agent.d/-x", Listen: "[::1]:9443",
			ReleaseURL: "https://mirror.example.com:8443/k3s/%2Breleases/download;v=1/~user/(x)&y=z!*,@:"},
		{Listen: "node-1.example.com.:1", ReleaseURL: "http://[fd00::1]:8080/k3s/"},
		{Listen: "0.0.0.0:65535", ReleaseURL: "https://h/a%25b%41"},
		{Listen: "[::]:443", ReleaseURL: "https://h/*;|&<>(){}[]"},
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

// FuzzReviewSystemdRoundTrip: whatever listen address and release URL the
// helpers accept reach the agent unchanged through the systemd unit.
func FuzzReviewSystemdRoundTrip(f *testing.F) {
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
