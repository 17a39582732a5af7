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

	"github.com/openctl/openctl/sandbox/vmhost"
)

// hostFS is the file system of the host a k3s program runs on, as root:
// reads go through the host's fs.FS, writes through its shell (mkdir,
// chmod, mv, ln), so that every path stays confined to the host.
type hostFS struct {
	h *vmhost.Host
}

func rel(p string) string { return strings.TrimPrefix(path.Clean("/"+p), "/") }

func (f hostFS) readFile(p string) ([]byte, error) {
	b, err := fs.ReadFile(f.h.FS(), rel(p))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p, unwrapPath(err))
	}
	return b, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (f hostFS) exists(p string) bool {
	_, err := fs.Stat(f.h.FS(), rel(p))
	return err == nil
}

func (f hostFS) readDir(p string) ([]fs.DirEntry, error) {
	return fs.ReadDir(f.h.FS(), rel(p))
}

// sh runs script as root on the host; a non-zero status is an error
// carrying its standard error.
func (f hostFS) sh(script string, stdin io.Reader) error {
	var stderr bytes.Buffer
	st, err := f.h.Run(context.Background(), script, stdin, nil, &stderr, nil, "root")
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

// writeFile writes data to p atomically with mode perm, creating parents.
func (f hostFS) writeFile(p string, data []byte, perm os.FileMode) error {
	p = path.Clean(p)
	tmp := p + ".tmp"
	return f.sh(fmt.Sprintf("mkdir -p %s && cat > %s && chmod %04o %s && mv -f %s %s",
		q(path.Dir(p)), q(tmp), perm.Perm(), q(tmp), q(tmp), q(p)), bytes.NewReader(data))
}

// mkdirAll creates directories with mode perm.
func (f hostFS) mkdirAll(perm os.FileMode, dirs ...string) error {
	var b strings.Builder
	for _, d := range dirs {
		fmt.Fprintf(&b, "mkdir -p -m %04o %s\n", perm.Perm(), q(d))
	}
	return f.sh(b.String(), nil)
}

// symlink makes link point at target, replacing what was there.
func (f hostFS) symlink(target, link string) error {
	return f.sh("ln -sf "+q(target)+" "+q(link), nil)
}

func (f hostFS) remove(paths ...string) error {
	var qs []string
	for _, p := range paths {
		qs = append(qs, q(p))
	}
	return f.sh("rm -f "+strings.Join(qs, " "), nil)
}
