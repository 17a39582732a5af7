package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/state/seal"
)

// fileRecord is a record as its file holds it: the Record's fields, and its
// secrets sealed. The file ends with a checksum line (see encodeRecord).
type fileRecord struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Name       string            `yaml:"name"`
	Labels     map[string]string `yaml:"labels,omitempty"`
	Spec       valueMap          `yaml:"spec,omitempty"`
	SpecHash   string            `yaml:"specHash"`
	Status     valueMap          `yaml:"status,omitempty"`
	Owner      *manifest.ID      `yaml:"owner,omitempty"`
	Children   []manifest.ID     `yaml:"children,omitempty"`
	Secrets    *seal.Sealed      `yaml:"secrets,omitempty"`
	Generation int64             `yaml:"generation"`
	Lineage    string            `yaml:"lineage"`
	CreatedAt  time.Time         `yaml:"createdAt"`
	UpdatedAt  time.Time         `yaml:"updatedAt"`
}

// checksumPrefix starts a record file's last line, followed by the hex
// SHA-256 of every byte before that line.
const checksumPrefix = "checksum: sha256:"

// toFile returns r's file form, with sealed in place of its secrets.
func toFile(r *Record, sealed *seal.Sealed) *fileRecord {
	return &fileRecord{
		APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name,
		Labels: r.Labels, Spec: r.Spec, SpecHash: r.SpecHash, Status: r.Status,
		Owner: r.Owner, Children: r.Children, Secrets: sealed,
		Generation: r.Generation, Lineage: r.Lineage,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// record returns the record the file holds, without its secrets.
func (f *fileRecord) record() *Record {
	return &Record{
		APIVersion: f.APIVersion, Kind: f.Kind, Name: f.Name,
		Labels: f.Labels, Spec: f.Spec, SpecHash: f.SpecHash, Status: f.Status,
		Owner: f.Owner, Children: f.Children,
		Generation: f.Generation, Lineage: f.Lineage,
		CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt,
	}
}

// encodeRecord renders f as YAML followed by the checksum line. The
// checksum makes a truncated or damaged file an error rather than a record
// with fields missing.
func encodeRecord(f *fileRecord) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, errcode.Wrap(errcode.Invalid, fmt.Sprintf("state: encoding %s/%s", f.Kind, f.Name), err)
	}
	if err := enc.Close(); err != nil {
		return nil, errcode.Wrap(errcode.Invalid, fmt.Sprintf("state: encoding %s/%s", f.Kind, f.Name), err)
	}
	sum := sha256.Sum256(buf.Bytes())
	buf.WriteString(checksumPrefix)
	buf.WriteString(hex.EncodeToString(sum[:]))
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// decodeRecord parses the contents of the record file path. Every problem
// is an errcode.Invalid error naming the file.
func decodeRecord(path string, data []byte) (*fileRecord, error) {
	corrupt := func(format string, args ...any) error {
		return Corrupt(fmt.Sprintf("state: record file %s is corrupt", path), fmt.Errorf(format, args...))
	}
	if len(data) == 0 {
		return nil, corrupt("it is empty (truncated?)")
	}
	body, sum, ok := splitChecksum(data)
	if !ok {
		return nil, corrupt("it does not end with its checksum line (truncated?)")
	}
	got := sha256.Sum256(body)
	if hex.EncodeToString(got[:]) != sum {
		return nil, corrupt("checksum mismatch (damaged, truncated or edited by hand)")
	}
	dec := yaml.NewDecoder(bytes.NewReader(body))
	dec.KnownFields(true)
	f := new(fileRecord)
	if err := dec.Decode(f); err != nil {
		return nil, Corrupt(fmt.Sprintf("state: record file %s is corrupt", path), err)
	}
	switch {
	case f.Generation < 1:
		return nil, corrupt("generation %d, want 1 or more", f.Generation)
	case f.Lineage == "":
		return nil, corrupt("it has no lineage")
	}
	return f, nil
}

// splitChecksum splits data into the bytes before its last line and the
// hex checksum that line holds.
func splitChecksum(data []byte) (body []byte, sum string, ok bool) {
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return nil, "", false
	}
	i := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	line := string(data[i : len(data)-1])
	sum, ok = strings.CutPrefix(line, checksumPrefix)
	if !ok || len(sum) != 2*sha256.Size {
		return nil, "", false
	}
	return data[:i], sum, true
}

// valueMap is a spec or status map. It encodes so that it decodes back to
// the same normalised values (see manifest.Normalize): floats stay floats
// ("2.0", not "2"), strings that look like numbers, booleans or dates stay
// strings, and strings that are not UTF-8 are written as !!binary.
type valueMap map[string]any

// MarshalYAML renders the map as a YAML node tree.
func (m valueMap) MarshalYAML() (any, error) {
	n, err := valueNode(map[string]any(m), "")
	if err != nil {
		return nil, err
	}
	return n, nil
}

// UnmarshalYAML decodes the map and normalises its values.
func (m *valueMap) UnmarshalYAML(n *yaml.Node) error {
	var v map[string]any
	if err := n.Decode(&v); err != nil {
		return err
	}
	norm, err := manifest.NormalizeMap(v)
	if err != nil {
		return err
	}
	*m = norm
	return nil
}

// valueNode renders a normalised value as a YAML node; path names it in
// errors.
func valueNode(v any, path string) (*yaml.Node, error) {
	switch x := v.(type) {
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(x)}, nil
	case int64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(x, 10)}, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, errcode.New(errcode.Invalid, fmt.Sprintf("state: %s: %v is not a finite number", displayPath(path), x))
		}
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: s}, nil
	case string:
		if !utf8.ValidString(x) {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!binary", Value: base64.StdEncoding.EncodeToString([]byte(x))}, nil
		}
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: x}
		if x == "<<" || strings.ContainsAny(x, "\n\r\u0085\u2028\u2029") {
			// yaml.v3 would choose a literal block for line breaks, which
			// loses them at the start ("\n a" reads back as " a") and
			// alone ("\n" as ""), and writes "<<" plain, which reads back
			// as a merge key: double quotes keep both.
			n.Style = yaml.DoubleQuotedStyle
		}
		return n, nil
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: make([]*yaml.Node, 0, len(x))}
		for i, e := range x {
			c, err := valueNode(e, manifest.JoinIndex(path, i))
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, c)
		}
		return n, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: make([]*yaml.Node, 0, 2*len(x))}
		for _, k := range keys {
			kn, err := valueNode(k, path)
			if err != nil {
				return nil, err
			}
			c, err := valueNode(x[k], manifest.JoinPath(path, k))
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, kn, c)
		}
		return n, nil
	}
	return nil, errcode.New(errcode.Invalid, fmt.Sprintf("state: %s: cannot store a value of type %T (normalise it with manifest.Normalize)", displayPath(path), v))
}

// displayPath names a value path in messages.
func displayPath(path string) string {
	if path == "" {
		return "the map"
	}
	return path
}
