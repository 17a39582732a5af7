package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// maxInputSize is the largest input Decode, DecodeBytes and Load accept.
// The YAML parser needs about a hundred times the input size in memory for
// the worst inputs, so this bounds a decode to a few hundred megabytes.
const maxInputSize = 4 << 20

// Decode reads all of r and decodes the manifests in it; see [DecodeBytes].
// file names the input in errors and in each resource's Source ("<stdin>"
// for standard input).
func Decode(r io.Reader, file string) ([]*Resource, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInputSize+1))
	if err != nil {
		return nil, &Error{File: file, Msg: "cannot read: " + err.Error(), Err: err}
	}
	return DecodeBytes(data, file)
}

// DecodeBytes decodes the manifests in data: multi-document YAML, or JSON
// (a single object, an array of objects, or a stream of objects) when the
// first byte that is not white space is '{' or '['. Empty YAML documents are
// skipped. file names the input in errors and in each resource's Source.
//
// Decoding is strict; see the package documentation for the rules. Every
// problem found is reported, as an errors.Join of [*Error] values sorted by
// line; in that case no resources are returned. DecodeBytes does not check
// for duplicate resources: [Load] and [CheckDuplicates] do.
func DecodeBytes(data []byte, file string) ([]*Resource, error) {
	var errs errorList
	rs := decodeInto(data, file, &errs)
	if err := errs.err(); err != nil {
		return nil, err
	}
	return rs, nil
}

// decodeInto decodes data, adding its problems to errs. It returns the
// resources of the documents that had none.
func decodeInto(data []byte, file string, errs *errorList) []*Resource {
	if len(data) > maxInputSize {
		errs.add(&Error{File: file, Msg: fmt.Sprintf("input is larger than %d MiB", maxInputSize>>20)})
		return nil
	}
	c := &converter{file: file, errs: errs, budget: maxNodes}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
	if isJSON(data) {
		return c.decodeJSON(data)
	}
	return c.decodeYAML(data)
}

// isJSON reports whether data looks like JSON: its first byte that is not
// white space opens an object or an array.
func isJSON(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// decodeYAML decodes the documents of a YAML stream. A syntax error ends
// the stream: the parser cannot resume after one.
func (c *converter) decodeYAML(data []byte) []*Resource {
	var rs []*Resource
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for index := 0; ; {
		var doc yaml.Node
		err := parseNext(dec, &doc)
		if errors.Is(err, io.EOF) {
			return rs
		}
		if err != nil {
			c.syntaxError(err, data, "YAML")
			return rs
		}
		root := documentRoot(&doc)
		if root == nil {
			continue // an empty document
		}
		if r := c.document(root, index); r != nil {
			rs = append(rs, r)
		}
		index++
	}
}

// parseNext parses the next document. The parser should not panic, but if
// it does on some input, that is reported as an error about the input.
func parseNext(dec *yaml.Decoder, doc *yaml.Node) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("yaml: parser failed: %v", p)
		}
	}()
	return dec.Decode(doc)
}

// documentRoot returns the content of a document node, or nil for an
// empty document (nothing but comments, or nothing at all).
func documentRoot(doc *yaml.Node) *yaml.Node {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == nullTag && root.Value == "" && root.Style&yaml.TaggedStyle == 0 {
		return nil
	}
	return root
}

// yamlLineRE matches the location yaml.v3 puts in its error messages.
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): `)

// syntaxError reports a parser error. yaml.v3 gives the line, if it knows
// it, in the message text; for errors about the input's encoding it gives
// none, and the first offending character is located here instead.
func (c *converter) syntaxError(err error, data []byte, format string) {
	msg := err.Error()
	line, col := 0, 0
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
		line, col = badCharacter(data)
	}
	e := &Error{File: c.file, Msg: fmt.Sprintf("invalid %s: %s", format, msg)}
	if line > 0 {
		e.Line = line + c.lineOff
		if col > 0 {
			if line == 1 {
				col += c.colOff
			}
			e.Column = col
		}
	} else if c.json {
		e.Line = c.lineOff + 1
	}
	c.failed = true
	c.errs.add(e)
}

// badCharacter returns the 1-based line and column of the first byte of
// data that is not valid UTF-8 or is a character YAML does not allow, or
// 0, 0 if there is none.
func badCharacter(data []byte) (line, col int) {
	line, col = 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if (r == utf8.RuneError && size <= 1) || !yamlAllowed(r) {
			return line, col
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return 0, 0
}

// yamlAllowed reports whether YAML allows r in a stream.
func yamlAllowed(r rune) bool {
	switch {
	case r == '\t', r == '\n', r == '\r':
		return true
	case r >= 0x20 && r <= 0x7e, r == 0x85:
		return true
	case r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd:
		return true
	case r >= 0x10000 && r <= 0x10ffff:
		return true
	}
	return false
}
