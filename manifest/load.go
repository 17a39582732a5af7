package manifest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// StdinName is the file name standard input has in errors and in
// [Source.File].
const StdinName = "<stdin>"

// LoadOptions configures [Load]. The zero value loads the files of the
// named directories, without sub-directories, and reads os.Stdin for "-".
type LoadOptions struct {
	// Recursive makes Load descend into the sub-directories of a directory.
	Recursive bool
	// Stdin is read for the path "-"; nil means os.Stdin.
	Stdin io.Reader
}

// Load decodes the manifests in paths, in order. Each path is a file
// (decoded whatever its name), a directory, or "-" for standard input
// (named "<stdin>"). A directory contributes its *.yaml, *.yml and *.json
// files in lexical order, and, when opts.Recursive is set, those of its
// sub-directories, depth first; files and directories whose names start
// with "." are skipped.
//
// Load reports every problem in every file, and resources defined twice
// (see [CheckDuplicates]), as one errors.Join of [*Error] values sorted by
// file and line; a path that does not exist or cannot be read is such an
// error too, naming the path, and errors.Is(err, fs.ErrNotExist) holds for
// a missing one. When there is any problem, no resources are returned.
func Load(paths []string, opts LoadOptions) ([]*Resource, error) {
	var errs errorList
	var rs []*Resource
	seen := map[string]bool{}
	decode := func(data []byte, file string) {
		rs = append(rs, decodeInto(data, file, &errs)...)
	}
	for _, p := range paths {
		if p == "-" {
			in := opts.Stdin
			if in == nil {
				in = os.Stdin
			}
			data, err := readLimited(in)
			if err != nil {
				errs.add(ioError(StdinName, err))
				continue
			}
			decode(data, StdinName)
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			errs.add(ioError(p, err))
			continue
		}
		files := []string{p}
		if fi.IsDir() {
			files = manifestFiles(p, opts.Recursive, &errs)
		}
		for _, f := range files {
			// The same file reached twice ("-f dir -f dir/sub -R", or a
			// file named twice) is read once: it holds the same
			// resources, not duplicates of them.
			if abs, err := filepath.Abs(f); err == nil {
				if seen[abs] {
					continue
				}
				seen[abs] = true
			}
			data, err := readFile(f)
			if err != nil {
				errs.add(ioError(f, err))
				continue
			}
			decode(data, f)
		}
	}
	checkDuplicates(rs, &errs)
	if err := errs.err(); err != nil {
		return nil, err
	}
	return rs, nil
}

// manifestFiles lists the manifest files under dir in lexical order,
// reporting directories it cannot read.
func manifestFiles(dir string, recursive bool, errs *errorList) []string {
	var files []string
	walk := func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			errs.add(ioError(path, err))
			return nil
		}
		if path == dir {
			return nil
		}
		name := d.Name()
		if strings.HasPrefix(name, ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		if !isManifestName(name) {
			return nil
		}
		if !d.Type().IsRegular() {
			// A symbolic link (to a file; directories are not followed)
			// or something stranger.
			fi, err := os.Stat(path)
			if err != nil {
				errs.add(ioError(path, err))
				return nil
			}
			if !fi.Mode().IsRegular() {
				return nil
			}
		}
		files = append(files, path)
		return nil
	}
	if err := filepath.WalkDir(dir, walk); err != nil {
		errs.add(ioError(dir, err))
	}
	return files
}

func isManifestName(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

func readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f)
}

// readLimited reads r to the end, or to just past maxInputSize, which
// decoding then rejects.
func readLimited(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, maxInputSize+1))
}

// ioError turns an error reading name into an *Error for it.
func ioError(name string, err error) *Error {
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		msg = pe.Err.Error()
	}
	if errors.Is(err, fs.ErrNotExist) {
		msg = "no such file or directory"
	}
	return &Error{File: name, Msg: fmt.Sprintf("cannot read: %s", msg), Err: err}
}
