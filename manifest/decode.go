package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/errcode"
)

// Decode reads all of r and decodes the manifests in it; see [DecodeBytes].
// file names the input in errors and in each resource's Source ("<stdin>"
// for standard input).
func Decode(r io.Reader, file string) ([]*Resource, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInputSize+1))
	if err != nil {
		return nil, inputError(errcode.InputError{File: file, Msg: "cannot read", Err: err})
	}
	var errs errorList
	return decoded(decodeInto(data, file, &errs), errs.err())
}

// DecodeBytes decodes the manifests in data: multi-document YAML, or JSON
// (a single object, an array of objects, or a stream of objects) when the
// first byte that is not white space is '{' or '['. Empty YAML documents are
// skipped. A document that is a kubectl-style List (apiVersion v1, kind
// List, items) stands for its items, as `kubectl get -o yaml` and
// [EncodeYAMLList] write several objects. file names the input in errors
// and in each resource's Source.
//
// Decoding is strict; see the package documentation for the rules. Every
// problem found is reported, as an errors.Join of [*errcode.InputError]
// values sorted by line; in that case no resources are returned. DecodeBytes
// does not check for duplicate resources: [Load] and [CheckDuplicates] do.
// The resources keep a copy of data, to find their fields again when an
// error must name one ([Resource.Locate]).
func DecodeBytes(data []byte, file string) ([]*Resource, error) {
	var errs errorList
	return decoded(decodeInto(bytes.Clone(data), file, &errs), errs.err())
}

// decoded returns rs, or nil and err when there were problems.
func decoded(rs []*Resource, err error) ([]*Resource, error) {
	if err != nil {
		return nil, err
	}
	return rs, nil
}

// decodeInto decodes data, adding its problems to errs. It returns the
// resources of the documents that had none, which keep data: the caller
// must not change it.
func decodeInto(data []byte, file string, errs *errorList) []*Resource {
	if len(data) > maxInputSize {
		errs.add(inputError(errcode.InputError{File: file, Msg: fmt.Sprintf("input is larger than %d MiB", maxInputSize>>20)}))
		return nil
	}
	c := &converter{file: file, errs: errs, budget: maxNodes, in: &input{data: data, file: file}}
	return c.decode(data)
}

// decode decodes the documents of data.
func (c *converter) decode(data []byte) []*Resource {
	file := c.file
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if isJSON(data) {
		return c.decodeJSON(data)
	}
	if line, size := largestDocument(data); size > maxDocumentSize {
		c.errs.add(inputError(errcode.InputError{File: file, Line: line, Msg: fmt.Sprintf("document is larger than %d MiB (%d bytes); split it into several resources", maxDocumentSize>>20, size)}))
		return nil
	}
	return c.decodeYAML(data)
}

// largestDocument returns the 1-based line where the largest document of a
// YAML stream starts, and its size in bytes. Documents are told apart by
// their markers ("---" or "..." at the start of a line, followed by white
// space or the end of the line), which YAML does not allow inside a
// document's content; a part between two markers holds at most one
// document, so its size bounds that document's, without parsing it.
func largestDocument(data []byte) (line, size int) {
	start, startLine, lineNo := 0, 1, 1
	consider := func(end int) {
		if end-start > size {
			line, size = startLine, end-start
		}
	}
	for i := 0; i < len(data); {
		rest := data[i:]
		if bytes.HasPrefix(rest, []byte("---")) || bytes.HasPrefix(rest, []byte("...")) {
			if len(rest) == 3 || bytes.IndexByte([]byte(" \t\r\n"), rest[3]) >= 0 {
				consider(i)
				start, startLine = i, lineNo
			}
		}
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			break
		}
		i += nl + 1
		lineNo++
	}
	consider(len(data))
	return line, size
}

// tooMany reports, once, a document beyond the maxResources of an input,
// at line and column (of the file); decoding stops there.
func (c *converter) tooMany(index, line, col int) bool {
	if index < maxResources {
		return false
	}
	c.errs.add(inputError(errcode.InputError{File: c.file, Line: line, Column: col, Msg: fmt.Sprintf("more than %d documents in one input; split it into several files", maxResources)}))
	return true
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
		if line, col := c.pos(root); c.tooMany(index, line, col) {
			return rs
		}
		got, n := c.documents(root, index)
		rs = append(rs, got...)
		index += n
	}
}

// errParserPanic marks an error made from a panic in the YAML parser.
var errParserPanic = errors.New("YAML parser failed")

// parseNext parses the next document. The parser should not panic, but if
// it does on some input, that is reported as an error about the input.
func parseNext(dec *yaml.Decoder, doc *yaml.Node) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errParserPanic, p)
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

// yamlParserProblems are the messages of yaml.v3's parser (as opposed to
// its scanner) errors. For those it reports a 0-based line, and no line
// at all for the first line of the input.
var yamlParserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// unknownAnchorRE matches yaml.v3's error for an alias without an anchor,
// which carries no line.
var unknownAnchorRE = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)

// syntaxError reports a parser error. yaml.v3 gives the line, if it knows
// it, in the message text, 0-based for some errors (see
// yamlParserProblems); for an unknown anchor and for errors about the
// input's encoding it gives none, and the place is found here instead.
func (c *converter) syntaxError(err error, data []byte, format string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line, col := 0, 0
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = err.Error()[len(m[0]):]
	}
	parserProblem := slices.Contains(yamlParserProblems, msg)
	switch {
	case parserProblem:
		line++
	case line > 0:
	case unknownAnchorRE.MatchString(msg):
		line, col = find(data, "*"+unknownAnchorRE.FindStringSubmatch(msg)[1])
	case errors.Is(err, errParserPanic):
	default:
		// An error about the encoding, or one on the first line (the
		// only errors yaml.v3 gives without a line).
		if line, col = badCharacter(data); line == 0 {
			line = 1
		}
	}
	e := inputError(errcode.InputError{File: c.file, Msg: fmt.Sprintf("invalid %s: %s", format, msg)})
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

// find returns the 1-based line and column of the first occurrence of s in
// data, or 0, 0.
func find(data []byte, s string) (line, col int) {
	i := bytes.Index(data, []byte(s))
	if i < 0 {
		return 0, 0
	}
	line = 1 + bytes.Count(data[:i], []byte("\n"))
	start := bytes.LastIndexByte(data[:i], '\n') + 1
	return line, 1 + utf8.RuneCount(data[start:i])
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
