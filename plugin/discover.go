package plugin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/openctl/openctl/errcode"
)

// Prefix starts the file name of every plugin executable:
// openctl-<provider>.
const Prefix = "openctl-"

// Plugin is a plugin executable and the capabilities it declared. It is
// immutable and safe for concurrent use.
type Plugin struct {
	// Path is the executable.
	Path string
	// Capabilities are what it printed for --capabilities.
	Capabilities Capabilities
}

// Name is the plugin's provider name.
func (p *Plugin) Name() string { return p.Capabilities.ProviderName }

// Dirs returns where plugins are looked for, in order: $OPENCTL_HOME/plugins
// (else ~/.openctl/plugins), then the directories of $PATH, read through
// getenv (nil: os.Getenv).
func Dirs(getenv func(string) string) []string {
	if getenv == nil {
		getenv = os.Getenv
	}
	var dirs []string
	switch {
	case getenv("OPENCTL_HOME") != "":
		dirs = append(dirs, filepath.Join(getenv("OPENCTL_HOME"), "plugins"))
	case getenv("HOME") != "":
		dirs = append(dirs, filepath.Join(getenv("HOME"), ".openctl", "plugins"))
	}
	for _, d := range filepath.SplitList(getenv("PATH")) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// Find returns the plugin executables in dirs, by provider name: the
// first executable regular file (or link to one) named openctl-<name> in
// dirs order wins. Directories that do not exist are skipped.
func Find(dirs []string) map[string]string {
	found := map[string]string{}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name, ok := strings.CutPrefix(e.Name(), Prefix)
			if !ok || !isLabel(name) || found[name] != "" {
				continue
			}
			path := filepath.Join(dir, e.Name())
			if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				found[name] = path
			}
		}
	}
	return found
}

// Load runs path --capabilities (within opts.CapabilitiesTimeout) and
// returns the plugin. The provider name it declares must match its file
// name, openctl-<providerName>.
func Load(ctx context.Context, path string, opts Options) (*Plugin, error) {
	opts = opts.withDefaults()
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errcode.Wrap(errcode.Invalid, "plugin "+path, err)
	case err != nil:
		return nil, errcode.Wrap(errcode.Internal, "plugin "+path, err)
	case !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0:
		return nil, errcode.New(errcode.Invalid, "plugin "+path+": not an executable file")
	}
	res, err := run(ctx, path, []string{"--capabilities"}, nil, opts.CapabilitiesTimeout, opts.MaxResponse)
	if err != nil {
		return nil, fmt.Errorf("plugin %s --capabilities: %w", path, err)
	}
	if res.err != nil {
		return nil, errcode.New(errcode.Internal, fmt.Sprintf("plugin %s --capabilities: %v%s", path, res.err, stderrNote(res.stderr, nil)))
	}
	caps, err := DecodeCapabilities(res.stdout)
	if err != nil {
		if ve, ok := errors.AsType[*VersionError](err); ok {
			ve.Path = path
			return nil, ve
		}
		return nil, errcode.Wrap(errcode.Invalid, fmt.Sprintf("plugin %s --capabilities: output starting %s", path, firstBytes(res.stdout)), err)
	}
	if want := strings.TrimPrefix(filepath.Base(path), Prefix); caps.ProviderName != want {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("plugin %s declares provider %q; its file name says %q", path, caps.ProviderName, want))
	}
	return &Plugin{Path: path, Capabilities: *caps}, nil
}

// Discover finds the plugins in dirs (see Dirs and Find) and loads each
// one. It returns those that loaded, sorted by name, and an error
// joining what went wrong with the others; one bad plugin does not hide
// the good ones.
func Discover(ctx context.Context, dirs []string, opts Options) ([]*Plugin, error) {
	found := Find(dirs)
	names := make([]string, 0, len(found))
	for n := range found {
		names = append(names, n)
	}
	sort.Strings(names)
	var (
		out  []*Plugin
		errs []error
	)
	for _, n := range names {
		p, err := Load(ctx, found[n], opts)
		if err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			errs = append(errs, err)
			continue
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

// firstBytes quotes the start of out, for messages about garbage output.
func firstBytes(out []byte) string {
	const n = 64
	if len(out) > n {
		return fmt.Sprintf("%q...", out[:n])
	}
	return fmt.Sprintf("%q", out)
}

// stderrNote renders the stderr tail for an error message, secrets
// redacted, or "" when there is none.
func stderrNote(tail string, redact *strings.Replacer) string {
	if tail == "" {
		return ""
	}
	if redact != nil {
		tail = redact.Replace(tail)
	}
	return "; stderr: " + tail
}
