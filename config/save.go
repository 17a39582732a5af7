package config

import (
	"bytes"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/errcode"
)

// Save writes the configuration file back to Path, or when Path is ""
// to the file Load looked for (or DefaultPath), and sets Path: the file as
// Load read it — comments, layout and secrets as the user wrote them —
// with the default contexts UseContext chose. What the environment
// overlay set is never written, and neither are changes a program made to
// State or Apply.
//
// The file is replaced atomically (a temporary file in the same
// directory, synced and renamed over it) with mode 0600; a missing
// directory is created with mode 0700. A symbolic link is followed, so
// the file it points to is replaced.
func (c *Config) Save() error {
	path := c.Path
	if path == "" {
		path = c.meta.source
	}
	if path == "" {
		p, err := DefaultPath()
		if err != nil {
			return err
		}
		path = p
	}
	var buf bytes.Buffer
	if c.meta.doc != nil {
		markNulls(c.meta.doc)
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(c.meta.doc); err != nil {
			return inputError(errcode.InputError{File: path, Msg: "cannot encode the configuration", Err: err})
		}
		if err := enc.Close(); err != nil {
			return inputError(errcode.InputError{File: path, Msg: "cannot encode the configuration", Err: err})
		}
	}
	data := buf.Bytes()
	if err := writeFileAtomic(path, data); err != nil {
		return inputError(errcode.InputError{File: path, Msg: "cannot save the configuration", Err: err})
	}
	c.Path = path
	return nil
}

// writeFileAtomic replaces path with data, mode 0600, through a synced
// temporary file renamed over it, creating the directory 0700 if needed.
func writeFileAtomic(path string, data []byte) (err error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	// Make the rename durable; a directory that cannot be synced (some
	// file systems) leaves the file written all the same.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// markNulls writes the empty nulls of n ("files:" with nothing after it)
// as "~": yaml.v3 would write them as ”, a string, which Load refuses
// where a map is due.
func markNulls(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Value == "" && n.ShortTag() == "!!null" {
		n.Value = "~"
	}
	for _, x := range n.Content {
		markNulls(x)
	}
}
