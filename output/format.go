package output

import (
	"fmt"
	"strings"

	"github.com/openctl/openctl/errcode"
)

// Format is an output format, as given to "get -o".
type Format string

// The formats.
const (
	// Table prints NAME, the kind's columns and AGE, aligned.
	Table Format = "table"
	// Wide is Table with the kind's wide columns too.
	Wide Format = "wide"
	// YAML prints the resources as a YAML stream that apply reads back.
	YAML Format = "yaml"
	// JSON prints one resource as an object, several as an array; apply
	// reads either back.
	JSON Format = "json"
	// Name prints "<kind>/<name>" per line, the kind in lower case.
	Name Format = "name"
)

// Formats lists the formats, in the order help text shows them.
func Formats() []Format { return []Format{Table, Wide, YAML, JSON, Name} }

// ParseFormat reads a format name. The empty string is [Table]; case and
// surrounding spaces are ignored. An unknown name is an [errcode.Invalid]
// error that lists the formats.
func ParseFormat(s string) (Format, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return Table, nil
	}
	for _, f := range Formats() {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, 0, len(Formats()))
	for _, f := range Formats() {
		names = append(names, string(f))
	}
	return "", errcode.New(errcode.Invalid, fmt.Sprintf("output: unknown format %q: want one of %s", s, strings.Join(names, ", ")))
}
