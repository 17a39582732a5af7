package output

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
)

// PlanSummaryLine returns the one-line summary of p that ends a text plan:
// "Plan: 1 to create, 2 to update, 0 to replace, 0 to delete, 3
// unchanged." A nil plan counts nothing.
func PlanSummaryLine(p *openctl.Plan) string {
	counts := map[openctl.Action]int{}
	if p != nil {
		for _, c := range p.Changes {
			counts[c.Action]++
		}
	}
	return fmt.Sprintf("Plan: %d to create, %d to update, %d to replace, %d to delete, %d unchanged.",
		counts[openctl.ActionCreate], counts[openctl.ActionUpdate], counts[openctl.ActionReplace],
		counts[openctl.ActionDelete], counts[openctl.ActionNoOp])
}

// WritePlanMarkdown writes p as GitHub-flavoured Markdown, the text a CI
// job posts as a pull-request comment:
//
//   - a heading and the summary line ([PlanSummaryLine]), in bold;
//   - a table of the changes (no-ops left out): action, resource, wave and
//     reasons;
//   - per resource with changed fields, a collapsed <details> block whose
//     summary names the resource and whose body is a "diff" code block:
//     "+ path: new" for an added field, "- path: old" for a removed one,
//     both lines for a changed one;
//   - the waves, as a numbered list.
//
// Values are written as in [WritePlan], secrets as [redacted]. Names,
// reasons and values cannot break the layout: table cells escape "|",
// Markdown punctuation and HTML; line breaks in a reason become <br>;
// code spans and fences are longer than any run of backticks they hold.
// Only [PlanOptions].Names is used (Markdown has no colour).
//
// A nil plan is an [errcode.Invalid] error. The text is written with one
// call to w.Write.
func WritePlanMarkdown(w io.Writer, p *openctl.Plan, o PlanOptions) error {
	if p == nil {
		return errcode.New(errcode.Invalid, "output: plan is nil")
	}
	name := o.name
	wave := waveNumbers(p)

	var b bytes.Buffer
	b.WriteString("### openctl plan\n\n")
	if p.HasChanges() {
		fmt.Fprintf(&b, "**%s**\n", PlanSummaryLine(p))
	} else {
		fmt.Fprintf(&b, "**No changes:** every resource matches its manifest. %s\n", PlanSummaryLine(p))
	}

	if p.HasChanges() {
		b.WriteString("\n| Action | Resource | Wave | Reasons |\n|---|---|---|---|\n")
		for _, c := range p.Changes {
			if c.Action == openctl.ActionNoOp {
				continue
			}
			res := codeSpan(name(c.ID))
			if c.Owner != nil {
				res += " (part of " + codeSpan(name(*c.Owner)) + ")"
			}
			wv := ""
			if n := wave[c.ID]; n > 0 {
				wv = strconv.Itoa(n)
			}
			reasons := make([]string, len(c.Reasons))
			for i, r := range c.Reasons {
				reasons[i] = escapeCell(r)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", markdownAction(c.Action), cellPipes(res), wv, strings.Join(reasons, "<br>"))
		}
	}

	for _, c := range p.Changes {
		if c.Action == openctl.ActionNoOp || len(c.Fields) == 0 {
			continue
		}
		lines := make([]string, 0, 2*len(c.Fields))
		for _, f := range c.Fields {
			path := sanitize(f.Path)
			switch {
			case f.Added:
				lines = append(lines, "+ "+path+": "+planValue(f.Path, f.New))
			case f.Removed:
				lines = append(lines, "- "+path+": "+planValue(f.Path, f.Old))
			default:
				lines = append(lines, "- "+path+": "+planValue(f.Path, f.Old), "+ "+path+": "+planValue(f.Path, f.New))
			}
		}
		body := strings.Join(lines, "\n")
		fence := strings.Repeat("`", max(3, longestRun(body, '`')+1))
		noun := "fields"
		if len(c.Fields) == 1 {
			noun = "field"
		}
		fmt.Fprintf(&b, "\n<details>\n<summary><code>%s</code> %s: %d changed %s</summary>\n\n%sdiff\n%s\n%s\n\n</details>\n",
			html.EscapeString(name(c.ID)), markdownAction(c.Action), len(c.Fields), noun, fence, body, fence)
	}

	if len(p.Waves) > 0 {
		b.WriteString("\n#### Waves\n\n")
		for i, w := range p.Waves {
			ids := make([]string, len(w))
			for j, id := range w {
				ids[j] = codeSpan(name(id))
			}
			fmt.Fprintf(&b, "%d. %s\n", i+1, strings.Join(ids, ", "))
		}
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("output: print plan: %w", err)
	}
	return nil
}

// markdownAction renders an action for the table: its symbol and name.
func markdownAction(a openctl.Action) string {
	switch a {
	case openctl.ActionCreate:
		return "➕ create"
	case openctl.ActionUpdate:
		return "🔄 update"
	case openctl.ActionReplace:
		return "♻️ replace"
	case openctl.ActionDelete:
		return "❌ delete"
	}
	return escapeCell(string(a))
}

// codeSpan renders s (one line) as a Markdown code span: delimited by one
// more backtick than its longest run of backticks, padded with spaces when
// it starts or ends with one.
func codeSpan(s string) string {
	if s == "" {
		return ""
	}
	d := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return d + s + d
}

// cellPipes escapes the pipes of s, which GitHub's tables require even
// inside code spans.
func cellPipes(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// escapeCell renders s as plain text in a table cell: the Markdown
// punctuation that acts within a line (\ ` * _ [ ] | ~) backslash-escaped,
// HTML characters as entities, line breaks as <br> and other control
// characters as "?".
func escapeCell(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString("<br>")
		case r == '\t':
			b.WriteByte(' ')
		case unicode.IsControl(r):
			b.WriteByte('?')
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case strings.ContainsRune("\\`*_[]|~", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// longestRun returns the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	longest, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			longest = max(longest, n)
		} else {
			n = 0
		}
	}
	return longest
}
