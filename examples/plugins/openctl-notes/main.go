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
	"regexp"
	"strings"

	"github.com/openctl/openctl/examples/plugins/internal/jsonfile"
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
			// openctl notes append note NAME --text T [--times N] [--upper]
			Subcommands: []plugin.Subcommand{{
				Name: "append", Short: "Append text to a note", Action: "append",
				Flags: []plugin.FlagSpec{
					{Name: "text", Type: "string", Required: true, Help: "the text to append"},
					{Name: "times", Type: "int", Default: "1", Help: "how many times"},
					{Name: "upper", Type: "bool", Help: "upper-case it"},
				},
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
	path := jsonfile.Path(dir, name)
	switch req.Action {
	case plugin.ActionGet:
		r, err := jsonfile.Read(path)
		if errors.Is(err, fs.ErrNotExist) {
			return fail(notFound, "note %s not found", name)
		}
		if err != nil {
			return fail(internal, "%v", err)
		}
		return &plugin.Response{Status: "success", Resource: r}
	case plugin.ActionList:
		out, err := jsonfile.List(dir)
		if err != nil {
			return fail(internal, "%v", err)
		}
		return &plugin.Response{Status: "success", Resources: out}
	case plugin.ActionApply:
		if req.Manifest == nil {
			return fail(invalid, "apply without a manifest")
		}
		r := &manifest.Resource{APIVersion: apiVersion, Kind: "Note", Metadata: req.Manifest.Metadata, Spec: req.Manifest.Spec}
		text, _ := r.Spec["text"].(string)
		r.Status = map[string]any{"state": "written", "length": len(text)}
		if err := jsonfile.Save(dir, path, r); err != nil {
			return fail(internal, "%v", err)
		}
		return &plugin.Response{Status: "success", Resource: r, Message: "note " + name + " written"}
	case "append":
		r, err := jsonfile.Read(path)
		if errors.Is(err, fs.ErrNotExist) {
			return fail(notFound, "note %s not found", name)
		}
		if err != nil {
			return fail(internal, "%v", err)
		}
		more, _ := req.Args["text"].(string)
		times, _ := req.Args["times"].(float64) // a JSON number
		if upper, _ := req.Args["upper"].(bool); upper {
			more = strings.ToUpper(more)
		}
		if times < 0 || times > 100 {
			return fail(invalid, "--times must be from 0 to 100")
		}
		text, _ := r.Spec["text"].(string)
		text += strings.Repeat(more, int(times))
		r.Spec["text"] = text
		r.Status = map[string]any{"state": "written", "length": len(text)}
		if err := jsonfile.Save(dir, path, r); err != nil {
			return fail(internal, "%v", err)
		}
		return &plugin.Response{Status: "success", Resource: r, Message: fmt.Sprintf("note %s is %d bytes long", name, len(text))}
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
