package vmhost

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// progTr is tr [-d] [-s] SET1 [SET2]: SETs with ranges (a-z), escapes
// (\n \t \\ \NNN) and the classes [:lower:] [:upper:] [:digit:]
// [:space:] [:alpha:] [:alnum:].
func progTr(ctx context.Context, c *Call) int {
	opts, args, err := flags(c.Args[1:], "dsc", "")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	del, squeeze := opts['d'] != "", opts['s'] != ""
	if len(args) == 0 || (!del && !squeeze && len(args) != 2) {
		return c.Errorf(1, "missing operand")
	}
	set1 := expandSet(args[0])
	var set2 []byte
	if len(args) > 1 {
		set2 = expandSet(args[1])
	}
	var table [256]int
	for i := range table {
		table[i] = i
	}
	var in1 [256]bool
	for i, b := range set1 {
		in1[b] = true
		if !del && len(set2) > 0 {
			j := min(i, len(set2)-1)
			table[b] = int(set2[j])
		}
	}
	var sq [256]bool
	sqSet := set1
	if !del && len(set2) > 0 {
		sqSet = set2
	}
	for _, b := range sqSet {
		sq[b] = true
	}
	data, err := io.ReadAll(ctxReader{ctx, c.Stdin})
	if err != nil {
		return c.Errorf(1, "read error: %s", errText(err))
	}
	out := make([]byte, 0, len(data))
	last := -1
	for _, b := range data {
		if del && in1[b] {
			continue
		}
		o := byte(table[b])
		if squeeze && sq[o] && int(o) == last {
			continue
		}
		out = append(out, o)
		last = int(o)
	}
	_, _ = c.Stdout.Write(out)
	return 0
}

// expandSet expands a tr set into its bytes.
func expandSet(s string) []byte {
	classes := map[string]string{
		"[:lower:]": "abcdefghijklmnopqrstuvwxyz", "[:upper:]": "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
		"[:digit:]": "0123456789", "[:space:]": " \t\n\v\f\r",
	}
	classes["[:alpha:]"] = classes["[:lower:]"] + classes["[:upper:]"]
	classes["[:alnum:]"] = classes["[:alpha:]"] + classes["[:digit:]"]
	var raw []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '[' {
			if j := strings.Index(s[i:], ":]"); j > 0 {
				if cl, ok := classes[s[i:i+j+2]]; ok {
					raw = append(raw, cl...)
					i += j + 1
					continue
				}
			}
		}
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n':
				raw = append(raw, '\n')
			case 't':
				raw = append(raw, '\t')
			case 'r':
				raw = append(raw, '\r')
			case '0', '1', '2', '3', '4', '5', '6', '7':
				v, n := 0, 0
				for n < 3 && i < len(s) && s[i] >= '0' && s[i] <= '7' {
					v = v*8 + int(s[i]-'0')
					i++
					n++
				}
				i--
				raw = append(raw, byte(v))
			default:
				raw = append(raw, s[i])
			}
			continue
		}
		if i+2 < len(s) && s[i+1] == '-' && s[i+2] >= s[i] {
			for b := int(s[i]); b <= int(s[i+2]); b++ {
				raw = append(raw, byte(b))
			}
			i += 2
			continue
		}
		raw = append(raw, s[i])
	}
	return raw
}

// progWc is wc [-l] [-w] [-c] [FILE…], counts in coreutils' order
// (lines, words, bytes), with the file's name when it has one.
func progWc(ctx context.Context, c *Call) int {
	opts, files, err := flags(c.Args[1:], "lwcm", "")
	if err != nil {
		return c.Errorf(1, "%v", err)
	}
	if len(opts) == 0 {
		opts = map[byte]string{'l': "1", 'w': "1", 'c': "1"}
	}
	single := len(opts) == 1 && len(files) <= 1
	bytesOnly := opts['l'] == "" && opts['w'] == ""
	return inputs(c, files, func(name string, r io.Reader) error {
		var data []byte
		size, isFile := regularSize(r)
		if !bytesOnly || !isFile {
			var err error
			if data, err = io.ReadAll(ctxReader{ctx, r}); err != nil {
				return err
			}
			size = int64(len(data))
		}
		var out []string
		if opts['l'] != "" {
			out = append(out, fmt.Sprint(strings.Count(string(data), "\n")))
		}
		if opts['w'] != "" {
			out = append(out, fmt.Sprint(len(strings.Fields(string(data)))))
		}
		if opts['c'] != "" || opts['m'] != "" {
			out = append(out, fmt.Sprint(size))
		}
		if !single {
			for i, s := range out {
				out[i] = fmt.Sprintf("%7s", s)
			}
		}
		line := strings.Join(out, " ")
		if name != "-" {
			line += " " + name
		}
		fmt.Fprintln(c.Stdout, line)
		return nil
	})
}

// breToGo translates a POSIX basic regular expression into Go's syntax:
// \( \) \{ \} \| \+ \? are the operators, the bare characters literal.
func breToGo(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\' && i+1 < len(s):
			i++
			switch n := s[i]; n {
			case '(', ')', '{', '}', '|', '+', '?':
				b.WriteByte(n)
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
		case strings.IndexByte("(){}|+?", ch) >= 0:
			b.WriteByte('\\')
			b.WriteByte(ch)
		case ch == '*' && (i == 0 || s[i-1] == '^' && i == 1):
			b.WriteString(`\*`) // a leading * is literal
		case ch == '[':
			// Copy a bracket expression whole.
			j := i + 1
			if j < len(s) && s[j] == '^' {
				j++
			}
			if j < len(s) && s[j] == ']' {
				j++
			}
			for j < len(s) && s[j] != ']' {
				if s[j] == '[' && j+1 < len(s) && s[j+1] == ':' {
					if k := strings.Index(s[j:], ":]"); k > 0 {
						j += k + 2
						continue
					}
				}
				j++
			}
			if j >= len(s) {
				b.WriteString(`\[`)
				continue
			}
			b.WriteString(strings.ReplaceAll(s[i:j+1], `\`, `\\`))
			i = j
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}

// progGrep is grep [-q] [-x] [-F] [-E] [-v] [-c] [-i] [-e PATTERN]
// PATTERN [FILE…], with Go's regexp engine (leftmost-first rather than
// POSIX leftmost-longest: it tells whether a line matches the same way).
func progGrep(ctx context.Context, c *Call) int {
	opts, args, err := flags(c.Args[1:], "qxFEvcisnhHlw", "e")
	if err != nil {
		fmt.Fprintf(c.Stderr, "grep: %v\n", err)
		return 2
	}
	pat, ok := opts['e']
	if !ok {
		if len(args) == 0 {
			fmt.Fprintln(c.Stderr, "Usage: grep [OPTION]... PATTERNS [FILE]...")
			return 2
		}
		pat, args = args[0], args[1:]
	}
	var exprs []string
	for _, p := range strings.Split(pat, "\n") {
		switch {
		case opts['F'] != "":
			p = regexp.QuoteMeta(p)
		case opts['E'] == "":
			p = breToGo(p)
		}
		if opts['w'] != "" {
			p = `\b(?:` + p + `)\b`
		}
		exprs = append(exprs, "(?:"+p+")")
	}
	expr := strings.Join(exprs, "|")
	if opts['x'] != "" {
		expr = "^(?:" + expr + ")$"
	}
	if opts['i'] != "" {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		fmt.Fprintf(c.Stderr, "grep: %v\n", err)
		return 2
	}
	quiet, invert, count := opts['q'] != "", opts['v'] != "", opts['c'] != ""
	prefix := len(args) > 1 && opts['h'] == "" || opts['H'] != ""
	matched := false
	st := inputs(c, args, func(name string, r io.Reader) error {
		if name == "-" {
			name = "(standard input)"
		}
		n, lineNo := 0, 0
		err := lines(ctxReader{ctx, r}, func(line string, _ bool) bool {
			lineNo++
			if re.MatchString(line) == invert {
				return true
			}
			matched = true
			n++
			if quiet {
				return false
			}
			if count || opts['l'] != "" {
				return true
			}
			out := line
			if opts['n'] != "" {
				out = fmt.Sprintf("%d:%s", lineNo, out)
			}
			if prefix {
				out = name + ":" + out
			}
			fmt.Fprintln(c.Stdout, out)
			return true
		})
		switch {
		case quiet:
		case opts['l'] != "":
			if n > 0 {
				fmt.Fprintln(c.Stdout, name)
			}
		case count && prefix:
			fmt.Fprintf(c.Stdout, "%s:%d\n", name, n)
		case count:
			fmt.Fprintln(c.Stdout, n)
		}
		return err
	})
	switch {
	case matched && (quiet || st == 0):
		return 0
	case st != 0:
		return 2
	}
	return 1
}
