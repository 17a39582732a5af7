package pki

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openctl/openctl/errcode"
)

// File names used for certificate material. On a node they live in
// /etc/openctl-agent/ (ca.pem, server.pem, server.key); on the controller,
// in the cluster's state directory (ca.pem, ca.key, client.pem,
// client.key). ca.pem always holds the accepted bundle ([Bundle.PEM]).
const (
	CACertFile     = "ca.pem"
	CAKeyFile      = "ca.key"
	ServerCertFile = "server.pem"
	ServerKeyFile  = "server.key"
	ClientCertFile = "client.pem"
	ClientKeyFile  = "client.key"
)

// WriteFiles writes files (name → contents) into dir, creating dir (mode
// 0700) if it is missing. Names are plain file names, without a directory.
// Each file is written with mode 0600 to a temporary file in dir, synced
// and renamed over its name, so that a reader sees the old contents or
// the new, never a mix; dir is synced at the end. Files are written in
// name order; on an error the files already renamed stay.
func WriteFiles(dir string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for name := range files {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
			return fmt.Errorf("pki: write files: %q is not a plain file name: %w", name, errcode.Invalid)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pki: write files: %w", err)
	}
	for _, name := range names {
		if err := writeFile(dir, name, files[name]); err != nil {
			return err
		}
	}
	return syncDir(dir)
}

func writeFile(dir, name string, data []byte) (err error) {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("pki: write %s: %w", name, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return fmt.Errorf("pki: write %s: %w", name, err)
	}
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("pki: write %s: %w", name, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("pki: write %s: %w", name, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("pki: write %s: %w", name, err)
	}
	if err = os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("pki: write %s: %w", name, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("pki: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("pki: sync %s: %w", dir, err)
	}
	return nil
}

// LoadCA reads a CA from its certificate and key files.
func LoadCA(certFile, keyFile string) (*CA, error) {
	c, k, err := readPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	ca, err := ParseCA(c, k)
	if err != nil {
		return nil, fmt.Errorf("%w (%s, %s)", err, certFile, keyFile)
	}
	return ca, nil
}

// LoadLeaf reads a leaf certificate and its key from their files.
func LoadLeaf(certFile, keyFile string) (*Leaf, error) {
	c, k, err := readPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	l, err := ParseLeaf(c, k)
	if err != nil {
		return nil, fmt.Errorf("%w (%s, %s)", err, certFile, keyFile)
	}
	return l, nil
}

// LoadBundle reads an accepted-CAs bundle from a PEM file.
func LoadBundle(file string) (Bundle, error) {
	data, err := readFile(file)
	if err != nil {
		return Bundle{}, err
	}
	b, err := ParseBundle(data)
	if err != nil {
		return Bundle{}, fmt.Errorf("%w (%s)", err, file)
	}
	return b, nil
}

func readPair(certFile, keyFile string) ([]byte, []byte, error) {
	c, err := readFile(certFile)
	if err != nil {
		return nil, nil, err
	}
	k, err := readFile(keyFile)
	if err != nil {
		return nil, nil, err
	}
	return c, k, nil
}

func readFile(name string) ([]byte, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errcode.Wrap(errcode.NotFound, "pki", err)
	}
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	return data, nil
}
