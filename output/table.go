package output

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
)

// What a table cell shows for a missing value, an unknown age and a value
// that cannot be read at the column's path.
const (
	none    = "<none>"
	unknown = "<unknown>"
	invalid = "<invalid>"
)

// The tabwriter settings kubectl uses.
const (
	tabMinWidth = 6
	tabWidth    = 4
	tabPadding  = 3
)

// columns returns the kind's columns to print: the non-wide ones in order,
// then, if wide, the wide ones in order.
func columns(k registry.Kind, wide bool) []registry.Column {
	var cols []registry.Column
	for _, c := range k.Columns {
		if !c.Wide {
			cols = append(cols, c)
		}
	}
	if wide {
		for _, c := range k.Columns {
			if c.Wide {
				cols = append(cols, c)
			}
		}
	}
	return cols
}

func printTable(w io.Writer, rs []*manifest.Resource, wide bool, o Options) error {
	cols := columns(o.Kind, wide)
	now := o.now()
	mixed := slices.ContainsFunc(rs, func(r *manifest.Resource) bool { return r.Kind != rs[0].Kind })
	tw := tabwriter.NewWriter(w, tabMinWidth, tabWidth, tabPadding, ' ', 0)
	row := make([]string, 0, len(cols)+2)
	if !o.NoHeaders {
		row = append(row, "NAME")
		for _, c := range cols {
			row = append(row, sanitize(c.Name))
		}
		row = append(row, "AGE")
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	for _, r := range rs {
		row = row[:0]
		name := r.Metadata.Name
		if mixed {
			name = NameOf(r.ID())
		}
		row = append(row, sanitize(name))
		obj := r.ObjectView()
		for _, c := range cols {
			row = append(row, cell(obj, c.Field))
		}
		age := unknown
		if t, ok := o.Ages[r.ID()]; ok && !t.IsZero() {
			age = Age(now.Sub(t))
		}
		row = append(row, age)
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush() // reports the first write error
}

// cell formats the value at path in obj for a table.
func cell(obj map[string]any, path string) string {
	v, found, err := manifest.Field(obj, path)
	switch {
	case err != nil:
		return invalid
	case !found:
		return none
	}
	s := cellValue(v)
	if s == "" {
		return none
	}
	return sanitize(s)
}

// cellValue formats a value: lists comma-joined, maps as sorted k=v pairs,
// "" for nil and empty values.
func cellValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			if s := cellValue(e); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, ",")
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, k+"="+cellValue(x[k]))
		}
		return strings.Join(parts, ",")
	}
	return scalar(v)
}

// scalar formats a scalar value: numbers without exponent where
// reasonable, booleans as true/false.
func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		if x > -1e21 && x < 1e21 {
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

// sanitize makes s safe to print on one line of a terminal: tabs and line
// breaks become spaces and other control characters (an ESC that would
// start an escape sequence) become '?'.
func sanitize(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case unicode.IsControl(r):
			return '?'
		}
		return r
	}, s)
}

// Age renders a duration the way kubectl's AGE column does: seconds up to
// two minutes ("45s"), then minutes ("5m30s" below ten minutes, "12m"),
// hours ("3h4m" below eight hours, "20h"), days ("5d4h" below eight days,
// "45d") and years ("2y100d" below eight years, "9y"). A negative
// duration of up to two seconds (clock skew) is "0s"; a larger one is
// "<invalid>".
func Age(d time.Duration) string {
	if s := int64(d.Seconds()); s < -1 {
		return invalid
	} else if s < 0 {
		return "0s"
	} else if s < 120 {
		return fmt.Sprintf("%ds", s)
	}
	minutes := int64(d / time.Minute)
	if minutes < 10 {
		if s := int64(d/time.Second) % 60; s != 0 {
			return fmt.Sprintf("%dm%ds", minutes, s)
		}
		return fmt.Sprintf("%dm", minutes)
	}
	if minutes < 3*60 {
		return fmt.Sprintf("%dm", minutes)
	}
	hours := int64(d / time.Hour)
	switch {
	case hours < 8:
		if m := minutes % 60; m != 0 {
			return fmt.Sprintf("%dh%dm", hours, m)
		}
		return fmt.Sprintf("%dh", hours)
	case hours < 48:
		return fmt.Sprintf("%dh", hours)
	case hours < 8*24:
		if h := hours % 24; h != 0 {
			return fmt.Sprintf("%dd%dh", hours/24, h)
		}
		return fmt.Sprintf("%dd", hours/24)
	case hours < 2*365*24:
		return fmt.Sprintf("%dd", hours/24)
	case hours < 8*365*24:
		if dy := (hours / 24) % 365; dy != 0 {
			return fmt.Sprintf("%dy%dd", hours/24/365, dy)
		}
		return fmt.Sprintf("%dy", hours/24/365)
	}
	return fmt.Sprintf("%dy", hours/24/365)
}
