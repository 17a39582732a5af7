// Package jsonfile keeps the example plugins' resources as one JSON file
// per resource in a directory.
package jsonfile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/openctl/openctl/manifest"
)

// Path returns the file of the resource name in dir.
func Path(dir, name string) string { return filepath.Join(dir, name+".json") }

// Read reads the resource kept at path; a missing file is an error
// matching fs.ErrNotExist.
func Read(path string) (*manifest.Resource, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r manifest.Resource
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// List reads every resource kept in dir, sorted by file name.
func List(dir string) ([]*manifest.Resource, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	out := []*manifest.Resource{}
	for _, f := range files {
		r, err := Read(f)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Save writes r to path atomically (a temporary file renamed over it),
// creating dir when needed.
func Save(dir, path string, r *manifest.Resource) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
