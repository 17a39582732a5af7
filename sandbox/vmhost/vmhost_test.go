package vmhost

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newHost returns a systemd host on a fresh directory with one address.
func newHost(t *testing.T, opts Options) *Host {
	t.Helper()
	if opts.Addresses == nil {
		opts.Addresses = []Address{{Interface: "eth0", Prefix: netip.MustParsePrefix("10.0.0.11/24")}}
	}
	h, err := New(filepath.Join(t.TempDir(), "root"), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// result is what one command line did.
type result struct {
	status         int
	stdout, stderr string
}

func run(t *testing.T, h *Host, user, cmdline, stdin string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	st, err := h.Run(t.Context(), cmdline, strings.NewReader(stdin), &out, &errOut, nil, user)
	require.NoError(t, err)
	return result{st, out.String(), errOut.String()}
}

// TestPrograms runs each program as the scripts do and compares with
// what Debian's coreutils, dash, grep and iproute2 print.
func TestPrograms(t *testing.T) {
	h := newHost(t, Options{Hostname: "cp-0", Init: InitSystemd})
	setup := run(t, h, "root", `mkdir -p /srv/d && printf 'a:b:c\nd:e:f\n' > /srv/f && printf 'x\n' > /srv/d/x && ln -s f /srv/link`, "")
	require.Equal(t, 0, setup.status, setup.stderr)
	for _, tc := range []struct {
		name, cmd, stdin string
		want             result
	}{
		{"cat", "cat /srv/f", "", result{0, "a:b:c\nd:e:f\n", ""}},
		{"cat stdin and --", "cat - -- /srv/d/x", "in\n", result{0, "in\nx\n", ""}},
		{"cat missing", "cat /nope", "", result{1, "", "cat: /nope: No such file or directory\n"}},
		{"cat dir", "cat /srv/d", "", result{1, "", "cat: /srv/d: Is a directory\n"}},
		{"cat through link", "cat /srv/link", "", result{0, "a:b:c\nd:e:f\n", ""}},
		{"sha256sum", "sha256sum -- /srv/d/x", "", result{0, "73cb3858a687a8494ca3323053016282f3dad39d42cf62ca4e79dda2aac7d9ac  /srv/d/x\n", ""}},
		{"sha256sum stdin", "printf x | sha256sum", "", result{0, "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881  -\n", ""}},
		{"sha256sum missing", "sha256sum /nope", "", result{1, "", "sha256sum: /nope: No such file or directory\n"}},
		{"cut", "cut -d: -f2 /srv/f", "", result{0, "b\ne\n", ""}},
		{"cut space", "echo 'x y z' | cut -d' ' -f1,3", "", result{0, "x z\n", ""}},
		{"cut range", "echo 'a b c d' | cut -d ' ' -f2-", "", result{0, "b c d\n", ""}},
		{"cut no delimiter", "echo abc | cut -d: -f2", "", result{0, "abc\n", ""}},
		{"head -n1", "head -n1 /srv/f", "", result{0, "a:b:c\n", ""}},
		{"head -n 1", "head -n 1 /srv/f", "", result{0, "a:b:c\n", ""}},
		{"head -1", "printf '1\\n2\\n3\\n' | head -1", "", result{0, "1\n", ""}},
		{"tail -n1", "tail -n1 /srv/f", "", result{0, "d:e:f\n", ""}},
		{"tail -n +2", "printf '1\\n2\\n3\\n' | tail -n +2", "", result{0, "2\n3\n", ""}},
		{"uname", "uname; uname -m; uname -n; uname -s -m", "", result{0, "Linux\nx86_64\ncp-0\nLinux x86_64\n", ""}},
		{"modprobe built-in module", "/sbin/modprobe br_netfilter && modprobe -q overlay", "", result{0, "", ""}},
		{"modprobe no module", "modprobe", "", result{1, "", "modprobe: ERROR: missing parameters. See -h.\n"}},
		{"mkdir -p -m", "mkdir -p -m 0700 /a/b/c", "", result{0, "", ""}},
		{"mkdir exists", "mkdir /srv", "", result{1, "", "mkdir: cannot create directory '/srv': File exists\n"}},
		{"mkdir missing parent", "mkdir /x/y", "", result{1, "", "mkdir: cannot create directory '/x/y': No such file or directory\n"}},
		{"rm", "touch /tmp/r && rm /tmp/r && [ ! -e /tmp/r ] && echo gone", "", result{0, "gone\n", ""}},
		{"rm missing", "rm /nope", "", result{1, "", "rm: cannot remove '/nope': No such file or directory\n"}},
		{"rm -f missing", "rm -f /nope", "", result{0, "", ""}},
		{"rm dir", "mkdir /tmp/rd && rm /tmp/rd", "", result{1, "", "rm: cannot remove '/tmp/rd': Is a directory\n"}},
		{"rm -rf", "mkdir -p /tmp/rr/s && touch /tmp/rr/s/f && rm -rf /tmp/rr && [ ! -d /tmp/rr ] && echo gone", "", result{0, "gone\n", ""}},
		{"mv -f", "echo 1 > /tmp/m1 && mv -f /tmp/m1 /tmp/m2 && cat /tmp/m2 && [ ! -e /tmp/m1 ]", "", result{0, "1\n", ""}},
		{"mv missing", "mv /nope /tmp/x", "", result{1, "", "mv: cannot stat '/nope': No such file or directory\n"}},
		{"cp", "cp /srv/f /tmp/c && cat /tmp/c", "", result{0, "a:b:c\nd:e:f\n", ""}},
		{"chmod", "touch /tmp/ch && chmod 0750 /tmp/ch && [ -x /tmp/ch ] && echo x", "", result{0, "x\n", ""}},
		{"chmod +x", "touch /tmp/ch2 && chmod +x /tmp/ch2 && [ -x /tmp/ch2 ] && echo x", "", result{0, "x\n", ""}},
		{"ln -sf, readlink", "ln -s k3s /usr/local/bin/kubectl && ln -sf /usr/local/bin/k3s /usr/local/bin/kubectl && readlink /usr/local/bin/kubectl", "", result{0, "/usr/local/bin/k3s\n", ""}},
		{"ln exists", "ln -s a /srv/link", "", result{1, "", "ln: failed to create symbolic link '/srv/link': File exists\n"}},
		{"install -d -m", "install -d -m 0700 /etc/openctl-agent && [ -d /etc/openctl-agent ] && echo ok", "", result{0, "ok\n", ""}},
		{"install -m", "install -m 0755 /srv/d/x /usr/local/bin/x && [ -x /usr/local/bin/x ] && cat /usr/local/bin/x", "", result{0, "x\n", ""}},
		{"mktemp", `t=$(mktemp "/tmp/f.openctl-XXXXXX") && case $t in /tmp/f.openctl-??????) [ -f "$t" ] && echo ok;; esac`, "", result{0, "ok\n", ""}},
		{"mktemp default", `t=$(mktemp) && case $t in /tmp/tmp.??????????) echo ok;; esac`, "", result{0, "ok\n", ""}},
		{"mktemp -d", `t=$(mktemp -d) && [ -d "$t" ] && echo ok`, "", result{0, "ok\n", ""}},
		{"dirname", "dirname /a/b/c; dirname a; dirname /; dirname /a/", "", result{0, "/a/b\n.\n/\n/\n", ""}},
		{"basename", "basename /a/b.txt .txt; basename /a/b/; basename /", "", result{0, "b\nb\n/\n", ""}},
		{"sleep", "sleep 0.01 && echo slept", "", result{0, "slept\n", ""}},
		{"id", "id -u; id -un; whoami; id", "", result{0, "0\nroot\nroot\nuid=0(root) gid=0(root) groups=0(root)\n", ""}},
		{"env", "FOO=bar env | grep ^FOO=; env X=1 sh -c 'echo $X'", "", result{0, "FOO=bar\n1\n", ""}},
		{"tr", "echo Hello | tr a-z A-Z; echo 'a b' | tr -d ' '; echo x | tr '\\n' ,", "", result{0, "HELLO\nab\nx,", ""}},
		{"wc -l", "wc -l < /srv/f; wc -l /srv/f", "", result{0, "2\n2 /srv/f\n", ""}},
		{"grep", "grep e /srv/f; grep -c : /srv/f; grep -v a /srv/f", "", result{0, "d:e:f\n2\nd:e:f\n", ""}},
		{"grep -q -x -F", "grep -qxF 'a:b:c' /srv/f && echo yes; grep -qx 'a:b' /srv/f || echo no", "", result{0, "yes\nno\n", ""}},
		{"grep -E", "grep -E '^(a|d):' /srv/f", "", result{0, "a:b:c\nd:e:f\n", ""}},
		{"grep BRE", `echo 'a(b)+' | grep 'a(b)+'; echo aab | grep 'a\{2\}b'`, "", result{0, "a(b)+\naab\n", ""}},
		{"grep none", "grep zzz /srv/f", "", result{1, "", ""}},
		{"grep missing", "grep x /nope", "", result{2, "", "grep: /nope: No such file or directory\n"}},
		{"iface probe", `ip -o addr show to 10.0.0.11 | { read -r _ dev _ && echo "$dev"; }`, "", result{0, "eth0\n", ""}},
		{"no awk", `awk '{print}' /srv/f`, "", result{127, "", "sh: 1: awk: not found\n"}},
		{"ip", "ip -o addr show", "", result{0, "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n" +
			"2: eth0    inet 10.0.0.11/24 brd 10.0.0.255 scope global eth0\\       valid_lft forever preferred_lft forever\n", ""}},
		{"ip to", "ip -o addr show to 10.0.0.11", "", result{0, "2: eth0    inet 10.0.0.11/24 brd 10.0.0.255 scope global eth0\\       valid_lft forever preferred_lft forever\n", ""}},
		{"ip to absent", "ip -o addr show to 10.0.0.99", "", result{0, "", ""}},
		{"not found", "nosuch arg", "", result{127, "", "sh: 1: nosuch: not found\n"}},
		{"not found line 2", "true\n/usr/bin/nosuch", "", result{127, "", "sh: 2: /usr/bin/nosuch: not found\n"}},
		{"not executable", "chmod 0644 /srv/f; /srv/f", "", result{126, "", "sh: 1: /srv/f: Permission denied\n"}},
		{"nested sh name", "sh -c 'nosuch' openctl", "", result{127, "", "openctl: 1: nosuch: not found\n"}},
		{"syntax error", "foo(", "", result{2, "", ""}},
		{"command -v", "command -v cat; command -v echo; command -v rc-service || echo none", "", result{0, "/usr/bin/cat\necho\nnone\n", ""}},
		{"umask", "umask; umask 077; umask; touch /tmp/um", "", result{0, "0022\n0077\n", ""}},
		{"trap TERM accepted", "set -e; trap 'echo t' TERM INT HUP; trap - TERM; echo ok", "", result{0, "ok\n", ""}},
		{"trap EXIT", "trap 'echo bye' EXIT; echo hi", "", result{0, "hi\nbye\n", ""}},
		{"script file", "printf 'echo from $0 $1\\n' > /tmp/s.sh && chmod +x /tmp/s.sh && /tmp/s.sh a && sh /tmp/s.sh b", "", result{0, "from /tmp/s.sh a\nfrom /tmp/s.sh b\n", ""}},
		{"cd and relative paths", "cd /srv && cat d/x && pwd", "", result{0, "x\n/srv\n", ""}},
		{"sudo", "sudo -n id -u; sudo -n sh -c 'id -un'", "", result{0, "0\nroot\n", ""}},
		{"dot searches the host's PATH", "printf 'X=1\\n' > /usr/local/bin/vars.sh && . vars.sh && echo $X", "", result{0, "1\n", ""}},
		{"dev null", "echo gone >/dev/null 2>&1; cat /dev/null; echo ok", "", result{0, "ok\n", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := run(t, h, "root", tc.cmd, tc.stdin)
			if tc.name == "syntax error" {
				assert.Equal(t, 2, got.status)
				assert.Contains(t, got.stderr, "sh: 1: Syntax error:")
				return
			}
			assert.Equal(t, tc.want.stdout, got.stdout, "stdout")
			assert.Equal(t, tc.want.stderr, got.stderr, "stderr")
			assert.Equal(t, tc.want.status, got.status, "status")
		})
	}
	// What the scripts wrote, read from outside through FS.
	data, err := fs.ReadFile(h.FS(), "tmp/c")
	require.NoError(t, err)
	assert.Equal(t, "a:b:c\nd:e:f\n", string(data))
	data, err = fs.ReadFile(h.FS(), "srv/link")
	require.NoError(t, err, "links followed inside the host")
	assert.Equal(t, "a:b:c\nd:e:f\n", string(data))
	_, err = fs.ReadFile(h.FS(), "../etc/passwd")
	assert.Error(t, err)

	// The modes the cases above set.
	for p, want := range map[string]os.FileMode{"a/b/c": 0o700, "a/b": 0o755, "tmp/um": 0o600, "etc/openctl-agent": 0o700, "usr/local/bin/x": 0o755} {
		fi, err := os.Stat(filepath.Join(h.Dir(), p))
		require.NoError(t, err)
		assert.Equal(t, want, fi.Mode().Perm(), p)
	}
}

// TestAgainstDebian runs read-only commands both on the host and with
// the machine's own coreutils and grep, in a directory holding the
// same files, and compares what they print.
func TestAgainstDebian(t *testing.T) {
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Skip("no coreutils on this machine")
	}
	h := newHost(t, Options{})
	real := t.TempDir()
	files := map[string]string{"f": "alpha beta gamma\none:two:three\n\nlast line without newline", "g": "x\ny\nx\n"}
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(real, name), []byte(content), 0o644))
		require.NoError(t, h.root.WriteFile(name, []byte(content), 0o644))
	}
	for _, cmd := range []string{
		"cat f g", "sha256sum f g", "sha256sum < f", "cut -d: -f2 f", "cut -d' ' -f1,3 f", "cut -d: -f2- f",
		"head -n 2 f", "head -n1 g", "head -1 f", "tail -n 2 f", "tail -n1 g", "tail -n +2 g",
		"head -c 7 f", "tail -c 9 f", "tail -c +40 f", "tail -c 999 g", "head -c x f; echo $?",
		"cp f h && truncate -s 5 h && cat h", "cp g i && truncate -s 9 i && wc -c < i", "truncate -c -s 1 nope; echo $?",
		"tr a-z A-Z < f", "tr -d '\\n' < g", "tr -s x < g", "wc -l f", "wc -l < g",
		"grep -c x g", "grep -v x g", "grep -x x g", "grep -F : f", "grep -E 'alpha|three' f", "grep -n x g", "grep -q zzz g; echo $?",
		"grep x f g", "cat nope; echo $?", "wc -l nope; echo $?",
		"basename /a/b/c.txt .txt", "dirname ///a//b//", "dirname a/b",
		"echo 'a  b   c' | { read -r x y z && echo \"$z $x\"; }",
	} {
		t.Run(cmd, func(t *testing.T) {
			var out, errOut bytes.Buffer
			c := exec.CommandContext(t.Context(), "/bin/sh", "-c", cmd)
			c.Dir = real
			c.Env = []string{"PATH=/usr/bin:/bin", "LANG=C", "LC_ALL=C"}
			c.Stdout, c.Stderr = &out, &errOut
			err := c.Run()
			status := 0
			if ee, ok := err.(*exec.ExitError); ok {
				status = ee.ExitCode()
			} else {
				require.NoError(t, err)
			}
			got := run(t, h, "root", cmd, "")
			assert.Equal(t, out.String(), got.stdout, "stdout")
			assert.Equal(t, errOut.String(), got.stderr, "stderr")
			assert.Equal(t, status, got.status, "status")
		})
	}
}

// TestConfinement: nothing a command line does reaches outside the
// host's directory.
func TestConfinement(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(outside, 0o755))
	secret := filepath.Join(outside, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("SECRET\n"), 0o644))
	h, err := New(filepath.Join(base, "root"), Options{})
	require.NoError(t, err)
	defer h.Close()
	// Links planted from outside, as a compromised image could hold.
	require.NoError(t, os.Symlink(secret, filepath.Join(h.Dir(), "abs-link")))
	require.NoError(t, os.Symlink("../outside/secret", filepath.Join(h.Dir(), "rel-link")))
	require.NoError(t, os.Symlink("/etc/shadow", filepath.Join(h.Dir(), "shadow-link")))
	require.NoError(t, os.Symlink("../../../..", filepath.Join(h.Dir(), "tmp", "up")))

	for _, cmd := range []string{
		"cat ../outside/secret", "cat /../outside/secret", "cat /../../../../../../" + secret,
		"cat " + secret, "cat /abs-link", "cat /rel-link", "cat /tmp/up/outside/secret", "cat /tmp/up" + secret,
		"cd /; cd ..; cd ..; cat outside/secret", "cd /tmp/up/outside && cat secret",
		"ln -s " + secret + " /l1; cat /l1", "ln -s ../../../outside/secret /l2; cat /l2",
		"sha256sum /abs-link /rel-link", "cp /abs-link /copy; cat /copy", "cat < /rel-link", "grep SECRET /abs-link /rel-link /tmp/up/outside/secret",
		"grep -h . /rel-link", ". /abs-link",
	} {
		got := run(t, h, "root", cmd, "")
		assert.NotContains(t, got.stdout+got.stderr, "SECRET", cmd)
	}
	// The host's own /etc/passwd, never the machine's.
	got := run(t, h, "root", "ln -s /etc/passwd /p; cat /p; cat /shadow-link", "")
	assert.Equal(t, "root:x:0:0:root:/root:/bin/bash\n", got.stdout)
	assert.Contains(t, got.stderr, "cat: /shadow-link: No such file or directory")

	// Writes through links and ".." land inside, or nowhere.
	for _, cmd := range []string{
		"echo pwned > /abs-link", "echo pwned > /rel-link", "echo pwned > /tmp/up/outside/new",
		"echo pwned > ../outside/new2", "mkdir -p /tmp/up/outside/dir", "rm -rf /tmp/up/outside", "rm -f /rel-link/../secret",
		"mv /abs-link /moved", "touch /tmp/up/outside/t", "chmod 0777 /tmp/up/outside/secret", "install -d /tmp/up/outside/inst",
		"ln -s x /tmp/up/outside/ln", "mktemp /tmp/up/outside/XXXXXX",
	} {
		run(t, h, "root", cmd, "")
	}
	data, err := os.ReadFile(secret)
	require.NoError(t, err)
	assert.Equal(t, "SECRET\n", string(data))
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing created outside")
	fi, err := os.Stat(secret)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())

	// A symlink loop fails, it does not hang.
	got = run(t, h, "root", "ln -s /loop /loop; cat /loop", "")
	assert.Equal(t, 1, got.status)
	assert.Contains(t, got.stderr, "Too many levels of symbolic links")

	// No real program runs: the machine's own binaries are not there.
	got = run(t, h, "root", "/usr/bin/env; ls; /bin/bash -c 'echo escaped'", "")
	assert.NotContains(t, got.stdout, "escaped")
}

// TestUsers: a login writes its own places; root's files need sudo.
func TestUsers(t *testing.T) {
	h := newHost(t, Options{})
	require.Equal(t, 0, run(t, h, "root", "echo secret > /etc/token && chmod 0600 /etc/token && mkdir -p /home/ubuntu", "").status)
	for _, tc := range []struct {
		cmd    string
		status int
		stdout string
		stderr string
	}{
		{"id -u; whoami", 0, "1000\nubuntu\n", ""},
		{"cat /etc/token", 1, "", "cat: /etc/token: Permission denied\n"},
		{"sudo -n cat /etc/token", 0, "secret\n", ""},
		{"touch /etc/x", 1, "", "touch: cannot touch '/etc/x': Permission denied\n"},
		{"echo x > /tmp/mine && cat /tmp/mine", 0, "x\n", ""},
		{"echo x > /home/ubuntu/f && cat /home/ubuntu/f", 0, "x\n", ""},
		{"cat /etc/hostname", 0, "vmhost\n", ""},
		{"sudo -n sh -c 'echo y > /etc/y' && cat /etc/y", 0, "y\n", ""},
		{"sudo -n nosuch", 1, "", "sudo: nosuch: command not found\n"},
		{"[ -r /etc/token ] || echo unreadable; sudo -n sh -c '[ -r /etc/token ] && echo readable'", 0, "unreadable\nreadable\n", ""},
	} {
		got := run(t, h, "ubuntu", tc.cmd, "")
		assert.Equal(t, tc.status, got.status, tc.cmd)
		assert.Equal(t, tc.stdout, got.stdout, tc.cmd)
		assert.Contains(t, got.stderr, tc.stderr, tc.cmd)
	}
}

// TestInit: what the probes look at for each init system.
func TestInit(t *testing.T) {
	probe := `if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then echo systemd
elif [ -x /sbin/openrc-run ]; then echo openrc; else echo none; fi`
	systemctl := func(_ context.Context, c *Call) int { return 0 }
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Init: InitSystemd, Programs: map[string]Program{"/usr/bin/systemctl": systemctl}}, "systemd\n"},
		{Options{Init: InitSystemd}, "systemd\n"}, // the built-in systemctl
		{Options{Init: InitOpenRC}, "openrc\n"},
		{Options{}, "none\n"},
	} {
		h := newHost(t, tc.opts)
		assert.Equal(t, tc.want, run(t, h, "root", probe, "").stdout, tc.opts.Init)
	}
	_, err := New(t.TempDir(), Options{Init: "upstart"})
	assert.Error(t, err)
}

// TestRegisteredByName: a program registered by name runs once a file of
// that name is on PATH, as an uploaded binary does.
func TestRegisteredByName(t *testing.T) {
	k3s := func(_ context.Context, c *Call) int {
		c.Stdout.Write([]byte("k3s version v1.37.2+k3s1 (abcdef12)\ngo version go1.26\n"))
		return 0
	}
	h := newHost(t, Options{Programs: map[string]Program{"k3s": k3s}})
	script := `[ -x /usr/local/bin/k3s ] && echo "version=$(/usr/local/bin/k3s --version 2>/dev/null | head -n1 | cut -d' ' -f3)"; echo end`
	assert.Equal(t, "end\n", run(t, h, "root", script, "").stdout)
	require.Equal(t, 0, run(t, h, "root", "cat > /usr/local/bin/k3s && chmod 0755 /usr/local/bin/k3s", "\x7fELF...").status)
	assert.Equal(t, "version=v1.37.2+k3s1\nend\n", run(t, h, "root", script, "").stdout)
	assert.Equal(t, "/usr/local/bin/k3s\n", run(t, h, "root", "command -v k3s", "").stdout)
	// kubectl -> k3s runs k3s, as the installer's links do.
	assert.Contains(t, run(t, h, "root", "ln -s k3s /usr/local/bin/kubectl && kubectl", "").stdout, "k3s version")
	// A binary nothing is registered for cannot run.
	got := run(t, h, "root", "printf '\\177ELF\\0' > /usr/local/bin/other && chmod +x /usr/local/bin/other && other", "")
	assert.Equal(t, 126, got.status)
	assert.Equal(t, "sh: 1: other: Exec format error\n", got.stderr)
}

// TestInterpreterLine: a file whose #! line names a registered program
// runs that program with the kernel's arguments, under any file name (a
// k3s binary downloaded to a temporary name still runs as k3s); a
// missing interpreter is "not found".
func TestInterpreterLine(t *testing.T) {
	var got []string
	k3s := func(_ context.Context, c *Call) int {
		got = c.Args
		return 3
	}
	h := newHost(t, Options{Programs: map[string]Program{"/usr/lib/sandbox/k3s": k3s}})
	require.Equal(t, 0, run(t, h, "root", "printf '#!/usr/lib/sandbox/k3s --release\nv1.37.2+k3s1\n' > /tmp/k3s.new && chmod +x /tmp/k3s.new", "").status)
	r := run(t, h, "root", "/tmp/k3s.new --version 'a b'", "")
	assert.Equal(t, 3, r.status)
	assert.Equal(t, []string{"/usr/lib/sandbox/k3s", "--release", "/tmp/k3s.new", "--version", "a b"}, got)
	require.Equal(t, 0, run(t, h, "root", "printf '#!/opt/none\n' > /tmp/x && chmod +x /tmp/x", "").status)
	r = run(t, h, "root", "/tmp/x", "")
	assert.Equal(t, result{127, "", "sh: 1: /tmp/x: not found\n"}, r)
	// A script for sh still runs in the shell.
	r = run(t, h, "root", "printf '#!/bin/sh\necho \"$0 $1\"\n' > /tmp/s && chmod +x /tmp/s && /tmp/s one", "")
	assert.Equal(t, result{0, "/tmp/s one\n", ""}, r)
}

// TestServiceHooks: a program run as a service's main process reaches
// its init system's hooks; outside a service they do nothing.
func TestServiceHooks(t *testing.T) {
	ready := make(chan struct{}, 1)
	reload := make(chan struct{}, 1)
	var reloaded bool
	prog := func(_ context.Context, c *Call) int {
		c.NotifyReady()
		if c.Reloads() != nil {
			<-c.Reloads()
			reloaded = true
		}
		return 0
	}
	h := newHost(t, Options{Programs: map[string]Program{"/usr/bin/daemon": prog}})
	assert.Equal(t, 0, run(t, h, "root", "daemon", "").status, "outside a service: no hooks")
	c := &Call{Args: []string{"daemon"}, Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Host: h, User: "root", Dir: "/"}
	reload <- struct{}{}
	assert.Equal(t, 0, prog(t.Context(), c.WithService(&ServiceHooks{Ready: func() { ready <- struct{}{} }, Reload: reload})))
	assert.Len(t, ready, 1)
	assert.True(t, reloaded)
	assert.Nil(t, c.Reloads(), "WithService copies the call")
}

// TestCancel: a cancelled command stops.
func TestCancel(t *testing.T) {
	h := newHost(t, Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	st, err := h.Run(ctx, "while true; do sleep 1; done", nil, nil, nil, nil, "root")
	require.NoError(t, err)
	assert.Equal(t, 143, st)
	assert.Less(t, time.Since(start), 5*time.Second)

	// A blocked read of standard input ends too.
	ctx, cancel = context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	pr, pw := io.Pipe()
	defer pw.Close()
	st, err = h.Run(ctx, "cat", pr, nil, nil, nil, "root")
	require.NoError(t, err)
	assert.Equal(t, 143, st)

	require.NoError(t, h.Close())
	_, err = h.Run(t.Context(), "true", nil, nil, nil, nil, "root")
	assert.ErrorIs(t, err, ErrClosed)
}

// FuzzRun runs random command lines: none may panic, hang past its
// deadline or touch anything outside the host's directory.
func FuzzRun(f *testing.F) {
	for _, seed := range []string{
		"echo hi", "cat /etc/passwd", "cd ..; cat ../../etc/passwd", "ln -s / /r; cat /r/r/r/etc/hostname",
		"rm -rf /", "rm -rf ../*", "awk '{print $1' /etc/passwd", "grep -E '(' /etc/hostname",
		"cut -f0", "head -n -1", "tr", "ip -o addr show to nonsense", "mkdir -p /../../x", "mv / /x", "sh -c",
		"exec 3<&0; cat <&3", "x=$(cat /dev/null) && echo ${x:-empty}", "sudo -n sudo -n sh -c 'echo $0'",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, cmdline string) {
		base := t.TempDir()
		outside := filepath.Join(base, "outside")
		require.NoError(t, os.MkdirAll(outside, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(outside, "keep"), []byte("keep"), 0o644))
		h, err := New(filepath.Join(base, "root"), Options{})
		require.NoError(t, err)
		defer h.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		var out bytes.Buffer
		_, err = h.Run(ctx, cmdline, strings.NewReader("input"), &out, &out, nil, "root")
		require.NoError(t, err)
		entries, err := os.ReadDir(outside)
		require.NoError(t, err)
		require.Len(t, entries, 1)
		entries, err = os.ReadDir(base)
		require.NoError(t, err)
		require.Len(t, entries, 2, "only root/ and outside/")
	})
}

// TestIP: iproute2's formats for the host's addresses.
func TestIP(t *testing.T) {
	h := newHost(t, Options{Addresses: []Address{
		{Interface: "eth0", Prefix: netip.MustParsePrefix("10.0.0.11/24")},
		{Interface: "eth0", Prefix: netip.MustParsePrefix("10.0.0.100/32")},
		{Interface: "eth0", Prefix: netip.MustParsePrefix("fd00::11/64")},
	}})
	const tail = "\\       valid_lft forever preferred_lft forever\n"
	for _, tc := range []struct{ cmd, want string }{
		{"ip -o -4 addr show dev eth0", "2: eth0    inet 10.0.0.11/24 brd 10.0.0.255 scope global eth0" + tail +
			"2: eth0    inet 10.0.0.100/32 scope global eth0" + tail},
		{"ip -o -6 a", "2: eth0    inet6 fd00::11/64 scope global " + tail},
		{"ip -o addr show to 10.0.0.0/24", "2: eth0    inet 10.0.0.11/24 brd 10.0.0.255 scope global eth0" + tail +
			"2: eth0    inet 10.0.0.100/32 scope global eth0" + tail},
		{"ip -o addr show to 10.0.0.100", "2: eth0    inet 10.0.0.100/32 scope global eth0" + tail},
		{"ip addr show lo", "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000\n" +
			"    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n" +
			"    inet 127.0.0.1/8 scope host lo\n       valid_lft forever preferred_lft forever\n"},
	} {
		got := run(t, h, "root", tc.cmd, "")
		assert.Equal(t, 0, got.status, tc.cmd)
		assert.Equal(t, tc.want, got.stdout, tc.cmd)
	}
	got := run(t, h, "root", "ip -o addr show dev eth9", "")
	assert.Equal(t, 1, got.status)
	assert.Equal(t, "Device \"eth9\" does not exist.\n", got.stderr)
}
