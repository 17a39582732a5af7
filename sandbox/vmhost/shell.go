package vmhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// Internal commands stand in for the interpreter's builtins that would
// look at the real machine (command -v, type) or that it lacks (umask).
// Their names hold a NUL byte, which no shell word can.
const (
	cmdCommandV = "\x00command-v"
	cmdType     = "\x00type"
	cmdUmask    = "\x00umask"
	cmdKill     = "\x00kill"
)

// internals are run by exec before any PATH lookup.
var internals = map[string]Program{
	cmdCommandV: progCommandV,
	cmdType:     progType,
	cmdUmask:    progUmask,
	cmdKill:     progKill,
}

// progSh is sh, dash's way: sh [-eux…] -c SCRIPT [NAME [ARG…]], sh FILE
// [ARG…], or the script on standard input.
func progSh(ctx context.Context, c *Call) int { return runShell(ctx, c) }

// runShell parses and runs the shell script c.Args describes in a new
// interpreter whose every file access stays on c.Host.
func runShell(ctx context.Context, c *Call) int {
	args := c.Args[1:]
	var opts []string
	cmode := false
	for len(args) > 0 && len(args[0]) > 1 && (args[0][0] == '-' || args[0][0] == '+') {
		a := args[0]
		args = args[1:]
		if a == "--" {
			break
		}
		for _, f := range a[1:] {
			switch f {
			case 'c':
				cmode = true
			case 's':
			case 'e', 'u', 'x', 'f', 'a', 'n':
				opts = append(opts, string(a[0])+string(f))
			default:
				return c.Errorf(2, "0: Illegal option %c%c", a[0], f)
			}
		}
	}
	name := "sh"
	var src []byte
	switch {
	case cmode:
		if len(args) == 0 {
			return c.Errorf(2, "-c requires an argument")
		}
		src = []byte(args[0])
		args = args[1:]
		if len(args) > 0 {
			name, args = args[0], args[1:]
		}
	case len(args) > 0:
		name = args[0]
		var err error
		src, err = c.ReadFile(name)
		if err != nil {
			fmt.Fprintf(c.Stderr, "sh: 0: cannot open %s: %s\n", name, strings.TrimSuffix(errText(err), " or directory"))
			return 2
		}
		args = args[1:]
	default:
		var err error
		src, err = io.ReadAll(c.Stdin)
		if err != nil {
			return c.Errorf(2, "%v", err)
		}
	}
	file, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(string(src)), name)
	if err != nil {
		line := uint(1)
		var pe syntax.ParseError
		if errors.As(err, &pe) {
			line = pe.Pos.Line()
			err = errors.New(pe.Text)
		}
		fmt.Fprintf(c.Stderr, "%s: %d: Syntax error: %v\n", name, line, err)
		return 2
	}
	stdinAliases(file)

	r, closeRunner, err := newRunner(ctx, c, name, append(opts, append([]string{"--"}, args...)...))
	if err != nil {
		return c.Errorf(2, "%v", err)
	}
	defer closeRunner()
	err = r.Run(ctx, file)
	if status, ok := interp.IsExitStatus(err); ok {
		return int(status)
	}
	if err != nil {
		if ctx.Err() != nil {
			return 143
		}
		fmt.Fprintf(c.Stderr, "%s: %v\n", name, err)
		return 2
	}
	if ctx.Err() != nil {
		return 143
	}
	return 0
}

// newRunner returns an interpreter that runs as c does (its streams,
// environment, user and directory) with every file access on c.Host,
// $0 name and the parameters params (options, "--", arguments); the
// function it returns releases it.
func newRunner(ctx context.Context, c *Call, name string, params []string) (*interp.Runner, func(), error) {
	umask := new(atomic.Uint32)
	umask.Store(uint32(c.mask()))
	sh := &shell{host: c.Host, user: c.User, name: name, umask: umask}
	stdin, closeStdin, err := stdinFile(ctx, c.Stdin)
	if err != nil {
		return nil, nil, err
	}
	r, err := interp.New(
		interp.StdIO(stdin, c.Stdout, c.Stderr),
		interp.Env(expand.ListEnviron(c.Env...)),
		interp.Params(params...),
		interp.OpenHandler(sh.open),
		interp.StatHandler(sh.stat),
		interp.ReadDirHandler2(sh.readDir),
		interp.AccessHandler(sh.access),
		interp.CallHandler(sh.call),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return sh.exec }),
	)
	if err != nil {
		closeStdin()
		return nil, nil, err
	}
	r.Dir = c.Dir
	return r, closeStdin, nil
}

// stdinFile returns r as the *os.File the interpreter wants (it would
// otherwise make a pipe it never closes), readable until ctx ends.
func stdinFile(ctx context.Context, r io.Reader) (*os.File, func(), error) {
	if f, ok := r.(*os.File); ok {
		return f, func() {}, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	go func() {
		_, _ = io.Copy(pw, r)
		pw.Close()
	}()
	stop := context.AfterFunc(ctx, func() { _ = pr.SetReadDeadline(time.Now()) })
	return pr, func() { stop(); pr.Close() }, nil
}

// stdinAliases removes the redirections that copy standard input to a
// higher descriptor and back (exec 3<&0; cmd <&3 3<&-), which the
// interpreter does not support: standard input simply stays where it is.
// This is the one use of descriptors above 2 that the scripts sent to a
// host make (remote.Host.Run's wrapper).
func stdinAliases(file *syntax.File) {
	high := func(l *syntax.Lit) bool {
		if l == nil {
			return false
		}
		n, err := strconv.Atoi(l.Value)
		return err == nil && n > 2
	}
	syntax.Walk(file, func(n syntax.Node) bool {
		st, ok := n.(*syntax.Stmt)
		if !ok {
			return true
		}
		kept := st.Redirs[:0]
		for _, rd := range st.Redirs {
			word := ""
			if rd.Word != nil {
				word = rd.Word.Lit()
			}
			switch {
			case rd.Op == syntax.DplIn && high(rd.N) && (word == "0" || word == "-"):
				continue // 3<&0, 3<&-
			case rd.Op == syntax.DplIn && (rd.N == nil || rd.N.Value == "0") && high(&syntax.Lit{Value: word}):
				continue // <&3
			}
			kept = append(kept, rd)
		}
		st.Redirs = kept
		return true
	})
}

// shell holds what one interpreter's handlers share.
type shell struct {
	host  *Host
	user  string
	name  string         // $0
	umask *atomic.Uint32 // set by umask
}

func (s *shell) fs() fsys { return fsys{h: s.host, user: s.user} }

func (s *shell) open(ctx context.Context, p string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	hc := interp.HandlerCtx(ctx)
	p = abs(hc.Dir, p)
	f, err := s.fs().open(p, flag, perm&^fs.FileMode(s.umask.Load()))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			// dash: "sh: 1: cannot create /x: Permission denied"
			op := "cannot open"
			if flag&os.O_CREATE != 0 {
				op = "cannot create"
			}
			return nil, &os.PathError{Op: op, Path: p, Err: pe.Err}
		}
		return nil, &os.PathError{Op: "cannot open", Path: p, Err: err}
	}
	return f, nil
}

func (s *shell) stat(ctx context.Context, p string, follow bool) (fs.FileInfo, error) {
	return s.fs().statFollow(abs(interp.HandlerCtx(ctx).Dir, p), follow)
}

func (s *shell) readDir(ctx context.Context, p string) ([]fs.DirEntry, error) {
	return s.fs().readDir(abs(interp.HandlerCtx(ctx).Dir, p))
}

// access is test -r/-w/-x: the file's mode bits for "other", root
// passing -r and -w always and -x when any x bit is set, as access(2)
// does.
func (s *shell) access(ctx context.Context, p string, mode interp.AccessMode) error {
	f := s.fs()
	fi, err := f.stat(p)
	if err != nil {
		return err
	}
	perm := fi.Mode().Perm()
	rp, _ := s.host.resolve(p, true)
	if mode&interp.AccessRead != 0 && !readableBy(s.user, rp, perm) {
		return pathError("access", p, fs.ErrPermission)
	}
	if mode&interp.AccessWrite != 0 && !writableBy(s.user, rp) {
		return pathError("access", p, fs.ErrPermission)
	}
	if mode&interp.AccessExec != 0 && perm&0o111 == 0 {
		return pathError("access", p, fs.ErrPermission)
	}
	return nil
}

// call rewrites the builtins that would look at the real machine or
// that the interpreter lacks, and drops trap conditions it cannot take.
func (s *shell) call(ctx context.Context, args []string) ([]string, error) {
	switch args[0] {
	case "command":
		if len(args) > 1 && (args[1] == "-v" || args[1] == "-V") {
			return append([]string{cmdCommandV}, args[1:]...), nil
		}
	case "type":
		return append([]string{cmdType}, args[1:]...), nil
	case "umask":
		return append([]string{cmdUmask}, args[1:]...), nil
	case "kill":
		// dash's builtin: the interpreter has none.
		return append([]string{cmdKill}, args[1:]...), nil
	case "trap":
		return trapArgs(args), nil
	case ".", "source":
		// The interpreter would search the machine's PATH for a name
		// without a slash; search the host's.
		if len(args) > 1 && !strings.Contains(args[1], "/") {
			hc := interp.HandlerCtx(ctx)
			for _, dir := range strings.Split(hc.Env.Get("PATH").String(), ":") {
				p := abs(hc.Dir, dir+"/"+args[1])
				if fi, err := s.fs().stat(p); err == nil && fi.Mode().IsRegular() {
					return append([]string{args[0], p}, args[2:]...), nil
				}
			}
		}
	}
	return args, nil
}

// trapArgs keeps the conditions the interpreter handles (EXIT, ERR): the
// simulator delivers no signals, a cancelled command simply stops.
func trapArgs(args []string) []string {
	if len(args) < 3 {
		return args
	}
	out := []string{args[0], args[1]}
	for _, cond := range args[2:] {
		switch strings.TrimPrefix(strings.ToUpper(cond), "SIG") {
		case "EXIT", "0":
			out = append(out, "EXIT")
		case "ERR":
			out = append(out, "ERR")
		}
	}
	if len(out) == 2 {
		return []string{"true"}
	}
	return out
}

// exec runs a command that is not a function or builtin.
func (s *shell) exec(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	var env []string
	hc.Env.Each(func(name string, vr expand.Variable) bool {
		if vr.Exported && vr.IsSet() {
			env = append(env, name+"="+vr.String())
		}
		return true
	})
	c := &Call{
		Args: args, Stdin: hc.Stdin, Stdout: hc.Stdout, Stderr: hc.Stderr,
		Env: env, Host: s.host, User: s.user, Dir: hc.Dir,
		umask: s.umask, line: hc.Pos.Line(), shell: s.name,
	}
	if status := s.host.exec(ctx, c); status != 0 {
		return interp.ExitStatus(uint8(status))
	}
	return nil
}

// progCommandV is command -v / -V: builtins and keywords by name, other
// commands by the path PATH finds them at. Shell functions are not
// known to it (a limit of the simulator): they are looked for in PATH.
func progCommandV(_ context.Context, c *Call) int {
	verbose := c.Args[1] == "-V"
	status := 0
	for _, name := range c.Args[2:] {
		switch p := whereIs(c, name); {
		case p == "":
			status = 1
			if verbose {
				fmt.Fprintf(c.Stdout, "%s: not found\n", name)
			}
		case verbose && p == name:
			fmt.Fprintf(c.Stdout, "%s is a shell builtin\n", name)
		case verbose:
			fmt.Fprintf(c.Stdout, "%s is %s\n", name, p)
		default:
			fmt.Fprintln(c.Stdout, p)
		}
	}
	return status
}

// whereIs returns name for a builtin or keyword, the path of the
// executable that runs for name, or "".
func whereIs(c *Call, name string) string {
	if interp.IsBuiltin(name) || syntax.IsKeyword(name) {
		return name
	}
	if strings.Contains(name, "/") {
		if fi, err := c.Stat(name); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0 {
			return name
		}
		return ""
	}
	return c.Host.lookPath(c.fs(), c.Getenv("PATH"), name)
}

// progType is type NAME…, as dash prints it.
func progType(_ context.Context, c *Call) int {
	status := 0
	for _, name := range c.Args[1:] {
		switch p := whereIs(c, name); {
		case p == "":
			fmt.Fprintf(c.Stdout, "%s: not found\n", name)
			status = 127
		case p == name && syntax.IsKeyword(name):
			fmt.Fprintf(c.Stdout, "%s is a shell keyword\n", name)
		case p == name:
			fmt.Fprintf(c.Stdout, "%s is a shell builtin\n", name)
		default:
			fmt.Fprintf(c.Stdout, "%s is %s\n", name, p)
		}
	}
	return status
}

// progUmask is umask [MODE] (octal): the mask of the shell that runs it.
func progUmask(_ context.Context, c *Call) int {
	if len(c.Args) < 2 {
		fmt.Fprintf(c.Stdout, "%04o\n", c.mask())
		return 0
	}
	m, err := strconv.ParseUint(c.Args[1], 8, 32)
	if err != nil || m > 0o777 {
		return c.shellErr(2, "umask: Illegal mode: %s", c.Args[1])
	}
	if c.umask != nil {
		c.umask.Store(uint32(m))
	}
	return 0
}
