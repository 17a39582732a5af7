package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/errcode"
)

// ErrNoInit is returned by [DetectInit] and [NewHostSystem] when the host
// runs neither systemd nor OpenRC. Check it with errors.Is.
var ErrNoInit = errors.New("agent: no supported init system (neither /run/systemd/system nor /run/openrc exists, and rc-service is not on PATH)")

// DefaultK3sBinary is where the k3s install script puts the k3s binary.
const DefaultK3sBinary = "/usr/local/bin/k3s"

// DefaultProbeTimeout bounds each read-only probe (systemctl is-active,
// rc-service status, k3s --version) when the caller's context has no
// earlier deadline.
const DefaultProbeTimeout = 10 * time.Second

// HostOptions configure a [HostSystem]. The zero value describes the real
// host.
type HostOptions struct {
	// Root is the directory standing in for "/" when the HostSystem reads
	// files (/run, /etc, /proc, /var/log) and finds the k3s binary. Empty
	// means "/". Tests point it at a temporary directory.
	Root string
	// Init, when set, skips detection. It must be Systemd or OpenRC.
	Init agent.InitSystem
	// Runner runs host programs. Nil means [ExecRunner].
	Runner Runner
	// K3sBinary is the path of the k3s binary, relative to Root. Empty
	// means [DefaultK3sBinary].
	K3sBinary string
	// ProbeTimeout bounds each read-only probe. Zero means
	// [DefaultProbeTimeout].
	ProbeTimeout time.Duration
}

// HostSystem is the [System] of a real node: it reads the role from the
// installed k3s unit (systemd) or init script (OpenRC), queries and controls
// the service with systemctl or rc-service, reads logs from journald or from
// /var/log/k3s.log (OpenRC), and probes the k3s binary for its version.
//
// Nothing is cached: every call reads the host afresh, so a k3s installed or
// removed after the agent started is seen at once. Only the init system is
// fixed at construction. A HostSystem is immutable and safe for concurrent
// use.
type HostSystem struct {
	root         string
	init         agent.InitSystem
	runner       Runner
	k3sBinary    string
	probeTimeout time.Duration
}

var _ System = (*HostSystem)(nil)

// NewHostSystem returns a HostSystem for opts, detecting the init system
// with [DetectInit] unless opts.Init is set. It fails with [ErrNoInit] when
// neither systemd nor OpenRC is found.
func NewHostSystem(opts HostOptions) (*HostSystem, error) {
	root := opts.Root
	if root == "" {
		root = "/"
	}
	h := &HostSystem{
		root:         root,
		init:         opts.Init,
		runner:       opts.Runner,
		k3sBinary:    opts.K3sBinary,
		probeTimeout: opts.ProbeTimeout,
	}
	if h.runner == nil {
		h.runner = ExecRunner{}
	}
	if h.k3sBinary == "" {
		h.k3sBinary = DefaultK3sBinary
	}
	if !filepath.IsAbs(h.k3sBinary) {
		return nil, fmt.Errorf("agent: k3s binary path %q is not absolute: %w", h.k3sBinary, errcode.Invalid)
	}
	h.k3sBinary = h.path(h.k3sBinary)
	if h.probeTimeout <= 0 {
		h.probeTimeout = DefaultProbeTimeout
	}
	switch h.init {
	case agent.Systemd, agent.OpenRC:
	case "":
		init, err := DetectInit(root)
		if err != nil {
			return nil, err
		}
		h.init = init
	default:
		return nil, fmt.Errorf("agent: unknown init system %q: %w", h.init, errcode.Invalid)
	}
	return h, nil
}

// DetectInit reports the init system of the host whose "/" is root (empty
// means "/"): [Systemd] if /run/systemd/system is a directory (the check
// sd_booted(3) makes), else [OpenRC] if /run/openrc exists or an executable
// rc-service is found in a PATH directory or in /sbin, /usr/sbin, /bin or
// /usr/bin under root. Otherwise it returns [ErrNoInit].
func DetectInit(root string) (agent.InitSystem, error) {
	if root == "" {
		root = "/"
	}
	if fi, err := os.Stat(filepath.Join(root, "run", "systemd", "system")); err == nil && fi.IsDir() {
		return agent.Systemd, nil
	}
	if _, err := os.Stat(filepath.Join(root, "run", "openrc")); err == nil {
		return agent.OpenRC, nil
	}
	dirs := append(filepath.SplitList(os.Getenv("PATH")), "/sbin", "/usr/sbin", "/bin", "/usr/bin")
	for _, dir := range dirs {
		if !filepath.IsAbs(dir) {
			continue // a relative PATH entry means nothing under another root
		}
		fi, err := os.Stat(filepath.Join(root, dir, "rc-service"))
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return agent.OpenRC, nil
		}
	}
	return "", ErrNoInit
}

// Init returns the init system the HostSystem drives.
func (h *HostSystem) Init() agent.InitSystem { return h.init }

// path maps an absolute host path to its place under the root.
func (h *HostSystem) path(p string) string { return filepath.Join(h.root, p) }

// Facts implements [System]. Hostname comes from os.Hostname, OS and Arch
// from the runtime, Kernel from /proc/sys/kernel/osrelease and Distro from
// PRETTY_NAME in /etc/os-release (falling back to /usr/lib/os-release, then
// to NAME and VERSION, then to "Linux", as os-release(5) says). A missing
// kernel or os-release file leaves the field empty; other read errors are
// returned.
func (h *HostSystem) Facts(ctx context.Context) (agent.Facts, error) {
	f := agent.Facts{OS: runtime.GOOS, Arch: runtime.GOARCH, Init: h.init}
	var err error
	if f.Hostname, err = os.Hostname(); err != nil {
		return agent.Facts{}, fmt.Errorf("agent: hostname: %w", err)
	}
	b, err := os.ReadFile(h.path("/proc/sys/kernel/osrelease"))
	switch {
	case err == nil:
		f.Kernel = strings.TrimSpace(string(b))
	case !errors.Is(err, fs.ErrNotExist):
		return agent.Facts{}, fmt.Errorf("agent: kernel release: %w", err)
	}
	for _, p := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		b, err := os.ReadFile(h.path(p))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return agent.Facts{}, fmt.Errorf("agent: %s: %w", p, err)
		}
		f.Distro = prettyName(parseOSRelease(b))
		break
	}
	return f, nil
}

// prettyName picks the distribution's display name from os-release fields.
func prettyName(kv map[string]string) string {
	if s := kv["PRETTY_NAME"]; s != "" {
		return s
	}
	if s := strings.TrimSpace(kv["NAME"] + " " + kv["VERSION"]); s != "" {
		return s
	}
	return "Linux"
}

// parseOSRelease parses the contents of an os-release(5) file into its
// variables. Lines are KEY=VALUE assignments; blank lines and lines whose
// first non-blank character is '#' are skipped, as are lines that are not
// assignments. Values follow shell quoting: single quotes keep everything
// literally; inside double quotes a backslash escapes $, `, ", \ and a
// newline; outside quotes a backslash escapes any character. Variable
// expansion is not performed (os-release forbids it). A later assignment
// overrides an earlier one.
func parseOSRelease(b []byte) map[string]string {
	kv := make(map[string]string)
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !validEnvName(k) {
			continue
		}
		kv[k] = unquoteShell(v)
	}
	return kv
}

func validEnvName(k string) bool {
	if k == "" || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for _, c := range []byte(k) {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// unquoteShell removes shell quoting from a single word. An unterminated
// quote runs to the end of the value.
func unquoteShell(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				b.WriteString(s[i+1:])
				return b.String()
			}
			b.WriteString(s[i+1 : i+1+end])
			i += end + 1
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
				}
				b.WriteByte(s[i])
			}
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Role implements [System]: [RoleServer] if a "k3s" systemd unit (in
// /etc/systemd/system, /usr/local/lib/systemd/system, /usr/lib/systemd/system
// or /lib/systemd/system) or OpenRC script (/etc/init.d/k3s) exists,
// otherwise [RoleAgent] if a "k3s-agent" one does, otherwise [RoleNone].
func (h *HostSystem) Role(ctx context.Context) (agent.Role, error) {
	for _, r := range []agent.Role{agent.RoleServer, agent.RoleAgent} {
		ok, err := h.serviceInstalled(r.ServiceName())
		if err != nil {
			return agent.RoleNone, err
		}
		if ok {
			return r, nil
		}
	}
	return agent.RoleNone, nil
}

var systemdUnitDirs = []string{"/etc/systemd/system", "/usr/local/lib/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"}

func (h *HostSystem) serviceInstalled(svc string) (bool, error) {
	var paths []string
	if h.init == agent.Systemd {
		for _, d := range systemdUnitDirs {
			paths = append(paths, filepath.Join(d, svc+".service"))
		}
	} else {
		paths = []string{filepath.Join("/etc/init.d", svc)}
	}
	for _, p := range paths {
		_, err := os.Stat(h.path(p))
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("agent: %s: %w", p, err)
		}
	}
	return false, nil
}

// service returns the k3s service name for the installed role, or an error
// coded NotFound when k3s is not installed.
func (h *HostSystem) service(ctx context.Context) (string, error) {
	r, err := h.Role(ctx)
	if err != nil {
		return "", err
	}
	if r == agent.RoleNone {
		return "", fmt.Errorf("agent: no k3s or k3s-agent service is installed: %w", errcode.NotFound)
	}
	return r.ServiceName(), nil
}

// ServiceState implements [System]. With systemd it runs
// "systemctl is-active <svc>" and maps its answer (whatever its exit
// status): active, reloading and refreshing are "active"; inactive,
// activating, deactivating and maintenance are "inactive" (not serving);
// failed is "failed". With OpenRC it runs "rc-service <svc> status" and maps
// started to "active", stopped, starting, stopping and inactive to
// "inactive", crashed to "failed", falling back to the exit status (0, 3,
// 32) when the output says nothing. Anything else is "unknown", as is the
// state when k3s is not installed.
func (h *HostSystem) ServiceState(ctx context.Context) (string, error) {
	r, err := h.Role(ctx)
	if err != nil {
		return agent.StateUnknown, err
	}
	if r == agent.RoleNone {
		return agent.StateUnknown, nil
	}
	svc := r.ServiceName()
	ctx, cancel := context.WithTimeout(ctx, h.probeTimeout)
	defer cancel()
	if h.init == agent.Systemd {
		out, err := h.runner.Run(ctx, "systemctl", "is-active", svc)
		ee, exited := errors.AsType[*ExitError](err)
		if err != nil && !exited {
			return agent.StateUnknown, err
		}
		if s, ok := systemdStates[firstOutputLine(out)]; ok {
			return s, nil
		}
		if exited && strings.TrimSpace(string(out)) == "" {
			return agent.StateUnknown, ee
		}
		return agent.StateUnknown, nil
	}
	out, err := h.runner.Run(ctx, "rc-service", svc, "status")
	ee, exited := errors.AsType[*ExitError](err)
	if err != nil && !exited {
		return agent.StateUnknown, err
	}
	text := string(out)
	code := 0
	if exited {
		text += "\n" + ee.Stderr
		code = ee.Code
	}
	if m := openrcStatusRE.FindStringSubmatch(text); m != nil {
		if s, ok := openrcStates[m[1]]; ok {
			return s, nil
		}
		return agent.StateUnknown, nil
	}
	switch code {
	case 0:
		return agent.StateActive, nil
	case 3:
		return agent.StateInactive, nil
	case 32:
		return agent.StateFailed, nil
	}
	return agent.StateUnknown, nil
}

var systemdStates = map[string]string{
	"active":       agent.StateActive,
	"reloading":    agent.StateActive,
	"refreshing":   agent.StateActive,
	"inactive":     agent.StateInactive,
	"activating":   agent.StateInactive,
	"deactivating": agent.StateInactive,
	"maintenance":  agent.StateInactive,
	"failed":       agent.StateFailed,
}

var openrcStatusRE = regexp.MustCompile(`status:\s*([a-z]+)`)

var openrcStates = map[string]string{
	"started":  agent.StateActive,
	"stopped":  agent.StateInactive,
	"starting": agent.StateInactive,
	"stopping": agent.StateInactive,
	"inactive": agent.StateInactive,
	"crashed":  agent.StateFailed,
}

func firstOutputLine(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return string(bytes.TrimSpace(line))
}

// Service implements [System]: "systemctl <action> <svc>" or
// "rc-service <svc> <action>". It fails with an error coded Invalid for an
// action other than start, stop and restart, and NotFound when k3s is not
// installed. It is bounded only by ctx: a restart waits for k3s to start.
func (h *HostSystem) Service(ctx context.Context, action agent.ServiceAction) error {
	if !action.Valid() {
		return fmt.Errorf("agent: service action %q: %w", action, errcode.Invalid)
	}
	svc, err := h.service(ctx)
	if err != nil {
		return err
	}
	if h.init == agent.Systemd {
		_, err = h.runner.Run(ctx, "systemctl", string(action), svc)
	} else {
		_, err = h.runner.Run(ctx, "rc-service", svc, string(action))
	}
	if err != nil {
		return fmt.Errorf("agent: %s %s: %w", action, svc, err)
	}
	return nil
}

// Logs implements [System]. With systemd it streams
// "journalctl -u <svc> -n <n> --no-pager -o cat" into w. With OpenRC it
// writes the last n lines of /var/log/<svc>.log (as the k3s install script
// configures it), reading the file backwards in blocks to find where they
// start and then copying them to w; a final line without a newline gets
// one. It fails with an error coded Invalid if n < 1 and NotFound when k3s
// or its log file is missing.
func (h *HostSystem) Logs(ctx context.Context, n int, w io.Writer) error {
	if n < 1 {
		return fmt.Errorf("agent: logs: line count %d is not positive: %w", n, errcode.Invalid)
	}
	svc, err := h.service(ctx)
	if err != nil {
		return err
	}
	if h.init == agent.Systemd {
		return h.runner.Stream(ctx, w, "journalctl", "-u", svc, "-n", strconv.Itoa(n), "--no-pager", "-o", "cat")
	}
	p := filepath.Join("/var/log", svc+".log")
	f, err := os.Open(h.path(p))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("agent: logs: %s: %w", p, errcode.NotFound)
	}
	if err != nil {
		return fmt.Errorf("agent: logs: %w", err)
	}
	defer f.Close()
	if _, err := tailLines(ctx, w, f, n, tailBlock); err != nil {
		return fmt.Errorf("agent: logs: %s: %w", p, err)
	}
	return nil
}

// logFollowPoll is how often FollowLogs looks for what OpenRC's log file
// gained.
const logFollowPoll = 250 * time.Millisecond

// FollowLogs implements [System]. With systemd it streams "journalctl -u
// <svc> -n <n> --no-pager -o cat -f" into w until ctx ends. With OpenRC it
// writes the last n lines of /var/log/<svc>.log as Logs does, then looks
// every logFollowPoll for what was appended and copies it, reading the
// file from its start again when it shrank (rotated or truncated). A log
// file that does not exist yet is waited for.
func (h *HostSystem) FollowLogs(ctx context.Context, n int, w io.Writer) error {
	if n < 1 {
		return fmt.Errorf("agent: logs: line count %d is not positive: %w", n, errcode.Invalid)
	}
	svc, err := h.service(ctx)
	if err != nil {
		return err
	}
	if h.init == agent.Systemd {
		err := h.runner.Stream(ctx, w, "journalctl", "-u", svc, "-n", strconv.Itoa(n), "--no-pager", "-o", "cat", "-f")
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	p := h.path(filepath.Join("/var/log", svc+".log"))
	var pos int64
	if f, err := os.Open(p); err == nil {
		pos, err = tailLines(ctx, w, f, n, tailBlock)
		f.Close()
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("agent: logs: %s: %w", p, err)
		}
	}
	tick := time.NewTicker(logFollowPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("agent: logs: %w", err)
		}
		fi, err := f.Stat()
		if err == nil {
			if fi.Size() < pos {
				pos = 0
			}
			var m int64
			m, err = io.Copy(w, &cancelableReader{ctx: ctx, r: io.NewSectionReader(f, pos, fi.Size()-pos)})
			pos += m
		}
		f.Close()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("agent: logs: %s: %w", p, err)
		}
	}
}

// tailBlock is how much of a log file tailLines reads per step backwards.
const tailBlock = 64 << 10

// tailLines copies the last n lines of f (as it is when tailLines starts;
// lines appended meanwhile are not followed) to w, adding a newline after a
// final line that lacks one, and returns the size of the file it read. It
// reads backwards block bytes at a time to find where those lines start,
// then streams them forwards, so memory use does not grow with the file or
// with n.
func tailLines(ctx context.Context, w io.Writer, f *os.File, n, block int) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	if size == 0 {
		return 0, nil
	}
	start, last, err := tailOffset(ctx, f, size, n, block)
	if err != nil {
		return 0, err
	}
	if _, err := io.Copy(w, &cancelableReader{ctx: ctx, r: io.NewSectionReader(f, start, size-start)}); err != nil {
		return 0, err
	}
	if last != '\n' {
		_, err = io.WriteString(w, "\n")
	}
	return size, err
}

// tailOffset returns the offset at which the last n lines of the first size
// bytes of r start, and the last of those bytes.
func tailOffset(ctx context.Context, r io.ReaderAt, size int64, n, block int) (start int64, last byte, err error) {
	buf := make([]byte, block)
	end := size
	seen := 0
	for end > 0 {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		off := max(end-int64(block), 0)
		chunk := buf[:end-off]
		if _, err := r.ReadAt(chunk, off); err != nil && !errors.Is(err, io.EOF) {
			return 0, 0, err
		}
		if end == size {
			last = chunk[len(chunk)-1]
			if last == '\n' {
				chunk = chunk[:len(chunk)-1] // the final newline ends the last line; it does not start one
			}
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] == '\n' {
				seen++
				if seen == n {
					return off + int64(i) + 1, last, nil
				}
			}
		}
		end = off
	}
	return 0, last, nil
}

// cancelableReader stops a long copy once its context is done.
type cancelableReader struct {
	ctx context.Context
	r   io.Reader
}

// Read reads from the underlying reader unless the context is done.
func (c *cancelableReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// K3sBinary implements [System]: the configured k3s binary path under the
// root (by default /usr/local/bin/k3s).
func (h *HostSystem) K3sBinary() string { return h.k3sBinary }

// K3sVersion implements [System]: it runs "<path> --version" and parses its
// first line with parseK3sVersion.
func (h *HostSystem) K3sVersion(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, h.probeTimeout)
	defer cancel()
	out, err := h.runner.Run(ctx, path, "--version")
	if err != nil {
		return "", fmt.Errorf("agent: k3s version: %w", err)
	}
	return parseK3sVersion(out)
}

var k3sVersionRE = regexp.MustCompile(`^k3s version (v[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?\+k3s[0-9]+)(?:\s|$)`)

// parseK3sVersion extracts the version from the output of "k3s --version",
// whose first line reads "k3s version v1.30.2+k3s1 (abcdef12)": it returns
// "v1.30.2+k3s1". Release candidates ("v1.31.0-rc1+k3s1") are accepted. Any
// other first line is an error coded Internal that quotes it.
func parseK3sVersion(out []byte) (string, error) {
	line := firstOutputLine(out)
	m := k3sVersionRE.FindStringSubmatch(line)
	if m == nil {
		if len(line) > 200 {
			line = line[:200] + "..."
		}
		return "", fmt.Errorf("agent: unrecognised k3s --version output %q: %w", line, errcode.Internal)
	}
	return m[1], nil
}
