package vmhost

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync/atomic"
)

// Program is a command of the host, run in process. It returns its exit
// status. It must stop when ctx ends, and only touch the host's files
// through the Call (Call.Open, Call.ReadFile, …).
type Program func(ctx context.Context, c *Call) int

// Call is one run of a Program. It is used by one goroutine at a time.
type Call struct {
	// Args are the program's arguments, Args[0] its name as invoked.
	Args []string
	// Stdin, Stdout and Stderr are its standard streams.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Env is the environment, NAME=value.
	Env []string
	// Host is the host the program runs on.
	Host *Host
	// User runs the program ("root", or a login's name).
	User string
	// Dir is the working directory, a path of the host.
	Dir string

	// umask is the shell's file mode creation mask; shared by the shell
	// that runs the program and its subshells.
	umask *atomic.Uint32
	// line is the line of the script the program was called from (dash
	// names it in "not found"), shell the script's $0.
	line  uint
	shell string
	// svc connects the main program of a service to its init system;
	// nil outside a service.
	svc *ServiceHooks
}

// ServiceHooks connect a program run as a service's main process to the
// init system that started it. The init system sets them with
// WithService; a program reaches them through Call.NotifyReady and
// Call.Reloads.
type ServiceHooks struct {
	// Ready is called when the program reports itself up (sd_notify's
	// READY=1); nil ignores it.
	Ready func()
	// Reload receives a value for each reload request (systemctl reload,
	// SIGHUP); nil: the program is never asked to reload. The host's init
	// systems give it room for one request: a request the program has
	// not taken yet absorbs the next, as a pending signal does.
	Reload <-chan struct{}
}

// WithService returns a copy of c whose program runs as a service's main
// process, with the init system's hooks h.
func (c *Call) WithService(h *ServiceHooks) *Call {
	n := *c
	n.svc = h
	return &n
}

// NotifyReady tells the init system the program is up, as sd_notify
// READY=1 does for a Type=notify unit. Outside a service it does nothing.
func (c *Call) NotifyReady() {
	if c.svc != nil && c.svc.Ready != nil {
		c.svc.Ready()
	}
}

// Reloads returns the channel on which the program is asked to reload
// (its configuration, its certificates), as SIGHUP asks a daemon. It is
// nil — never ready — outside a service.
func (c *Call) Reloads() <-chan struct{} {
	if c.svc == nil {
		return nil
	}
	return c.svc.Reload
}

// Getenv returns the value of the environment variable name, "" when it
// is unset.
func (c *Call) Getenv(name string) string {
	for i := len(c.Env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(c.Env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// Path makes p (absolute, or relative to Dir) a path of the host.
func (c *Call) Path(p string) string { return abs(c.Dir, p) }

func (c *Call) fs() fsys { return fsys{h: c.Host, user: c.User} }

// Open opens the host's file p as the call's user may, with os.OpenFile's
// flags; a created file gets perm less the umask.
func (c *Call) Open(p string, flag int, perm fs.FileMode) (io.ReadWriteCloser, error) {
	return c.fs().open(c.Path(p), flag, perm&^c.mask())
}

// ReadFile returns the contents of the host's file p.
func (c *Call) ReadFile(p string) ([]byte, error) { return c.fs().readFile(c.Path(p)) }

// Stat returns the file information of the host's file p, following
// symbolic links.
func (c *Call) Stat(p string) (fs.FileInfo, error) { return c.fs().stat(c.Path(p)) }

// Lstat is Stat without following a final symbolic link.
func (c *Call) Lstat(p string) (fs.FileInfo, error) { return c.fs().lstat(c.Path(p)) }

// Errorf prints "NAME: message" on the call's standard error, as
// coreutils do, and returns status.
func (c *Call) Errorf(status int, format string, args ...any) int {
	fmt.Fprintf(c.Stderr, "%s: %s\n", path.Base(c.Args[0]), fmt.Sprintf(format, args...))
	return status
}

func (c *Call) mask() fs.FileMode {
	if c.umask == nil {
		return 0o022
	}
	return fs.FileMode(c.umask.Load())
}

// sub returns a call of args that shares c's I/O, user, directory and
// environment.
func (c *Call) sub(args []string) *Call {
	n := *c
	n.Args = args
	return &n
}

// exec runs the command c.Args as the shell does once it is neither a
// function nor a builtin: a name with a slash is that file, a name
// without one is looked for in $PATH. A file with an interpreter line
// (#!) runs that interpreter's program; another file found runs the
// program registered under its name (or the name of the file it links
// to); an executable shell script runs in a nested shell. It prints dash's
// messages for what cannot run.
func (h *Host) exec(ctx context.Context, c *Call) int {
	name := c.Args[0]
	if ctx.Err() != nil {
		return 143
	}
	if internal, ok := internals[name]; ok {
		return internal(ctx, c)
	}
	f := c.fs()
	var file string
	if strings.Contains(name, "/") {
		file = c.Path(name)
		if _, err := f.stat(file); err != nil {
			return c.shellErr(127, "%s: not found", name)
		}
	} else {
		file = h.lookPath(f, c.Getenv("PATH"), name)
		if file == "" {
			return c.shellErr(127, "%s: not found", name)
		}
	}
	fi, err := f.stat(file)
	if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return c.shellErr(126, "%s: Permission denied", name)
	}
	head := make([]byte, 512)
	if r, err := f.open(file, 0, 0); err == nil {
		n, _ := io.ReadFull(r, head)
		head = head[:n]
		r.Close()
	}
	// A file with an interpreter line runs its interpreter whatever its
	// name (/etc/init.d/k3s is an openrc-run script, not k3s).
	if !bytes.HasPrefix(head, []byte("#!")) {
		if p, ok := h.programs[path.Base(file)]; ok {
			return p(ctx, c)
		}
		if rp, err := h.resolve(file, true); err == nil {
			if p, ok := h.programs[path.Base(rp)]; ok {
				return p(ctx, c)
			}
		}
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return c.shellErr(126, "%s: Exec format error", name)
	}
	// An interpreter line runs its interpreter as the kernel would: with
	// the interpreter, the line's one optional argument, the file and the
	// file's arguments.
	if line, ok := bytes.CutPrefix(head, []byte("#!")); ok {
		line, _, _ = bytes.Cut(line, []byte("\n"))
		interp, arg, _ := strings.Cut(strings.TrimSpace(string(line)), " ")
		if _, err := f.stat(abs("/", interp)); err != nil {
			return c.shellErr(127, "%s: not found", name)
		}
		p, ok := h.programs[path.Base(interp)]
		if !ok {
			return c.shellErr(126, "%s: Exec format error", name)
		}
		args := []string{interp}
		if arg = strings.TrimSpace(arg); arg != "" {
			args = append(args, arg)
		}
		return p(ctx, c.sub(append(append(args, file), c.Args[1:]...)))
	}
	// A script: sh runs it, with $0 its name.
	return runShell(ctx, c.sub(append([]string{"sh", file}, c.Args[1:]...)))
}

// lookPath finds name in the directories of pathList that the host has
// an executable of that name in; "" when none does.
func (h *Host) lookPath(f fsys, pathList, name string) string {
	for _, dir := range strings.Split(pathList, ":") {
		if dir == "" {
			dir = "."
		}
		p := abs("/", path.Join(dir, name))
		if fi, err := f.stat(p); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// shellErr prints a message of the shell running the call ("sh: 1: x:
// not found") and returns status.
func (c *Call) shellErr(status int, format string, args ...any) int {
	shell := c.shell
	if shell == "" {
		shell = "sh"
	}
	line := c.line
	if line == 0 {
		line = 1
	}
	fmt.Fprintf(c.Stderr, "%s: %d: %s\n", shell, line, fmt.Sprintf(format, args...))
	return status
}
