package manifest

import (
	"bytes"
	"encoding/base64"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// yamlWriter writes normalised values as block-style YAML with 2-space
// indentation and sorted map keys. It is a small special-purpose emitter:
// yaml.v3's general one needs memory and time out of proportion for large
// values, and this one only ever has to write maps, lists and scalars.
//
// Strings are written plain when that is unambiguous (see plainSafe),
// as a literal block ("|-") when they span lines, and double-quoted
// otherwise; strings that are not UTF-8 as !!binary. Maps and lists nested
// deeper than flowDepth are written in flow style ({...}, [...]) so that
// indentation stays bounded.
type yamlWriter struct {
	b bytes.Buffer
}

// flowDepth is the nesting depth from which maps and lists are written in
// flow style.
const flowDepth = 32

// maxSimpleKey is the longest key written as an ordinary "key:"; YAML
// limits implicit keys to 1024 characters, so longer ones are written as
// explicit "? key" entries.
const maxSimpleKey = 500

func (w *yamlWriter) indent(n int) {
	for range n {
		w.b.WriteByte(' ')
	}
}

// entries writes the entries of a non-empty map at indentation n. If
// inline, the cursor is already at the position of the first key (after
// "- ").
func (w *yamlWriter) entries(m map[string]any, n, depth int, inline bool) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 || !inline {
			w.indent(n)
		}
		w.key(k, n)
		w.after(m[k], n, depth+1)
	}
}

// key writes a map key and its colon, at indentation n.
func (w *yamlWriter) key(k string, n int) {
	start := w.b.Len()
	w.scalarString(k, false)
	if w.b.Len()-start <= maxSimpleKey {
		w.b.WriteByte(':')
		return
	}
	key := slices.Clone(w.b.Bytes()[start:])
	w.b.Truncate(start)
	w.b.WriteString("? ")
	w.b.Write(key)
	w.b.WriteByte('\n')
	w.indent(n)
	w.b.WriteByte(':')
}

// items writes the items of a non-empty list at indentation n, inline as
// for entries.
func (w *yamlWriter) items(l []any, n, depth int, inline bool) {
	for i, e := range l {
		if i > 0 || !inline {
			w.indent(n)
		}
		w.b.WriteByte('-')
		switch x := e.(type) {
		case map[string]any:
			if len(x) > 0 && depth+1 < flowDepth {
				w.b.WriteByte(' ')
				w.entries(x, n+2, depth+1, true)
				continue
			}
		case []any:
			if len(x) > 0 && depth+1 < flowDepth {
				w.b.WriteByte(' ')
				w.items(x, n+2, depth+1, true)
				continue
			}
		}
		w.after(e, n, depth+1)
	}
}

// after writes a value that follows "key:" or "-" written at indentation
// n, ending the line.
func (w *yamlWriter) after(v any, n, depth int) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 && depth < flowDepth {
			w.b.WriteByte('\n')
			w.entries(x, n+2, depth, false)
			return
		}
	case []any:
		if len(x) > 0 && depth < flowDepth {
			w.b.WriteByte('\n')
			w.items(x, n+2, depth, false)
			return
		}
	case string:
		if literalSafe(x) {
			w.literal(x, n+2)
			return
		}
		w.b.WriteByte(' ')
		w.scalarString(x, false)
		w.b.WriteByte('\n')
		return
	}
	w.b.WriteByte(' ')
	w.flow(v)
	w.b.WriteByte('\n')
}

// literal writes a multi-line string as a literal block scalar indented
// by n.
func (w *yamlWriter) literal(s string, n int) {
	body, chomp := s, "-"
	if strings.HasSuffix(s, "\n") {
		body, chomp = s[:len(s)-1], ""
	}
	w.b.WriteString(" |" + chomp + "\n")
	for line := range strings.SplitSeq(body, "\n") {
		if line != "" {
			w.indent(n)
			w.b.WriteString(line)
		}
		w.b.WriteByte('\n')
	}
}

// flow writes a value on the current line: a scalar, or a map or list in
// flow style.
func (w *yamlWriter) flow(v any) {
	switch x := v.(type) {
	case nil:
		w.b.WriteString("null")
	case bool:
		w.b.WriteString(strconv.FormatBool(x))
	case int64:
		w.b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		w.b.WriteString(formatFloat(x))
	case string:
		w.scalarString(x, true)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		w.b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				w.b.WriteString(", ")
			}
			start := w.b.Len()
			w.scalarString(k, true)
			if w.b.Len()-start > maxSimpleKey {
				key := slices.Clone(w.b.Bytes()[start:])
				w.b.Truncate(start)
				w.b.WriteString("? ")
				w.b.Write(key)
			}
			w.b.WriteString(": ")
			w.flow(x[k])
		}
		w.b.WriteByte('}')
	case []any:
		w.b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				w.b.WriteString(", ")
			}
			w.flow(e)
		}
		w.b.WriteByte(']')
	}
}

// scalarString writes a string on one line: plain when that reads back as
// the same string (in flow context if flow is set), !!binary when it is not
// UTF-8, double-quoted otherwise.
func (w *yamlWriter) scalarString(s string, flow bool) {
	switch {
	case !utf8.ValidString(s):
		w.b.WriteString(`!!binary "` + base64.StdEncoding.EncodeToString([]byte(s)) + `"`)
	case plainSafe(s, flow):
		w.b.WriteString(s)
	default:
		w.quoted(s)
	}
}

// quoted writes s double-quoted, escaping what YAML requires or would
// otherwise read differently.
func (w *yamlWriter) quoted(s string) {
	w.b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			w.b.WriteString(`\"`)
		case '\\':
			w.b.WriteString(`\\`)
		case '\n':
			w.b.WriteString(`\n`)
		case '\t':
			w.b.WriteString(`\t`)
		case '\r':
			w.b.WriteString(`\r`)
		case 0:
			w.b.WriteString(`\0`)
		default:
			switch {
			case printable(r):
				w.b.WriteRune(r)
			case r < 0x100:
				w.b.WriteString(`\x` + hexDigits(int64(r), 2))
			case r < 0x10000:
				w.b.WriteString(`\u` + hexDigits(int64(r), 4))
			default:
				w.b.WriteString(`\U` + hexDigits(int64(r), 8))
			}
		}
	}
	w.b.WriteByte('"')
}

func hexDigits(v int64, width int) string {
	s := strings.ToUpper(strconv.FormatInt(v, 16))
	return strings.Repeat("0", width-len(s)) + s
}

// printable reports whether r may appear as itself in a YAML scalar
// without being taken for a line break or rejected: the YAML printable
// set minus the Unicode line breaks and the byte order mark.
func printable(r rune) bool {
	switch {
	case r >= 0x20 && r <= 0x7e:
		return true
	case r == 0x85, r == 0x2028, r == 0x2029, r == 0xfeff:
		return false
	}
	return r >= 0xa0 && yamlAllowed(r)
}

// The characters a plain scalar written by yamlWriter may not start with,
// and those it may not contain at all.
const (
	plainBadStart = "-?:,[]{}#&*!|>'\"%@` ."
	plainBadAny   = ",[]{}#\t"
)

// plainSafe reports whether s can be written as a plain scalar (in flow
// context if flow is set) and read back as the same string by yaml.v3 and
// by YAML 1.1 parsers. It is deliberately conservative.
func plainSafe(s string, flow bool) bool {
	if s == "" || strings.ContainsRune(plainBadStart, rune(s[0])) || strings.ContainsAny(s, plainBadAny) {
		return false
	}
	if flow && strings.Contains(s, ":") {
		return false
	}
	if strings.Contains(s, ": ") || strings.HasSuffix(s, ":") || strings.HasSuffix(s, " ") {
		return false
	}
	for _, r := range s {
		if !printable(r) {
			return false
		}
	}
	if s == "<<" || yaml11Scalar(s) {
		return false
	}
	// Whatever yaml.v3 would read as a number, bool, null, timestamp or
	// merge key needs quotes.
	return (&yaml.Node{Kind: yaml.ScalarNode, Value: s}).ShortTag() == strTag
}

// literalSafe reports whether a string is best written as a literal block:
// it spans lines, ends with at most one line break, and has nothing a
// literal block cannot hold or would change (leading spaces on its first
// line, carriage returns, tabs, characters that must be escaped).
func literalSafe(s string) bool {
	if !strings.Contains(s, "\n") || strings.HasSuffix(s, "\n\n") || s[0] == ' ' || s[0] == '\n' {
		return false
	}
	for _, r := range s {
		if r != '\n' && !printable(r) {
			return false
		}
	}
	return utf8.ValidString(s)
}

// base60RE matches YAML 1.1 sexagesimal numbers.
var base60RE = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)

// yaml11Scalar reports whether a YAML 1.1 parser would read the plain
// scalar s as a bool or a number where yaml.v3 reads a string.
func yaml11Scalar(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON",
		"n", "N", "no", "No", "NO", "off", "Off", "OFF":
		return true
	}
	return base60RE.MatchString(s)
}

// formatFloat writes a float so that it reads back as a float ("2.0", not
// "2", which would read as an integer).
func formatFloat(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEnN") {
		s += ".0"
	}
	return s
}
