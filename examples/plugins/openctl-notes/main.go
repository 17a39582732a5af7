// Command openctl-notes is an example exec plugin in Go: it keeps Note
// resources (apiVersion notes.openctl.io/v1) as JSON files in the
// directory its configuration names,
//
//	providers:
//	  notes:
//	    dir: /var/lib/notes
//
// and speaks the openctl plugin protocol: --capabilities, then one JSON
// request on standard input and one JSON response on standard output per
// run. It reuses the wire types of package plugin; a plugin in any other
// language writes the same JSON.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/plugin"
)

const apiVersion = "notes.openctl.io/v1"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--capabilities" {
		write(os.Stdout, plugin.Capabilities{
			ProviderName:    "notes",
			ProtocolVersion: plugin.ProtocolVersion,
			Resources: []plugin.ResourceCapability{{
				Kind:    "Note",
				Plural:  "notes",
				Actions: []string{plugin.ActionGet, plugin.ActionList, plugin.ActionApply, plugin.ActionDelete},
			}},
		})
		return
	}
	write(os.Stdout, handle(os.Stdin))
}

func write(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintln(os.Stderr, "openctl-notes:", err)
		os.Exit(1)
	}
}

// fail returns an error response.
func fail(code errCode, format string, args ...any) *plugin.Response {
	return &plugin.Response{Status: "error", Error: &plugin.ErrorBody{Code: string(code), Message: fmt.Sprintf(format, args...)}}
}

type errCode string

const (
	notFound errCode = "NOT_FOUND"
	invalid  errCode = "INVALID_REQUEST"
	internal errCode = "INTERNAL"
)

var nameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

func handle(in io.Reader) *plugin.Response {
	var req plugin.Request
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		return fail(invalid, "decoding the request: %v", err)
	}
	dir, _ := req.Config["dir"].(string)
	if dir == "" {
		return fail(invalid, "providers.notes.dir is not set: name the directory to keep notes in")
	}
	if req.ResourceType != "Note" {
		return fail(invalid, "unknown kind %q", req.ResourceType)
	}
	name := req.ResourceName
	if req.Manifest != nil {
		name = req.Manifest.Metadata.Name
	}
	if req.Action != plugin.ActionList && !nameRe.MatchString(name) {
		return fail(invalid, "bad name %q", name)
	}
	path := filepath.Join(dir, name+".json")
	switch req.Action {
	case plugin.ActionGet:
		r, err := read(path)
		if errors.Is(err, fs.ErrNotExist) {
			return fail(notFound, "note %s not found", name)
		}
		if err != nil {
			return fail(internal, "%v", err)
		}
		return &plugin.Response{Status: "success", Resource: r}
	case plugin.ActionList:
		files, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil {
			return fail(internal, "%v", err)
		}
		sort.Strings(files)
		out := []*manifest.Resource{}
		for _, f := range files {
			r, err := read(f)
			if err != nil {
				return fail(internal, "%v", err)
			}
			out = append(out, r)
		}
		return &plugin.Response{Status: "success", Resources: out}
	case plugin.ActionApply:
		if req.Manifest == nil {
			return fail(invalid, "apply without a manifest")
		}
		r := &manifest.Resource{APIVersion: apiVersion, Kind: "Note", Metadata: req.Manifest.Metadata, Spec: req.Manifest.Spec}
		text, _ := r.Spec["text"].(string)
		r.Status = map[string]any{"state": "written", "length": len(text)}
		if err := save(dir, path, r); err != nil {
			return fail(internal, "%v", err)
		}
		return &plugin.Response{Status: "success", Resource: r, Message: "note " + name + " written"}
	case plugin.ActionDelete:
		err := os.Remove(path)
		if errors.Is(err, fs.ErrNotExist) {
			return fail(notFound, "note %s not found", name)
		}
		if err != nil {
			return fail(internal, "%v", err)
		}
		return &plugin.Response{Status: "success", Message: "note " + name + " deleted"}
	}
	return fail(invalid, "unknown action %q", req.Action)
}

func read(path string) (*manifest.Resource, error) {
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

// save writes r to path atomically.
func save(dir, path string, r *manifest.Resource) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+strings.TrimSuffix(filepath.Base(path), ".json")+"-*")
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
