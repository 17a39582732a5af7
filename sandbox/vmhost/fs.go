package vmhost

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// maxSymlinks is how many symbolic links one path lookup follows before
// it fails with ELOOP, as Linux does.
const maxSymlinks = 40

// sysError is an error printed the way coreutils print it ("No such file
// or directory") that still matches its errno with errors.Is.
type sysError struct {
	errno syscall.Errno
}

func (e sysError) Error() string {
	s := e.errno.Error()
	return strings.ToUpper(s[:1]) + s[1:]
}

func (e sysError) Unwrap() error { return e.errno }

// pathError returns a *fs.PathError for the virtual path p whose message
// is the one coreutils print.
func pathError(op, p string, err error) error {
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno):
	case errors.Is(err, fs.ErrNotExist):
		errno = syscall.ENOENT
	case errors.Is(err, fs.ErrExist):
		errno = syscall.EEXIST
	case errors.Is(err, fs.ErrPermission):
		errno = syscall.EACCES
	default:
		// os.Root's own refusals ("path escapes from parent") and the
		// like: to the script, the file is not there.
		errno = syscall.ENOENT
	}
	return &fs.PathError{Op: op, Path: p, Err: sysError{errno}}
}

// errText is what a program prints after "NAME: PATH: " for err.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// abs makes p absolute against the virtual working directory dir.
func abs(dir, p string) string {
	if strings.HasPrefix(p, "/") {
		return p
	}
	return path.Join(dir, p)
}

// rel turns a resolved virtual path into a name for os.Root.
func rel(p string) string {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if p == "" {
		return "."
	}
	return p
}

// resolve returns the virtual path p (absolute) with every symbolic link
// replaced by its target, as a chroot would see it: an absolute target
// starts again at the host's root, ".." never climbs above it. The last
// component is followed only when followLast is set. A path whose tail
// does not exist resolves to where it would be created.
func (h *Host) resolve(p string, followLast bool) (string, error) {
	orig := p
	hops := 0
	resolved := "/"
	rest := strings.Split(p, "/")
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = path.Dir(resolved)
			continue
		}
		next := path.Join(resolved, c)
		last := len(strings.Join(rest, "")) == 0
		if last && !followLast {
			resolved = next
			break
		}
		fi, err := h.root.Lstat(rel(next))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				resolved = path.Join(append([]string{next}, rest...)...)
				return path.Clean(resolved), nil
			}
			return "", pathError("lstat", orig, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.IsDir() && !last {
				return "", pathError("lstat", orig, syscall.ENOTDIR)
			}
			resolved = next
			continue
		}
		hops++
		if hops > maxSymlinks {
			return "", pathError("lstat", orig, syscall.ELOOP)
		}
		target, err := h.root.Readlink(rel(next))
		if err != nil {
			return "", pathError("readlink", orig, err)
		}
		if strings.HasPrefix(target, "/") {
			resolved = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return resolved, nil
}

// devNull is /dev/null.
type devNull struct{}

func (devNull) Read([]byte) (int, error)    { return 0, io.EOF }
func (devNull) Write(b []byte) (int, error) { return len(b), nil }
func (devNull) Close() error                { return nil }

// isDevNull reports whether the resolved virtual path is /dev/null.
func isDevNull(p string) bool { return p == "/dev/null" }

// writable lists where a user other than root may create, change and
// remove files: what a Debian host lets an ordinary user write.
func writableBy(user, p string) bool {
	if user == "root" {
		return true
	}
	for _, dir := range []string{"/tmp", "/var/tmp", "/home/" + user} {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return isDevNull(p)
}

// readableBy reports whether user may read the file at p with mode m:
// root reads everything; others what is readable by "other" or lies
// under their home or /tmp (the files they made themselves).
func readableBy(user, p string, m fs.FileMode) bool {
	return user == "root" || m.Perm()&0o004 != 0 || writableBy(user, p)
}

// fsys is the rooted file system as one user sees it: virtual absolute
// paths, resolved under the host's root. It is safe for concurrent use.
type fsys struct {
	h    *Host
	user string
}

// open opens the virtual path p (absolute), creating it with perm (less
// the umask) when flag says so.
func (f fsys) open(p string, flag int, perm fs.FileMode) (io.ReadWriteCloser, error) {
	rp, err := f.h.resolve(p, true)
	if err != nil {
		return nil, err
	}
	if isDevNull(rp) {
		return devNull{}, nil
	}
	write := flag&(os.O_WRONLY|os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_TRUNC) != 0
	fi, statErr := f.h.root.Stat(rel(rp))
	switch {
	case write && !writableBy(f.user, rp):
		return nil, pathError("open", p, syscall.EACCES)
	case statErr == nil && !write && !readableBy(f.user, rp, fi.Mode()):
		return nil, pathError("open", p, syscall.EACCES)
	case statErr == nil && fi.IsDir() && write:
		return nil, pathError("open", p, syscall.EISDIR)
	}
	file, err := f.h.root.OpenFile(rel(rp), flag, perm)
	if err != nil {
		return nil, pathError("open", p, err)
	}
	return file, nil
}

// readFile returns the contents of the virtual path p.
func (f fsys) readFile(p string) ([]byte, error) {
	r, err := f.open(p, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if fi, err := f.stat(p); err == nil && fi.IsDir() {
		return nil, pathError("read", p, syscall.EISDIR)
	}
	return io.ReadAll(r)
}

// stat returns the file information of p, following a final symbolic
// link when follow is set.
func (f fsys) stat(p string) (fs.FileInfo, error) { return f.statFollow(p, true) }

func (f fsys) lstat(p string) (fs.FileInfo, error) { return f.statFollow(p, false) }

func (f fsys) statFollow(p string, follow bool) (fs.FileInfo, error) {
	rp, err := f.h.resolve(p, follow)
	if err != nil {
		return nil, err
	}
	fi, err := f.h.root.Lstat(rel(rp))
	if err != nil {
		return nil, pathError("stat", p, err)
	}
	return fi, nil
}

// readDir lists the directory p.
func (f fsys) readDir(p string) ([]fs.DirEntry, error) {
	rp, err := f.h.resolve(p, true)
	if err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(f.h.root.FS(), rel(rp))
	if err != nil {
		return nil, pathError("scandir", p, err)
	}
	return entries, nil
}

// parentOf resolves p's directory, following links, and joins p's last
// component to it without following that one: the path an operation on
// the link itself (rm, mv, ln) works on.
func (f fsys) parentOf(p string) (string, error) {
	return f.h.resolve(p, false)
}

// checkWrite refuses a change at the resolved path rp for a user who may
// not write there.
func (f fsys) checkWrite(op, p, rp string) error {
	if !writableBy(f.user, rp) {
		return pathError(op, p, syscall.EACCES)
	}
	return nil
}

func (f fsys) mkdir(p string, perm fs.FileMode) error {
	rp, err := f.parentOf(p)
	if err != nil {
		return err
	}
	if err := f.checkWrite("mkdir", p, rp); err != nil {
		return err
	}
	if err := f.h.root.Mkdir(rel(rp), perm); err != nil {
		return pathError("mkdir", p, err)
	}
	return nil
}

func (f fsys) remove(p string) error { return f.unlink(p, false) }

func (f fsys) removeAll(p string) error { return f.unlink(p, true) }

// unlink removes p, with everything under it when all is set.
func (f fsys) unlink(p string, all bool) error {
	rp, err := f.parentOf(p)
	if err != nil {
		return err
	}
	if rp == "/" {
		return pathError("remove", p, syscall.EBUSY)
	}
	if err := f.checkWrite("remove", p, rp); err != nil {
		return err
	}
	rm := f.h.root.Remove
	if all {
		rm = f.h.root.RemoveAll
	}
	if err := rm(rel(rp)); err != nil {
		return pathError("remove", p, err)
	}
	return nil
}

func (f fsys) rename(from, to string) error {
	rf, err := f.parentOf(from)
	if err != nil {
		return err
	}
	rt, err := f.h.resolve(to, true)
	if err != nil {
		return err
	}
	if fi, err := f.h.root.Stat(rel(rt)); err == nil && fi.IsDir() {
		rt = path.Join(rt, path.Base(rf))
	}
	if err := f.checkWrite("rename", from, rf); err != nil {
		return err
	}
	if err := f.checkWrite("rename", to, rt); err != nil {
		return err
	}
	if err := f.h.root.Rename(rel(rf), rel(rt)); err != nil {
		return pathError("rename", to, err)
	}
	return nil
}

func (f fsys) chmod(p string, mode fs.FileMode) error {
	rp, err := f.h.resolve(p, true)
	if err != nil {
		return err
	}
	if err := f.checkWrite("chmod", p, rp); err != nil {
		return err
	}
	if err := f.h.root.Chmod(rel(rp), mode); err != nil {
		return pathError("chmod", p, err)
	}
	return nil
}

func (f fsys) symlink(target, p string) error {
	rp, err := f.parentOf(p)
	if err != nil {
		return err
	}
	if err := f.checkWrite("symlink", p, rp); err != nil {
		return err
	}
	if err := f.h.root.Symlink(target, rel(rp)); err != nil {
		return pathError("symlink", p, err)
	}
	return nil
}

func (f fsys) readlink(p string) (string, error) {
	rp, err := f.parentOf(p)
	if err != nil {
		return "", err
	}
	t, err := f.h.root.Readlink(rel(rp))
	if err != nil {
		return "", pathError("readlink", p, err)
	}
	return t, nil
}

// WriteFile writes data to the host's file name (an absolute path) as
// root would, creating missing parent directories (mode 0755) and giving
// the file perm, whatever the umask: how a test or a program seeds a
// host's files (a unit, a binary, a configuration).
func (h *Host) WriteFile(name string, data []byte, perm fs.FileMode) error {
	f := fsys{h: h, user: "root"}
	dir := ""
	for part := range strings.SplitSeq(strings.Trim(path.Dir(name), "/"), "/") {
		if part == "" {
			continue
		}
		dir += "/" + part
		if err := f.mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	w, err := f.open(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		_ = w.Close()
		return pathError("write", name, err)
	}
	if err := w.Close(); err != nil {
		return pathError("write", name, err)
	}
	return f.chmod(name, perm)
}

// ReadFile returns the contents of the host's file name (an absolute
// path), read as root would.
func (h *Host) ReadFile(name string) ([]byte, error) {
	return fsys{h: h, user: "root"}.readFile(name)
}
