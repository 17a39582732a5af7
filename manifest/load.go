package manifest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
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
// with "." are skipped, and so are named pipes, devices and sockets.
//
// A file named explicitly may be a named pipe (a FIFO, "-f <(...)"): it is
// read to its end, like standard input. Reading stops when ctx is
// cancelled: Load then returns context.Cause(ctx) at once, leaving the
// blocked read to end in the background (a pipe's read is woken; a
// named pipe that no writer has opened yet is opened for writing and
// closed again, which releases the open).
//
// Load reports every problem in every file, and resources defined twice (see
// [CheckDuplicates]), as one errors.Join of [*errcode.InputError] values
// sorted by file and line; a path that does not exist or cannot be read is
// such an error too, naming the path, and errors.Is(err, fs.ErrNotExist)
// holds for a missing one. More than 10,000 resources in all is an error
// too. When there is any problem, no resources are returned.
func Load(ctx context.Context, paths []string, opts LoadOptions) ([]*Resource, error) {
	var errs errorList
	var rs []*Resource
	seen := map[string]bool{}
	full := false
	decode := func(data []byte, file string) {
		got := decodeInto(data, file, &errs)
		if len(rs)+len(got) > maxResources {
			errs.add(inputError(errcode.InputError{File: file, Msg: fmt.Sprintf("more than %d resources in all; apply them in several calls", maxResources)}))
			full = true
			return
		}
		rs = append(rs, got...)
	}
	for _, p := range paths {
		if full {
			break
		}
		if p == "-" {
			in := opts.Stdin
			if in == nil {
				in = os.Stdin
			}
			data, err := readAll(ctx, in)
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
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
			if full {
				break
			}
			// The same file reached twice ("-f dir -f dir/sub -R", or a
			// file named twice) is read once: it holds the same
			// resources, not duplicates of them.
			if abs, err := filepath.Abs(f); err == nil {
				if seen[abs] {
					continue
				}
				seen[abs] = true
			}
			data, err := readFile(ctx, f)
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
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

// readFile reads the file name to its end (see readAll). A named pipe's
// open blocks until a writer opens it; if ctx is cancelled before that,
// the open is released by opening the pipe for writing.
func readFile(ctx context.Context, name string) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeNamedPipe == 0 {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readAll(ctx, f)
	}
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(name)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			return nil, o.err
		}
		defer o.f.Close()
		return readAll(ctx, o.f)
	case <-ctx.Done():
	}
	go releaseOpen(ctx, name, func() (*os.File, bool) {
		select {
		case o := <-ch:
			return o.f, true
		default:
			return nil, false
		}
	})
	return nil, context.Cause(ctx)
}

// releaseOpen ends an open of the named pipe name that blocks for want of
// a writer, by opening the pipe for writing (without blocking) and closing
// it again, until done reports that the open returned (closing what it
// opened), for at most a few seconds. ctx is already cancelled; only its
// values are used.
func releaseOpen(ctx context.Context, name string, done func() (*os.File, bool)) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	b := backoff.Policy{Initial: time.Millisecond, Max: 100 * time.Millisecond}.Start()
	for {
		if f, ok := done(); ok {
			if f != nil {
				f.Close()
			}
			return
		}
		// ENXIO while the reader is not (yet) in its open: try again.
		if w, err := os.OpenFile(name, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		if b.Wait(ctx) != nil {
			return
		}
	}
}

// readAll reads r to the end, or to just past maxInputSize, which decoding
// then rejects. If ctx is cancelled first, it returns context.Cause(ctx)
// at once and leaves the read to a goroutine, which ends with the read; a
// reader with a SetReadDeadline method (a pipe, a terminal) is woken at
// once.
func readAll(ctx context.Context, r io.Reader) ([]byte, error) {
	if ctx.Done() == nil {
		return readLimited(r)
	}
	type result struct {
		data []byte
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		data, err := readLimited(r)
		ch <- result{data, err}
	}()
	select {
	case res := <-ch:
		return res.data, res.err
	case <-ctx.Done():
		if d, ok := r.(interface{ SetReadDeadline(time.Time) error }); ok {
			_ = d.SetReadDeadline(time.Unix(1, 0))
		}
		return nil, context.Cause(ctx)
	}
}

// ioError turns an error reading name into an *errcode.InputError for it,
// its cause without the path the error already names.
func ioError(name string, err error) *errcode.InputError {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return inputError(errcode.InputError{File: name, Msg: "cannot read", Err: err})
}

// readLimited reads r to the end, or to just past maxInputSize, which
// decoding then rejects.
func readLimited(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, maxInputSize+1))
}
