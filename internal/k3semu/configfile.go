package k3semu

import (
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	yaml "go.yaml.in/yaml/v2"
)

// DefaultConfigFile is where k3s reads its configuration from when
// neither --config/-c nor $K3S_CONFIG_FILE names another file.
const DefaultConfigFile = "/etc/rancher/k3s/config.yaml"

// configEntry is one key of the merged configuration files: a flag's long
// (or one-letter) name and its values, in order. A scalar has one value;
// a YAML list (or a key+ append) has one per item.
type configEntry struct {
	Key    string
	Values []string
	File   string // the file that last set or appended to the key
}

// configFiles lists the files k3s reads for the config file path: the
// file itself if it exists, then <path>.d/*.yaml and *.yml (any case) in
// alphabetical order. A missing file with no drop-ins gives none.
func configFiles(f FS, file string) ([]string, error) {
	var files []string
	if f.Exists(file) {
		files = append(files, file)
	}
	dir := file + ".d"
	ents, err := f.ReadDir(dir) // sorted by name
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("standin: config file: %w", err)
	}
	for _, e := range ents {
		lower := strings.ToLower(e.Name())
		if e.IsDir() || !(strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml")) {
			continue
		}
		files = append(files, path.Join(dir, e.Name()))
	}
	return files, nil
}

// readConfigFiles reads and merges the config file at path and its
// drop-ins, as k3s does: later files replace a key's value, unless the key
// is written key+, which appends to it.
func readConfigFiles(f FS, path string) ([]configEntry, error) {
	files, err := configFiles(f, path)
	if err != nil {
		return nil, err
	}
	var merged []configEntry
	for _, file := range files {
		data, err := f.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("standin: config file: %w", err)
		}
		entries, err := parseConfigData(file, data)
		if err != nil {
			return nil, err
		}
		merged = mergeConfig(merged, entries)
	}
	return merged, nil
}

// mergeConfig applies one file's entries (keys possibly ending in +) to
// the entries so far; first-seen key order is kept.
func mergeConfig(merged, entries []configEntry) []configEntry {
	for _, e := range entries {
		key, appendTo := strings.CutSuffix(e.Key, "+")
		i := slices.IndexFunc(merged, func(m configEntry) bool { return m.Key == key })
		switch {
		case i < 0:
			merged = append(merged, configEntry{Key: key, Values: e.Values, File: e.File})
		case appendTo:
			merged[i].Values = append(slices.Clip(merged[i].Values), e.Values...)
			merged[i].File = e.File
		default:
			merged[i] = configEntry{Key: key, Values: e.Values, File: e.File}
		}
	}
	return merged
}

// parseConfigData parses one YAML config file: a mapping of flag names
// to a scalar (string, number, bool; null is the empty string) or a list
// of scalars. Errors name the file (and the line, when the YAML parser
// gives one).
func parseConfigData(name string, data []byte) ([]configEntry, error) {
	var doc yaml.MapSlice
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("standin: config file %s: %w", name, err)
	}
	entries := make([]configEntry, 0, len(doc))
	for _, item := range doc {
		key, err := configScalar(item.Key)
		if err != nil || key == "" || key == "+" {
			return nil, fmt.Errorf("standin: config file %s: key %v: not a flag name", name, item.Key)
		}
		e := configEntry{Key: key, File: name}
		if list, ok := item.Value.([]any); ok {
			for _, v := range list {
				s, err := configScalar(v)
				if err != nil {
					return nil, fmt.Errorf("standin: config file %s: key %s: %w", name, key, err)
				}
				e.Values = append(e.Values, s)
			}
		} else {
			s, err := configScalar(item.Value)
			if err != nil {
				return nil, fmt.Errorf("standin: config file %s: key %s: %w", name, key, err)
			}
			e.Values = []string{s}
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// configScalar formats a YAML scalar as a flag value, as k3s does (its
// YAML 1.1 parser reads 0644 as the octal number 420: quote such values).
func configScalar(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case bool, int, int64, uint64, float64:
		return fmt.Sprint(v), nil
	default:
		return "", fmt.Errorf("a value of type %T is not a flag value", v)
	}
}

// withConfigFile puts the values of k3s's config files in front of the
// command-line arguments, as k3s does (pkg/configfilearg): the config
// file is $K3S_CONFIG_FILE, else --config/-c, else DefaultConfigFile
// (which may be absent, like every other: k3s then reads only the
// drop-ins, or nothing). A key given on the command line is left out, so
// the command line wins and a repeatable flag there replaces the file's
// whole list. Since file values become flags, they also win over K3S_*
// variables, which apply only to flags not set. newFlags makes a fresh
// flag set of the command; a key that is not one of its flags is, for
// `server`, skipped with k3s's warning (returned), and for `agent`, an
// error, as k3s's agent command line refuses it.
func withConfigFile(f FS, command string, args []string, lookupEnv func(string) (string, bool), newFlags func() *pflag.FlagSet) ([]string, []string, error) {
	probe := newFlags()
	if err := probe.Parse(args); err != nil {
		return nil, nil, fmt.Errorf("standin: %s: %w", command, err)
	}
	path := DefaultConfigFile
	if v, ok := lookupEnv("K3S_CONFIG_FILE"); ok && v != "" {
		path = v
	} else if f := probe.Lookup("config"); f != nil && probe.Changed("config") {
		path = f.Value.String()
	}
	entries, err := readConfigFiles(f, path)
	if err != nil {
		return nil, nil, err
	}
	var fileArgs, warnings []string
	for _, e := range entries {
		f := probe.Lookup(e.Key)
		if f == nil && len(e.Key) == 1 {
			f = probe.ShorthandLookup(e.Key)
		}
		if f == nil {
			if command == "agent" {
				return nil, nil, fmt.Errorf("standin: agent: config file %s: flag provided but not defined: -%s", e.File, e.Key)
			}
			warnings = append(warnings, fmt.Sprintf("Unknown flag --%s found in config.yaml, skipping", e.Key))
			continue
		}
		if probe.Changed(f.Name) {
			continue
		}
		for _, v := range e.Values {
			arg := "--" + f.Name + "=" + v
			if err := newFlags().Parse([]string{arg}); err != nil {
				return nil, nil, fmt.Errorf("standin: %s: config file %s: %w", command, e.File, err)
			}
			fileArgs = append(fileArgs, arg)
		}
	}
	return append(fileArgs, args...), warnings, nil
}
