package vmhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
)

// The init systems a host can have (Options.Init).
const (
	InitSystemd = "systemd"
	InitOpenRC  = "openrc"
)

// Address is an address on one of the host's interfaces, what
// `ip -o addr show` lists.
type Address struct {
	// Interface is the interface's name ("eth0"); Index its number
	// (default: 1 for "lo", else 2, 3… in the order of first appearance).
	Interface string
	Index     int
	// Prefix is the address and its prefix length (10.0.0.11/24).
	Prefix netip.Prefix
}

// Options configure a Host.
type Options struct {
	// Hostname is uname -n and /etc/hostname (default "vmhost").
	Hostname string
	// Arch is uname -m (default x86_64).
	Arch string
	// Init is InitSystemd, InitOpenRC or "" (neither): what a probe finds
	// in /run/systemd/system or /sbin/openrc-run, and the init system's
	// programs and service manager (see the package documentation):
	// systemctl and journalctl in /usr/bin, or openrc-run, rc-service,
	// rc-update and supervise-daemon in /sbin.
	Init string
	// Addresses are listed by `ip -o addr show`, after lo's 127.0.0.1/8.
	Addresses []Address
	// Programs are run in addition to (or instead of) the built-in ones
	// and the init system's.
	// A key that is a path ("/usr/bin/systemctl") registers the program
	// under its base name and puts a marker file at that path; a bare
	// name ("k3s") only registers it: it runs once a file of that name
	// is on PATH (say, a binary the caller uploaded to /usr/local/bin).
	Programs map[string]Program
	// Logger receives a debug record for each command line run (its
	// user, not its text); nil discards them.
	Logger *slog.Logger
}

// Host is a simulated Linux host whose whole file system is one
// directory. It is safe for concurrent use: each Run has its own
// interpreter; they share the file system as processes do.
//
// A host with an init system (Options.Init) also runs services, as
// goroutines, from the moment systemctl or rc-service starts them. Its
// life as a VM's: New is the disk, Boot the machine starting (the
// enabled services start), PowerOff the power cut (every service ends
// at once, without stop commands), Boot again a restart; Close powers
// off and releases the directory, whose files stay for a new Host.
type Host struct {
	root     *os.Root
	dir      string
	hostname string
	arch     string
	addrs    []Address
	log      *slog.Logger

	programs map[string]Program // by base name; read-only after New

	// svc runs the services of the init system (nil without one);
	// journal is systemd's journal (nil without systemd).
	svc     *manager
	journal *journal

	mu     sync.Mutex // guards closed
	closed bool
}

// New returns the host whose file system is the directory root (created
// when missing), laid out as a Debian host with merged /usr: /etc,
// /usr/bin (with a marker for each program), /usr/local/bin,
// /var/lib, /run, /tmp, /root, /dev/null, and /bin, /sbin as links.
func New(root string, opts Options) (*Host, error) {
	if opts.Hostname == "" {
		opts.Hostname = "vmhost"
	}
	if opts.Arch == "" {
		opts.Arch = "x86_64"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	switch opts.Init {
	case "", InitSystemd, InitOpenRC:
	default:
		return nil, fmt.Errorf("vmhost: init %q: want %q, %q or \"\"", opts.Init, InitSystemd, InitOpenRC)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("vmhost: %w", err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("vmhost: %w", err)
	}
	h := &Host{root: r, dir: root, hostname: opts.Hostname, arch: opts.Arch, log: opts.Logger, programs: builtins()}
	next := map[string]int{"lo": 1}
	h.addrs = append(h.addrs, Address{Interface: "lo", Index: 1, Prefix: netip.MustParsePrefix("127.0.0.1/8")})
	for _, a := range opts.Addresses {
		if a.Index == 0 {
			if _, ok := next[a.Interface]; !ok {
				next[a.Interface] = len(next) + 1
			}
			a.Index = next[a.Interface]
		}
		h.addrs = append(h.addrs, a)
	}
	markers := map[string]string{}
	for name := range h.programs {
		markers[name] = "/usr/bin/" + name
		if sbinPrograms[name] {
			markers[name] = "/usr/sbin/" + name
		}
	}
	if opts.Init != "" {
		h.svc = newManager(h, opts.Init)
		h.journal = h.svc.journal
		for p, prog := range initPrograms(opts.Init) {
			h.programs[path.Base(p)] = prog
			markers[path.Base(p)] = p
		}
	}
	for key, p := range opts.Programs {
		if p == nil {
			return nil, fmt.Errorf("vmhost: program %q is nil", key)
		}
		name := path.Base(key)
		h.programs[name] = p
		if strings.Contains(key, "/") {
			markers[name] = path.Clean("/" + key)
		}
	}
	if err := h.layout(opts, markers); err != nil {
		r.Close()
		return nil, err
	}
	return h, nil
}

// layout creates the directories and files of a new host; existing ones
// (a host made again on the same directory: its disk kept) are left.
func (h *Host) layout(opts Options, markers map[string]string) error {
	dirs := []string{"etc", "usr/bin", "usr/sbin", "usr/local/bin", "usr/local/sbin", "usr/lib", "var/lib", "var/log", "var/tmp", "run", "tmp", "root", "home", "dev", "proc"}
	switch opts.Init {
	case InitSystemd:
		dirs = append(dirs, "run/systemd/system", "etc/systemd/system/multi-user.target.wants", "usr/lib/systemd/system")
	case InitOpenRC:
		dirs = append(dirs, "run/openrc", "etc/init.d", "etc/conf.d", "etc/runlevels/sysinit", "etc/runlevels/boot", "etc/runlevels/default", "etc/runlevels/nonetwork", "etc/runlevels/shutdown")
	}
	for _, d := range dirs {
		if err := h.root.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("vmhost: %w", err)
		}
	}
	for _, d := range []string{"tmp", "var/tmp"} {
		if err := h.root.Chmod(d, 0o1777|fs.ModeSticky); err != nil {
			return fmt.Errorf("vmhost: %w", err)
		}
	}
	for link, target := range map[string]string{"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "usr/bin/sh": "dash"} {
		if _, err := h.root.Lstat(link); err == nil {
			continue
		}
		if err := h.root.Symlink(target, link); err != nil {
			return fmt.Errorf("vmhost: %w", err)
		}
	}
	files := map[string]string{
		"etc/hostname":   h.hostname + "\n",
		"etc/os-release": "PRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"13\"\nID=debian\n",
		"etc/passwd":     "root:x:0:0:root:/root:/bin/bash\n",
		"dev/null":       "",
	}
	if opts.Init == InitOpenRC {
		files["sbin/openrc-run"] = ""
	}
	for _, p := range markers {
		files[strings.TrimPrefix(p, "/")] = ""
	}
	for name, content := range files {
		if _, err := h.root.Lstat(name); err == nil {
			continue
		}
		if err := h.root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return fmt.Errorf("vmhost: %w", err)
		}
		mode := fs.FileMode(0o644)
		if strings.Contains(name, "bin/") {
			mode = 0o755
		}
		if err := h.root.WriteFile(name, []byte(content), mode); err != nil {
			return fmt.Errorf("vmhost: %w", err)
		}
		if err := h.root.Chmod(name, mode); err != nil {
			return fmt.Errorf("vmhost: %w", err)
		}
	}
	return nil
}

// initPrograms are the programs of an init system, by path.
func initPrograms(init string) map[string]Program {
	switch init {
	case InitSystemd:
		return map[string]Program{"/usr/bin/systemctl": progSystemctl, "/usr/bin/journalctl": progJournalctl}
	case InitOpenRC:
		return map[string]Program{
			"/sbin/openrc-run": progOpenRCRun, "/sbin/rc-service": progRcService,
			"/sbin/rc-update": progRcUpdate, "/sbin/supervise-daemon": progSuperviseDaemon,
		}
	}
	return nil
}

// Boot starts the services enabled on the host, as a booting machine
// does: with systemd, the units linked from /etc/systemd/system/*.wants
// (after a daemon-reload), their start jobs queued without waiting for
// them (a Type=notify unit may still be activating when Boot returns);
// with OpenRC, the services of the sysinit, boot and default runlevels
// one after another, each started as rc-service starts it (start_pre
// and the like run before Boot returns; ctx bounds them). Services that
// already run are left alone. The error lists the services that could
// not be started (a bad unit, a failed start_pre); the others are
// started regardless. Without an init system Boot does nothing.
func (h *Host) Boot(ctx context.Context) error {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return ErrClosed
	}
	switch {
	case h.svc == nil:
		return nil
	case h.svc.kind == InitSystemd:
		return h.svc.bootSystemd()
	default:
		return h.svc.bootOpenRC(ctx)
	}
}

// PowerOff stops every service at once, as pulling the plug would: no
// ExecStop, no stop messages in the journal, no restarts. The services'
// programs see their contexts end; PowerOff waits for them to return
// for up to 10 seconds, then leaves those that do not behind. The
// journal (in memory) and the file system stay; Boot starts the enabled
// services again.
func (h *Host) PowerOff() {
	if h.svc != nil {
		h.svc.powerOff()
	}
}

// Close powers the host off (PowerOff) and releases its root directory;
// its files stay. Run fails after Close.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	h.PowerOff()
	return h.root.Close()
}

// Dir is the directory holding the host's file system.
func (h *Host) Dir() string { return h.dir }

// Hostname is the host's name.
func (h *Host) Hostname() string { return h.hostname }

// Programs returns the names of the registered programs.
func (h *Host) Programs() []string {
	return slices.Sorted(maps.Keys(h.programs))
}

// ErrClosed is returned by Run on a closed Host; check it with
// errors.Is.
var ErrClosed = errors.New("vmhost: host closed")

// Run runs the POSIX shell command line cmdline as user (default root)
// with the host's base environment (PATH, HOME, USER, LOGNAME, SHELL) and
// env on top, in the directory /, as sshd runs an exec request: through
// the user's shell, sh -c. It returns the command's exit status; err is
// only for a failure of the simulator itself (ErrClosed). A nil stdin
// is empty, a nil stdout or stderr discards. When ctx ends, the command is
// stopped and Run returns 143 — its status when a SIGTERM killed it.
// A stdin other than an *os.File is copied into a pipe by a goroutine
// that ends when stdin does (or the pipe is closed after the command).
func (h *Host) Run(ctx context.Context, cmdline string, stdin io.Reader, stdout, stderr io.Writer, env []string, user string) (int, error) {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return -1, ErrClosed
	}
	if user == "" {
		user = "root"
	}
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	h.log.Debug("vmhost run", "host", h.hostname, "user", user)
	c := &Call{
		Args:   []string{"sh", "-c", cmdline},
		Stdin:  stdin,
		Stdout: stdout,
		Stderr: stderr,
		Env:    append(h.baseEnv(user), env...),
		Host:   h,
		User:   user,
		Dir:    "/",
	}
	status := runShell(ctx, c)
	if ctx.Err() != nil && status != 0 {
		return 143, nil
	}
	return status, nil
}

// baseEnv is the environment sshd gives a login.
func (h *Host) baseEnv(user string) []string {
	home := "/root"
	if user != "root" {
		home = "/home/" + user
	}
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + home,
		"USER=" + user,
		"LOGNAME=" + user,
		"SHELL=/bin/sh",
	}
}

// FS returns the host's file system as root sees it, for tests and
// programs: paths are the host's absolute paths ("/etc/hostname").
func (h *Host) FS() fs.FS { return rootedFS{fsys{h: h, user: "root"}} }

// rootedFS adapts fsys to fs.FS: the names fs.FS takes are relative to
// the host's root.
type rootedFS struct{ f fsys }

func (r rootedFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	rp, err := r.f.h.resolve("/"+name, true)
	if err != nil {
		return nil, err
	}
	return r.f.h.root.Open(rel(rp))
}
