package vmhost

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// builtins returns the programs every host has, by name. Each takes the
// flags the scripts openctl sends use, listed in its comment; others are
// refused with status 1 (coreutils' "invalid option" is status 1 too).
func builtins() map[string]Program {
	return map[string]Program{
		"sh": progSh, "dash": progSh, "sudo": progSudo,
		"cat": progCat, "sha256sum": progSha256sum, "cut": progCut,
		"head": progHead, "tail": progTail, "uname": progUname,
		"mkdir": progMkdir, "rm": progRm, "mv": progMv, "cp": progCp,
		"chmod": progChmod, "ln": progLn, "install": progInstall,
		"touch": progTouch, "truncate": progTruncate, "mktemp": progMktemp, "dirname": progDirname,
		"basename": progBasename, "sleep": progSleep, "id": progID,
		"whoami": progWhoami, "env": progEnv, "tr": progTr, "wc": progWc,
		"grep": progGrep, "ip": progIP, "readlink": progReadlink,
		"hostname": progHostname, "kill": progKill, "modprobe": progModprobe,
	}
}

// sbinPrograms are the built-in programs whose marker is in /usr/sbin
// (/sbin), where Debian has them.
var sbinPrograms = map[string]bool{"modprobe": true}

// progModprobe is `modprobe [-q] [-v] [-n] MODULE...`: the simulated
// kernel has every module built in, so loading one succeeds and does
// nothing, as modprobe of a built-in module does. root only.
func progModprobe(_ context.Context, c *Call) int {
	var mods []string
	for _, a := range c.Args[1:] {
		switch {
		case a == "-q" || a == "--quiet" || a == "-v" || a == "--verbose" || a == "-n" || a == "--dry-run" || a == "-b" || a == "--use-blacklist":
		case strings.HasPrefix(a, "-"):
			return c.Errorf(1, "ERROR: unrecognized option: %s", a)
		default:
			mods = append(mods, a)
		}
	}
	if len(mods) == 0 {
		return c.Errorf(1, "ERROR: missing parameters. See -h.")
	}
	if c.User != "root" {
		return c.Errorf(1, "ERROR: could not insert '%s': Operation not permitted", mods[0])
	}
	return 0
}

// flags splits args into single-letter options (bundled: -rf) and
// operands; "--" ends the options. Options in withValue take a value,
// attached (-n5) or next (-n 5). An unknown option is an error naming it.
func flags(args []string, known, withValue string) (map[byte]string, []string, error) {
	opts := map[byte]string{}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			rest = append(rest, a)
			continue
		}
		for j := 1; j < len(a); j++ {
			f := a[j]
			switch {
			case strings.IndexByte(withValue, f) >= 0:
				v := a[j+1:]
				if v == "" {
					if i+1 >= len(args) {
						return nil, nil, fmt.Errorf("option requires an argument -- '%c'", f)
					}
					i++
					v = args[i]
				}
				opts[f] = v
				j = len(a)
			case strings.IndexByte(known, f) >= 0:
				opts[f] = "1"
			default:
				return nil, nil, fmt.Errorf("invalid option -- '%c'", f)
			}
		}
	}
	return opts, rest, nil
}

// inputs calls fn with each operand's contents (standard input for none
// or "-"), printing "NAME: FILE: error" for a file that cannot be read;
// it returns 1 when one could not.
func inputs(c *Call, files []string, fn func(name string, r io.Reader) error) int {
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	for _, name := range files {
		if name == "-" {
			if err := fn(name, c.Stdin); err != nil {
				return c.Errorf(1, "%s", errText(err))
			}
			continue
		}
		if fi, err := c.Stat(name); err == nil && fi.IsDir() {
			status = c.Errorf(1, "%s: Is a directory", name)
			continue
		}
		f, err := c.Open(name, os.O_RDONLY, 0)
		if err != nil {
			status = c.Errorf(1, "%s: %s", name, errText(err))
			continue
		}
		err = fn(name, f)
		f.Close()
		if err != nil {
			status = c.Errorf(1, "%s: %s", name, errText(err))
		}
	}
	return status
}

// progCat is cat [FILE…].
func progCat(ctx context.Context, c *Call) int {
	_, files, err := flags(c.Args[1:], "u", "")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	return inputs(c, files, func(_ string, r io.Reader) error {
		_, err := io.Copy(c.Stdout, ctxReader{ctx, r})
		return err
	})
}

// regularSize returns the size of r when it is a regular file of the
// host (a file operand, or a redirection), which can also seek: wc -c and
// tail -c then need not read it whole, as coreutils do not.
func regularSize(r io.Reader) (int64, bool) {
	f, ok := r.(interface {
		io.Seeker
		Stat() (fs.FileInfo, error)
	})
	if !ok {
		return 0, false
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return 0, false
	}
	return fi.Size(), true
}

// ctxReader stops reading once ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxReader) Read(b []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(b)
}

// progSha256sum is sha256sum [FILE…]: "HASH  FILE" lines.
func progSha256sum(ctx context.Context, c *Call) int {
	_, files, err := flags(c.Args[1:], "bt", "")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	return inputs(c, files, func(name string, r io.Reader) error {
		h := sha256.New()
		if _, err := io.Copy(h, ctxReader{ctx, r}); err != nil {
			return err
		}
		fmt.Fprintf(c.Stdout, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), name)
		return nil
	})
}

// lines calls fn with each line of r, without its newline; last tells
// whether the line had none.
func lines(r io.Reader, fn func(line string, last bool) bool) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			noNL := !strings.HasSuffix(line, "\n")
			if !fn(strings.TrimSuffix(line, "\n"), noNL) {
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// progCut is cut -d DELIM -f LIST [-s] [FILE…]; LIST is N, N-M, N-, -M,
// comma separated.
func progCut(_ context.Context, c *Call) int {
	opts, files, err := flags(c.Args[1:], "s", "df")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	delim := "\t"
	if d, ok := opts['d']; ok {
		if len(d) != 1 {
			return c.Errorf(1, "the delimiter must be a single character")
		}
		delim = d
	}
	list, ok := opts['f']
	if !ok {
		return c.Errorf(1, "you must specify a list of bytes, characters, or fields")
	}
	want, err := parseList(list)
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	return inputs(c, files, func(_ string, r io.Reader) error {
		return lines(r, func(line string, _ bool) bool {
			if !strings.Contains(line, delim) {
				if opts['s'] == "" {
					fmt.Fprintln(c.Stdout, line)
				}
				return true
			}
			var out []string
			for i, f := range strings.Split(line, delim) {
				if want(i + 1) {
					out = append(out, f)
				}
			}
			fmt.Fprintln(c.Stdout, strings.Join(out, delim))
			return true
		})
	})
}

// parseList parses cut's field list.
func parseList(list string) (func(int) bool, error) {
	type span struct{ lo, hi int }
	var spans []span
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		s := span{1, 1 << 30}
		var err error
		if lo != "" {
			if s.lo, err = strconv.Atoi(lo); err != nil || s.lo < 1 {
				return nil, fmt.Errorf("invalid field value '%s'", part)
			}
		}
		switch {
		case !isRange:
			s.hi = s.lo
		case hi != "":
			if s.hi, err = strconv.Atoi(hi); err != nil || s.hi < s.lo {
				return nil, fmt.Errorf("invalid field range")
			}
		case lo == "":
			return nil, fmt.Errorf("invalid range with no endpoint: -")
		}
		spans = append(spans, s)
	}
	return func(i int) bool {
		return slices.ContainsFunc(spans, func(s span) bool { return i >= s.lo && i <= s.hi })
	}, nil
}

// countArg reads head's and tail's -n N, -nN and -N (lines), or -c N
// (bytes: inBytes).
func countArg(c *Call) (n int, plus, inBytes bool, files []string, err error) {
	args := slices.Clone(c.Args[1:])
	for i, a := range args {
		if len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			args[i] = "-n" + a[1:]
		}
	}
	opts, files, err := flags(args, "qv", "nc")
	if err != nil {
		return 0, false, false, nil, err
	}
	v, ok := opts['n']
	what := "lines"
	if b, isBytes := opts['c']; isBytes {
		v, ok, inBytes, what = b, true, true, "bytes"
	}
	if !ok {
		return 10, false, false, files, nil
	}
	plus = strings.HasPrefix(v, "+")
	n, err = strconv.Atoi(strings.TrimPrefix(v, "+"))
	if err != nil || n < 0 {
		return 0, false, false, nil, fmt.Errorf("invalid number of %s: '%s'", what, v)
	}
	return n, plus, inBytes, files, nil
}

// writeLine prints a line, with its newline unless it had none.
func writeLine(w io.Writer, line string, last bool) {
	if last {
		io.WriteString(w, line)
		return
	}
	io.WriteString(w, line+"\n")
}

// progHead is head [-n N | -nN | -N | -c N] [FILE…].
func progHead(ctx context.Context, c *Call) int {
	n, _, inBytes, files, err := countArg(c)
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	return inputs(c, files, func(_ string, r io.Reader) error {
		if inBytes {
			_, err := io.Copy(c.Stdout, io.LimitReader(ctxReader{ctx, r}, int64(n)))
			return err
		}
		i := 0
		return lines(r, func(line string, last bool) bool {
			if i >= n {
				return false
			}
			i++
			writeLine(c.Stdout, line, last)
			return i < n
		})
	})
}

// progTail is tail [-n N | -n +N | -N | -c N | -c +N] [FILE…].
func progTail(ctx context.Context, c *Call) int {
	n, plus, inBytes, files, err := countArg(c)
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	return inputs(c, files, func(_ string, r io.Reader) error {
		if inBytes {
			if size, isFile := regularSize(r); isFile && !plus {
				if _, err := r.(io.Seeker).Seek(max(size-int64(n), 0), io.SeekStart); err != nil {
					return err
				}
				_, err := io.Copy(c.Stdout, ctxReader{ctx, r})
				return err
			}
			data, err := io.ReadAll(ctxReader{ctx, r})
			switch {
			case plus:
				data = data[min(max(n-1, 0), len(data)):]
			default:
				data = data[len(data)-min(n, len(data)):]
			}
			c.Stdout.Write(data)
			return err
		}
		type ln struct {
			s    string
			last bool
		}
		var all []ln
		i := 0
		err := lines(r, func(line string, last bool) bool {
			i++
			if plus {
				if i >= n {
					writeLine(c.Stdout, line, last)
				}
				return true
			}
			all = append(all, ln{line, last})
			if len(all) > n {
				all = all[1:]
			}
			return true
		})
		for _, l := range all {
			writeLine(c.Stdout, l.s, l.last)
		}
		return err
	})
}

// kernelRelease is uname -r.
const kernelRelease = "6.12.48+deb13-amd64"

// progUname is uname [-asnrvmo].
func progUname(_ context.Context, c *Call) int {
	opts, rest, err := flags(c.Args[1:], "asnrvmpio", "")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	if len(rest) > 0 {
		return c.Errorf(1, "extra operand '%s'", rest[0])
	}
	if len(opts) == 0 {
		opts['s'] = "1"
	}
	all := opts['a'] != ""
	var out []string
	for _, f := range []struct {
		flag byte
		v    string
	}{
		{'s', "Linux"}, {'n', c.Host.hostname}, {'r', kernelRelease},
		{'v', "#1 SMP PREEMPT_DYNAMIC Debian 6.12.48-1 (2025-09-20)"}, {'m', c.Host.arch},
		{'o', "GNU/Linux"},
	} {
		if all || opts[f.flag] != "" {
			out = append(out, f.v)
		}
	}
	fmt.Fprintln(c.Stdout, strings.Join(out, " "))
	return 0
}

// parseMode parses an octal mode, or a symbolic one of the form
// [ugoa]*[+-=][rwxst]* (one clause) against old.
func parseMode(s string, old fs.FileMode) (fs.FileMode, error) {
	if m, err := strconv.ParseUint(s, 8, 32); err == nil && m <= 0o7777 {
		return octalMode(uint32(m)), nil
	}
	i := strings.IndexAny(s, "+-=")
	if i < 0 || strings.Trim(s[:i], "ugoa") != "" || strings.Trim(s[i+1:], "rwxst") != "" {
		return 0, fmt.Errorf("invalid mode: '%s'", s)
	}
	who := s[:i]
	if who == "" || strings.Contains(who, "a") {
		who = "ugo"
	}
	var bits fs.FileMode
	for _, w := range who {
		shift := map[rune]uint{'u': 6, 'g': 3, 'o': 0}[w]
		for _, p := range s[i+1:] {
			switch p {
			case 'r':
				bits |= 4 << shift
			case 'w':
				bits |= 2 << shift
			case 'x':
				bits |= 1 << shift
			}
		}
	}
	perm := old.Perm()
	switch s[i] {
	case '+':
		perm |= bits
	case '-':
		perm &^= bits
	case '=':
		perm = bits
	}
	return perm | old&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky), nil
}

// octalMode converts a chmod octal number to an fs.FileMode.
func octalMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// mkdirAll makes p and its missing parents (0755 less the umask); the
// last one gets mode when it is not zero.
func mkdirAll(c *Call, p string, mode fs.FileMode) error {
	p = c.Path(p)
	if fi, err := c.Stat(p); err == nil {
		if !fi.IsDir() {
			return pathError("mkdir", p, syscall.EEXIST)
		}
		return nil
	}
	if parent := path.Dir(p); parent != p {
		if err := mkdirAll(c, parent, 0); err != nil {
			return err
		}
	}
	perm := 0o777 &^ c.mask()
	if err := c.fs().mkdir(p, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if mode != 0 {
		return c.fs().chmod(p, mode)
	}
	return nil
}

// progMkdir is mkdir [-p] [-m MODE] DIR….
func progMkdir(_ context.Context, c *Call) int {
	opts, dirs, err := flags(c.Args[1:], "pv", "m")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	if len(dirs) == 0 {
		return c.Errorf(1, "missing operand")
	}
	var mode fs.FileMode
	if m, ok := opts['m']; ok {
		if mode, err = parseMode(m, 0o777&^c.mask()); err != nil {
			return c.Errorf(1, "%v", err)
		}
	}
	status := 0
	for _, d := range dirs {
		if opts['p'] != "" {
			err = mkdirAll(c, d, mode)
		} else {
			err = c.fs().mkdir(c.Path(d), 0o777&^c.mask())
			if err == nil && mode != 0 {
				err = c.fs().chmod(c.Path(d), mode)
			}
		}
		if err != nil {
			status = c.Errorf(1, "cannot create directory '%s': %s", d, errText(err))
		}
	}
	return status
}

// progRm is rm [-f] [-r|-R] FILE….
func progRm(_ context.Context, c *Call) int {
	opts, files, err := flags(c.Args[1:], "frRvdi", "")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	force := opts['f'] != ""
	recursive := opts['r'] != "" || opts['R'] != ""
	if len(files) == 0 && !force {
		return c.Errorf(1, "missing operand")
	}
	status := 0
	for _, f := range files {
		fi, err := c.Lstat(f)
		switch {
		case err != nil:
			if !force || !errors.Is(err, fs.ErrNotExist) {
				status = c.Errorf(1, "cannot remove '%s': %s", f, errText(err))
			}
			continue
		case fi.IsDir() && !recursive:
			status = c.Errorf(1, "cannot remove '%s': Is a directory", f)
			continue
		}
		if recursive {
			err = c.fs().removeAll(c.Path(f))
		} else {
			err = c.fs().remove(c.Path(f))
		}
		if err != nil {
			status = c.Errorf(1, "cannot remove '%s': %s", f, errText(err))
		}
	}
	return status
}

// progMv is mv [-f] SRC… DST.
func progMv(_ context.Context, c *Call) int {
	_, args, err := flags(c.Args[1:], "fvnT", "")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	if len(args) < 2 {
		return c.Errorf(1, "missing destination file operand")
	}
	dst := args[len(args)-1]
	status := 0
	for _, src := range args[:len(args)-1] {
		if _, err := c.Lstat(src); err != nil {
			status = c.Errorf(1, "cannot stat '%s': %s", src, errText(err))
			continue
		}
		if err := c.fs().rename(c.Path(src), c.Path(dst)); err != nil {
			status = c.Errorf(1, "cannot move '%s' to '%s': %s", src, dst, errText(err))
		}
	}
	return status
}

// copyFile copies the regular file src to dst (a file, or a directory
// to copy into) with src's mode.
func copyFile(c *Call, src, dst string, mode fs.FileMode) error {
	fi, err := c.Stat(src)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return pathError("copy", src, syscall.EISDIR)
	}
	if mode == 0 {
		mode = fi.Mode().Perm()
	}
	if di, err := c.Stat(dst); err == nil && di.IsDir() {
		dst = path.Join(c.Path(dst), path.Base(src))
	}
	in, err := c.Open(src, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := c.fs().open(c.Path(dst), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return c.fs().chmod(c.Path(dst), mode)
}

// progCp is cp [-f] [-p] SRC… DST (regular files).
func progCp(_ context.Context, c *Call) int {
	_, args, err := flags(c.Args[1:], "fpv", "")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	if len(args) < 2 {
		return c.Errorf(1, "missing destination file operand after '%s'", strings.Join(args, " "))
	}
	dst := args[len(args)-1]
	status := 0
	for _, src := range args[:len(args)-1] {
		if fi, err := c.Stat(src); err == nil && fi.IsDir() {
			status = c.Errorf(1, "-r not specified; omitting directory '%s'", src)
			continue
		}
		if err := copyFile(c, src, dst, 0); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) && pe.Path == c.Path(src) {
				status = c.Errorf(1, "cannot stat '%s': %s", src, errText(err))
			} else {
				status = c.Errorf(1, "cannot create regular file '%s': %s", dst, errText(err))
			}
		}
	}
	return status
}

// progChmod is chmod MODE FILE… (octal, or one symbolic clause).
func progChmod(_ context.Context, c *Call) int {
	_, args, err := flags(c.Args[1:], "Rfv", "")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	if len(args) < 2 {
		return c.Errorf(1, "missing operand")
	}
	status := 0
	for _, f := range args[1:] {
		fi, err := c.Stat(f)
		if err != nil {
			status = c.Errorf(1, "cannot access '%s': %s", f, errText(err))
			continue
		}
		mode, err := parseMode(args[0], fi.Mode())
		if err != nil {
			return c.Errorf(1, "%v", err)
		}
		if err := c.fs().chmod(c.Path(f), mode); err != nil {
			status = c.Errorf(1, "changing permissions of '%s': %s", f, errText(err))
		}
	}
	return status
}

// progLn is ln [-s] [-f] [-n] TARGET LINK (or TARGET DIR).
func progLn(_ context.Context, c *Call) int {
	opts, args, err := flags(c.Args[1:], "sfnvT", "")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	if len(args) != 2 {
		return c.Errorf(1, "need a TARGET and a LINK_NAME")
	}
	target, link := args[0], args[1]
	if fi, err := c.Stat(link); err == nil && fi.IsDir() && opts['n'] == "" {
		link = path.Join(link, path.Base(target))
	} else if fi, err := c.Lstat(link); err == nil && fi.IsDir() {
		link = path.Join(link, path.Base(target))
	}
	if _, err := c.Lstat(link); err == nil {
		if opts['f'] == "" {
			return c.Errorf(1, "failed to create %slink '%s': File exists", map[bool]string{true: "symbolic ", false: "hard "}[opts['s'] != ""], link)
		}
		if err := c.fs().remove(c.Path(link)); err != nil {
			return c.Errorf(1, "cannot remove '%s': %s", link, errText(err))
		}
	}
	if opts['s'] != "" {
		err = c.fs().symlink(target, c.Path(link))
	} else {
		err = hardLink(c, target, link)
	}
	if err != nil {
		return c.Errorf(1, "failed to create link '%s' -> '%s': %s", link, target, errText(err))
	}
	return 0
}

// hardLink makes link a second name of target.
func hardLink(c *Call, target, link string) error {
	rt, err := c.Host.resolve(c.Path(target), true)
	if err != nil {
		return err
	}
	rl, err := c.Host.resolve(c.Path(link), false)
	if err != nil {
		return err
	}
	if err := c.fs().checkWrite("link", link, rl); err != nil {
		return err
	}
	if err := c.Host.root.Link(rel(rt), rel(rl)); err != nil {
		return pathError("link", link, err)
	}
	return nil
}

// progInstall is install -d [-m MODE] DIR…, or install [-m MODE] SRC
// DST (mode 0755 by default).
func progInstall(_ context.Context, c *Call) int {
	opts, args, err := flags(c.Args[1:], "dDpvsc", "mogt")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	mode := fs.FileMode(0o755)
	if m, ok := opts['m']; ok {
		if mode, err = parseMode(m, 0o755); err != nil {
			return c.Errorf(1, "%v", err)
		}
	}
	if opts['d'] != "" {
		if len(args) == 0 {
			return c.Errorf(1, "missing file operand")
		}
		status := 0
		for _, d := range args {
			if err := mkdirAll(c, d, 0); err == nil {
				err = c.fs().chmod(c.Path(d), mode)
			} else {
				status = c.Errorf(1, "cannot create directory '%s': %s", d, errText(err))
			}
		}
		return status
	}
	if len(args) != 2 {
		return c.Errorf(1, "missing destination file operand")
	}
	if opts['D'] != "" {
		if err := mkdirAll(c, path.Dir(c.Path(args[1])), 0); err != nil {
			return c.Errorf(1, "cannot create directory '%s': %s", path.Dir(args[1]), errText(err))
		}
	}
	if err := copyFile(c, args[0], args[1], mode); err != nil {
		return c.Errorf(1, "cannot install '%s' to '%s': %s", args[0], args[1], errText(err))
	}
	return 0
}

// progTouch is touch FILE…: created when missing, its times set to now.
func progTouch(_ context.Context, c *Call) int {
	_, files, err := flags(c.Args[1:], "acm", "")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	status := 0
	for _, name := range files {
		f, err := c.Open(name, os.O_WRONLY|os.O_CREATE, 0o666)
		if err != nil {
			status = c.Errorf(1, "cannot touch '%s': %s", name, errText(err))
			continue
		}
		f.Close()
		now := time.Now()
		if rp, err := c.Host.resolve(c.Path(name), true); err == nil {
			_ = c.Host.root.Chtimes(rel(rp), now, now)
		}
	}
	return status
}

// progTruncate is truncate [-c] -s SIZE FILE… (SIZE in bytes): each file
// cut or extended (with zeros) to SIZE, created unless -c.
func progTruncate(_ context.Context, c *Call) int {
	opts, files, err := flags(c.Args[1:], "c", "s")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	v, ok := opts['s']
	if !ok {
		return c.Errorf(1, "you must specify either '--size' or '--reference'")
	}
	size, err := strconv.ParseInt(v, 10, 64)
	if err != nil || size < 0 {
		return c.Errorf(1, "Invalid number: '%s'", v)
	}
	if len(files) == 0 {
		return c.Errorf(1, "missing file operand")
	}
	flag := os.O_WRONLY | os.O_CREATE
	if _, noCreate := opts['c']; noCreate {
		flag = os.O_WRONLY
	}
	status := 0
	for _, name := range files {
		f, err := c.Open(name, flag, 0o666)
		if errors.Is(err, fs.ErrNotExist) && flag == os.O_WRONLY {
			continue
		}
		if err != nil {
			status = c.Errorf(1, "cannot open '%s' for writing: %s", name, errText(err))
			continue
		}
		t, ok := f.(interface{ Truncate(int64) error })
		if !ok {
			f.Close()
			status = c.Errorf(1, "failed to truncate '%s': Invalid argument", name)
			continue
		}
		if err := t.Truncate(size); err != nil {
			status = c.Errorf(1, "failed to truncate '%s' at %d bytes: %s", name, size, errText(err))
		}
		f.Close()
	}
	return status
}

// progMktemp is mktemp [-d] [-p DIR] [TEMPLATE] (XXX… at its end, at
// least three; default /tmp/tmp.XXXXXXXXXX).
func progMktemp(_ context.Context, c *Call) int {
	opts, args, err := flags(c.Args[1:], "dqut", "p")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	tmpl := "tmp.XXXXXXXXXX"
	dir := ""
	if len(args) > 0 {
		tmpl = args[0]
	} else {
		dir = "/tmp"
	}
	if d, ok := opts['p']; ok {
		dir = d
	} else if opts['t'] != "" {
		dir = "/tmp"
	}
	if dir != "" {
		tmpl = path.Join(dir, tmpl)
	}
	n := len(tmpl) - len(strings.TrimRight(tmpl, "X"))
	if n < 3 {
		return c.Errorf(1, "too few X's in template '%s'", tmpl)
	}
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	for try := 0; try < 100; try++ {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		for i := range b {
			b[i] = letters[int(b[i])%len(letters)]
		}
		name := tmpl[:len(tmpl)-n] + string(b)
		if opts['d'] != "" {
			err = c.fs().mkdir(c.Path(name), 0o700)
		} else {
			var f io.ReadWriteCloser
			f, err = c.fs().open(c.Path(name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
			if err == nil {
				f.Close()
			}
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			what := "file"
			if opts['d'] != "" {
				what = "directory"
			}
			return c.Errorf(1, "failed to create %s via template '%s': %s", what, tmpl, errText(err))
		}
		fmt.Fprintln(c.Stdout, name)
		return 0
	}
	return c.Errorf(1, "failed to create file via template '%s': File exists", tmpl)
}

// progDirname is dirname NAME….
func progDirname(_ context.Context, c *Call) int {
	_, args, err := flags(c.Args[1:], "z", "")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	if len(args) == 0 {
		return c.Errorf(1, "missing operand")
	}
	for _, a := range args {
		d := strings.TrimRight(a, "/")
		switch i := strings.LastIndexByte(d, '/'); {
		case a != "" && d == "":
			d = "/"
		case i < 0:
			d = "."
		default:
			d = strings.TrimRight(d[:i], "/")
			if d == "" {
				d = "/"
			}
		}
		fmt.Fprintln(c.Stdout, d)
	}
	return 0
}

// progBasename is basename NAME [SUFFIX].
func progBasename(_ context.Context, c *Call) int {
	_, args, err := flags(c.Args[1:], "", "")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	if len(args) == 0 || len(args) > 2 {
		return c.Errorf(1, "missing operand")
	}
	b := strings.TrimRight(args[0], "/")
	switch {
	case b == "" && args[0] != "":
		b = "/"
	default:
		b = b[strings.LastIndexByte(b, '/')+1:]
	}
	if len(args) == 2 && b != args[1] {
		b = strings.TrimSuffix(b, args[1])
	}
	fmt.Fprintln(c.Stdout, b)
	return 0
}

// progSleep is sleep N[smhd]…; it ends early when ctx does.
func progSleep(ctx context.Context, c *Call) int {
	if len(c.Args) < 2 {
		return c.Errorf(1, "missing operand")
	}
	var total time.Duration
	for _, a := range c.Args[1:] {
		unit := time.Second
		switch {
		case strings.HasSuffix(a, "s"):
			a = a[:len(a)-1]
		case strings.HasSuffix(a, "m"):
			a, unit = a[:len(a)-1], time.Minute
		case strings.HasSuffix(a, "h"):
			a, unit = a[:len(a)-1], time.Hour
		case strings.HasSuffix(a, "d"):
			a, unit = a[:len(a)-1], 24*time.Hour
		}
		f, err := strconv.ParseFloat(a, 64)
		if err != nil || f < 0 {
			return c.Errorf(1, "invalid time interval '%s'", a)
		}
		total += time.Duration(f * float64(unit))
	}
	t := time.NewTimer(total)
	defer t.Stop()
	select {
	case <-t.C:
		return 0
	case <-ctx.Done():
		return 143
	}
}

// uid is a user's number: 0 for root, 1000 for any other login.
func uid(user string) int {
	if user == "root" {
		return 0
	}
	return 1000
}

// progID is id [-u|-g] [-n].
func progID(_ context.Context, c *Call) int {
	opts, _, err := flags(c.Args[1:], "ugnG", "")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	u := uid(c.User)
	switch {
	case (opts['u'] != "" || opts['g'] != "" || opts['G'] != "") && opts['n'] != "":
		fmt.Fprintln(c.Stdout, c.User)
	case opts['u'] != "", opts['g'] != "", opts['G'] != "":
		fmt.Fprintln(c.Stdout, u)
	default:
		fmt.Fprintf(c.Stdout, "uid=%d(%s) gid=%d(%s) groups=%d(%s)\n", u, c.User, u, c.User, u, c.User)
	}
	return 0
}

// progWhoami prints the user's name.
func progWhoami(_ context.Context, c *Call) int {
	fmt.Fprintln(c.Stdout, c.User)
	return 0
}

// progHostname prints the host's name.
func progHostname(_ context.Context, c *Call) int {
	fmt.Fprintln(c.Stdout, c.Host.hostname)
	return 0
}

// progEnv is env [-i] [-u NAME] [NAME=VALUE…] [COMMAND [ARG…]].
func progEnv(ctx context.Context, c *Call) int {
	env := slices.Clone(c.Env)
	args := c.Args[1:]
	for len(args) > 0 {
		switch a := args[0]; {
		case a == "-i" || a == "-":
			env = nil
		case a == "-u" && len(args) > 1:
			args = args[1:]
			env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, args[0]+"=") })
		case strings.HasPrefix(a, "-") && a != "--":
			return c.Errorf(125, "invalid option -- '%s'", strings.TrimPrefix(a, "-"))
		case strings.Contains(a, "="):
			k, _, _ := strings.Cut(a, "=")
			env = append(slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") }), a)
		default:
			if a == "--" {
				args = args[1:]
			}
			if len(args) == 0 {
				break
			}
			sub := c.sub(args)
			sub.Env = env
			file := args[0]
			if !strings.Contains(file, "/") {
				file = c.Host.lookPath(sub.fs(), sub.Getenv("PATH"), file)
			}
			if file == "" {
				return c.Errorf(127, "'%s': No such file or directory", args[0])
			}
			return c.Host.exec(ctx, sub)
		}
		args = args[1:]
	}
	for _, kv := range env {
		fmt.Fprintln(c.Stdout, kv)
	}
	return 0
}

// progSudo is sudo [-n] [-u root] [--] COMMAND [ARG…]: every user may run
// every command as root, without a password (the rule of the
// simulator's hosts). The environment is reset as sudo's env_reset
// does.
func progSudo(ctx context.Context, c *Call) int {
	args := c.Args[1:]
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		a := args[0]
		args = args[1:]
		switch a {
		case "--":
			goto run
		case "-n", "-E", "-H":
		case "-u":
			if len(args) == 0 || args[0] != "root" {
				fmt.Fprintln(c.Stderr, "sudo: only -u root is supported here")
				return 1
			}
			args = args[1:]
		default:
			fmt.Fprintf(c.Stderr, "sudo: invalid option -- '%s'\n", strings.TrimPrefix(a, "-"))
			return 1
		}
	}
run:
	if len(args) == 0 {
		fmt.Fprintln(c.Stderr, "usage: sudo -n COMMAND")
		return 1
	}
	sub := c.sub(args)
	sub.User = "root"
	sub.Env = append(c.Host.baseEnv("root"), "SUDO_USER="+c.User, "SUDO_UID="+strconv.Itoa(uid(c.User)), "SUDO_GID="+strconv.Itoa(uid(c.User)), "SUDO_COMMAND="+strings.Join(args, " "))
	if term := c.Getenv("TERM"); term != "" {
		sub.Env = append(sub.Env, "TERM="+term)
	}
	if !strings.Contains(args[0], "/") && c.Host.lookPath(sub.fs(), sub.Getenv("PATH"), args[0]) == "" {
		fmt.Fprintf(c.Stderr, "sudo: %s: command not found\n", args[0])
		return 1
	}
	return c.Host.exec(ctx, sub)
}

// progReadlink is readlink [-f] FILE.
func progReadlink(_ context.Context, c *Call) int {
	opts, args, err := flags(c.Args[1:], "fenmqsv", "")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	status := 0
	for _, a := range args {
		if opts['f'] != "" || opts['e'] != "" || opts['m'] != "" {
			rp, err := c.Host.resolve(c.Path(a), true)
			if err != nil {
				status = 1
				continue
			}
			fmt.Fprintln(c.Stdout, rp)
			continue
		}
		t, err := c.fs().readlink(c.Path(a))
		if err != nil {
			status = 1
			continue
		}
		fmt.Fprintln(c.Stdout, t)
	}
	return status
}
