package k3semu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FS is the file system a k3s program sees on its host: the stand-in's
// is the machine's own ([OSFS]); the sandbox's is a simulated host's, as
// the program's user sees it. Paths are absolute and slash-separated.
type FS interface {
	// ReadFile returns a file's contents; a missing file is an error
	// satisfying errors.Is(err, fs.ErrNotExist).
	ReadFile(name string) ([]byte, error)
	// ReadDir lists a directory sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// Exists reports whether name exists.
	Exists(name string) bool
	// WriteFile replaces name atomically with data and mode perm,
	// making its parent directories.
	WriteFile(name string, data []byte, perm fs.FileMode) error
	// MkdirAll makes each directory and its parents with mode perm.
	MkdirAll(perm fs.FileMode, dirs ...string) error
	// Symlink makes link point at target, replacing what was there.
	Symlink(target, link string) error
	// Remove removes files; one that does not exist is no error.
	Remove(names ...string) error
	// Hostname is the host's name.
	Hostname() (string, error)
}

// OSFS is the file system of the machine the program runs on.
type OSFS struct{}

// ReadFile is [os.ReadFile].
func (OSFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

// ReadDir is [os.ReadDir].
func (OSFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// Exists reports whether [os.Stat] finds name.
func (OSFS) Exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

// WriteFile writes name.tmp, sets its mode and renames it to name.
func (OSFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return fmt.Errorf("standin: %w", err)
	}
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return fmt.Errorf("standin: %w", err)
	}
	if err := os.Chmod(tmp, perm); err != nil {
		return fmt.Errorf("standin: %w", err)
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("standin: %w", err)
	}
	return nil
}

// MkdirAll is [os.MkdirAll] for each directory.
func (OSFS) MkdirAll(perm fs.FileMode, dirs ...string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, perm); err != nil {
			return fmt.Errorf("standin: %w", err)
		}
	}
	return nil
}

// Symlink removes link and makes it anew.
func (f OSFS) Symlink(target, link string) error {
	if err := f.Remove(link); err != nil {
		return err
	}
	if err := os.Symlink(target, link); err != nil {
		return fmt.Errorf("standin: %w", err)
	}
	return nil
}

// Remove is [os.Remove] for each file, a missing one left out.
func (OSFS) Remove(names ...string) error {
	for _, n := range names {
		if err := os.Remove(n); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("standin: %w", err)
		}
	}
	return nil
}

// Hostname is [os.Hostname].
func (OSFS) Hostname() (string, error) { return os.Hostname() }

// nodeName is the default node name: the host's name in lower case.
func nodeName(f FS) (string, error) {
	h, err := f.Hostname()
	if err != nil {
		return "", fmt.Errorf("standin: node name: %w", err)
	}
	return strings.ToLower(h), nil
}
