package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/errcode"
)

// decodeJSON decodes a JSON input: one value, an array of values, or a
// stream of values (arrays among them are expanded). encoding/json splits
// the input into values; each is then parsed with the YAML parser, which
// keeps positions, and its positions are shifted to the value's place in
// the file. A syntax error ends the input.
func (c *converter) decodeJSON(data []byte) []*Resource {
	var rs []*Resource
	dec := json.NewDecoder(bytes.NewReader(data))
	lines := lineCounter{data: data}
	index := 0
	stop := false
	one := func(raw json.RawMessage) {
		end := int(dec.InputOffset())
		start := end - len(raw)
		if start < 0 || end > len(data) {
			start, end = 0, 0 // cannot happen; keep positions sane
		}
		line, col := lines.at(start)
		if stop = c.tooMany(index, line, col); stop {
			return
		}
		if len(raw) > maxDocumentSize {
			c.errs.add(inputError(errcode.InputError{File: c.file, Line: line, Column: col, Msg: fmt.Sprintf("value is larger than %d MiB (%d bytes); split it into several resources", maxDocumentSize>>20, len(raw))}))
			index++
		} else {
			got, n := c.jsonValue(raw, line-1, col-1, index)
			rs = append(rs, got...)
			index += n
		}
	}
	for {
		next := skipJSONSpace(data, int(dec.InputOffset()))
		if next >= len(data) {
			return rs
		}
		if data[next] != '[' {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				c.jsonError(err, data, lines)
				return rs
			}
			if one(raw); stop {
				return rs
			}
			continue
		}
		if _, err := dec.Token(); err != nil {
			c.jsonError(err, data, lines)
			return rs
		}
		for dec.More() {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				c.jsonError(err, data, lines)
				return rs
			}
			if one(raw); stop {
				return rs
			}
		}
		if _, err := dec.Token(); err != nil {
			c.jsonError(err, data, lines)
			return rs
		}
	}
}

// jsonValue parses one JSON value that starts lineOff lines and colOff
// columns into the file and decodes it as a document (see documents).
func (c *converter) jsonValue(raw []byte, lineOff, colOff, index int) ([]*Resource, int) {
	c.json, c.lineOff, c.colOff = true, lineOff, colOff
	defer func() { c.json, c.lineOff, c.colOff = false, 0, 0 }()
	src := yamlSafeJSON(raw)
	var doc yaml.Node
	if err := parseNext(yaml.NewDecoder(bytes.NewReader(src)), &doc); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty value")
		}
		c.syntaxError(err, src, "JSON")
		return nil, 1
	}
	root := documentRoot(&doc)
	if root == nil {
		c.errorf(nil, "", "empty JSON value")
		return nil, 1
	}
	return c.documents(root, index)
}

// jsonError reports an error from encoding/json at the position it names.
func (c *converter) jsonError(err error, data []byte, lines lineCounter) {
	off := len(data)
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset > 0 && int(se.Offset) <= len(data) {
		off = int(se.Offset) - 1 // the offset is just past the offending byte
	}
	msg := err.Error()
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		msg = "unexpected end of input"
	}
	line, col := lines.at(off)
	c.failed = true
	c.errs.add(inputError(errcode.InputError{File: c.file, Line: line, Column: col, Msg: "invalid JSON: " + msg}))
}

func skipJSONSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// lineCounter maps byte offsets to 1-based lines and columns. Offsets must
// be asked for in increasing order, which keeps the whole walk linear.
type lineCounter struct {
	data      []byte
	off       int // offset counted up to
	line      int // 0-based line of off
	lineStart int // offset where that line starts
}

func (l *lineCounter) at(off int) (line, col int) {
	off = min(max(off, 0), len(l.data))
	if off < l.off {
		*l = lineCounter{data: l.data}
	}
	for i := l.off; i < off; i++ {
		if l.data[i] == '\n' {
			l.line++
			l.lineStart = i + 1
		}
	}
	l.off = off
	return l.line + 1, utf8.RuneCount(l.data[l.lineStart:off]) + 1
}

// yamlSafeJSON rewrites what valid JSON may hold inside strings but the
// YAML parser rejects or reads differently: the escape "\/"; UTF-16
// surrogate pairs "\ud83d\ude00" (written as one "\U0001F600"); lone
// surrogates and bytes that are not UTF-8 (written as "\uFFFD", as
// encoding/json decodes them); and characters YAML forbids in a stream or
// treats as line breaks (written as escapes). Column numbers after such a
// rewrite on a line may be off by a few; line numbers are unchanged.
func yamlSafeJSON(b []byte) []byte {
	clean := true
	for _, x := range b {
		if x == '\\' || x >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	inString := false
	for i := 0; i < len(b); {
		x := b[i]
		switch {
		case !inString:
			inString = x == '"'
			out = append(out, x)
			i++
		case x == '"':
			inString = false
			out = append(out, x)
			i++
		case x == '\\' && i+1 < len(b):
			n := rewriteEscape(b[i:], &out)
			i += n
		case x < utf8.RuneSelf && x != 0x7f:
			out = append(out, x)
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			switch {
			case r == utf8.RuneError && size <= 1:
				out = append(out, `\uFFFD`...)
			case !yamlAllowed(r) || r == 0x85 || r == 0x2028 || r == 0x2029 || r == 0xfeff:
				out = fmt.Appendf(out, `\u%04X`, r)
			default:
				out = append(out, b[i:i+size]...)
			}
			i += size
		}
	}
	return out
}

// rewriteEscape appends the YAML form of the JSON escape at the start of b
// to out and returns how many bytes of b it used.
func rewriteEscape(b []byte, out *[]byte) int {
	switch b[1] {
	case '/':
		*out = append(*out, '/')
		return 2
	case 'u':
		r, ok := hex4(b[2:])
		if !ok || !utf16.IsSurrogate(r) {
			break
		}
		if len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
			if r2, ok := hex4(b[8:]); ok {
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					*out = fmt.Appendf(*out, `\U%08X`, d)
					return 12
				}
			}
		}
		*out = append(*out, `\uFFFD`...)
		return 6
	}
	*out = append(*out, b[0], b[1])
	return 2
}

// hex4 reads four hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, x := range b[:4] {
		switch {
		case x >= '0' && x <= '9':
			r = r<<4 | rune(x-'0')
		case x >= 'a' && x <= 'f':
			r = r<<4 | rune(x-'a'+10)
		case x >= 'A' && x <= 'F':
			r = r<<4 | rune(x-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
