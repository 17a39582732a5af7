package k3slite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/openctl/openctl/sandbox/vmhost"
)

// hostFS is the FS of the host a k3s program runs on: the file system of the host a k3s program runs on, as the
// program's user sees it (root when empty): reads go through the host's
// file system, writes through its shell (mkdir, chmod, mv, ln), so that
// every path stays confined to the host and a user's rights apply.
type hostFS struct {
	h    *vmhost.Host
	user string
}

// callFS is the file system of c's host as c's user sees it.
func callFS(c *vmhost.Call) hostFS { return hostFS{h: c.Host, user: c.User} }

func (f hostFS) root() bool { return f.user == "" || f.user == "root" }

func rel(p string) string { return strings.TrimPrefix(path.Clean("/"+p), "/") }

func (f hostFS) ReadFile(p string) ([]byte, error) {
	if !f.root() {
		b, err := (&vmhost.Call{Host: f.h, User: f.user, Dir: "/"}).ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", p, unwrapPath(err))
		}
		return b, nil
	}
	b, err := fs.ReadFile(f.h.FS(), rel(p))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p, unwrapPath(err))
	}
	return b, nil
}

// unwrapPath is the cause of a path error, as Go's os package words it
// ("permission denied"; the host words its own in dash's way).
func unwrapPath(err error) error {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (f hostFS) Exists(p string) bool {
	_, err := fs.Stat(f.h.FS(), rel(p))
	return err == nil
}

func (f hostFS) ReadDir(p string) ([]fs.DirEntry, error) {
	return fs.ReadDir(f.h.FS(), rel(p))
}

// sh runs script as f's user on the host; a non-zero status is an error
// carrying its standard error.
func (f hostFS) sh(script string, stdin io.Reader) error {
	var stderr bytes.Buffer
	user := f.user
	if user == "" {
		user = "root"
	}
	st, err := f.h.Run(context.Background(), script, stdin, nil, &stderr, nil, user)
	if err != nil {
		return fmt.Errorf("k3slite: %w", err)
	}
	if st != 0 {
		return fmt.Errorf("k3slite: %s", strings.TrimSpace(stderr.String()))
	}
	return nil
}

// q quotes s for the shell.
func q(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// WriteFile writes data to p atomically with mode perm, creating parents.
func (f hostFS) WriteFile(p string, data []byte, perm os.FileMode) error {
	p = path.Clean(p)
	tmp := p + ".tmp"
	return f.sh(fmt.Sprintf("mkdir -p %s && cat > %s && chmod %04o %s && mv -f %s %s",
		q(path.Dir(p)), q(tmp), perm.Perm(), q(tmp), q(tmp), q(p)), bytes.NewReader(data))
}

// MkdirAll creates directories with mode perm.
func (f hostFS) MkdirAll(perm os.FileMode, dirs ...string) error {
	var b strings.Builder
	for _, d := range dirs {
		fmt.Fprintf(&b, "mkdir -p -m %04o %s\n", perm.Perm(), q(d))
	}
	return f.sh(b.String(), nil)
}

// Symlink makes link point at target, replacing what was there.
func (f hostFS) Symlink(target, link string) error {
	return f.sh("ln -sf "+q(target)+" "+q(link), nil)
}

func (f hostFS) Remove(paths ...string) error {
	var qs []string
	for _, p := range paths {
		qs = append(qs, q(p))
	}
	return f.sh("rm -f "+strings.Join(qs, " "), nil)
}

// Hostname is the host's name.
func (f hostFS) Hostname() (string, error) { return f.h.Hostname(), nil }
