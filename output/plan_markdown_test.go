package output_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/output"
	"github.com/openctl/openctl/registry"
)

func markdown(t *testing.T, p *openctl.Plan, o output.PlanOptions) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, output.WritePlanMarkdown(&b, p, o))
	return b.String()
}

func TestPlanMarkdownGolden(t *testing.T) {
	out := markdown(t, samplePlan(), output.PlanOptions{Names: output.KindNames([]registry.Kind{svcKind})})
	golden(t, "plan.md", out)
	assert.NotContains(t, out, "pw")
	assert.NotContains(t, out, "\x1b[")
}

func TestPlanMarkdownNoChanges(t *testing.T) {
	p := &openctl.Plan{Changes: []openctl.Change{{ID: svcID("a"), Action: openctl.ActionNoOp}}, Waves: [][]manifest.ID{{svcID("a")}}}
	assert.Equal(t, "### openctl plan\n\n"+
		"**No changes:** every resource matches its manifest. Plan: 0 to create, 0 to update, 0 to replace, 0 to delete, 1 unchanged.\n"+
		"\n#### Waves\n\n1. `service/a`\n", markdown(t, p, output.PlanOptions{}))
	require.ErrorIs(t, output.WritePlanMarkdown(&bytes.Buffer{}, nil, output.PlanOptions{}), errcode.Invalid)
}

// unescapedPipes counts the "|" of a table row that are not escaped.
var unescapedPipe = regexp.MustCompile(`(^|[^\\])\|`)

// TestPlanMarkdownNasty gives names, reasons and values that would break
// a naive renderer: pipes, backticks, line breaks, HTML that closes the
// <details> block, Markdown emphasis.
func TestPlanMarkdownNasty(t *testing.T) {
	nasty := func(name string) manifest.ID {
		return manifest.ID{APIVersion: apiVersion, Kind: "Service", Name: name}
	}
	p := &openctl.Plan{
		Changes: []openctl.Change{
			{ID: nasty("a|b"), Action: openctl.ActionCreate, Reasons: []string{"line one\nline | two", "</details><script>x</script> *bold* _it_ [l](u)"}},
			{ID: nasty("tick`tick``"), Action: openctl.ActionUpdate, Fields: []manifest.FieldChange{
				{Path: "spec.cmd", Old: "echo ```", New: "echo ````\n</details>"},
				{Path: "spec.`odd|path`", New: "x", Added: true},
			}},
			{ID: nasty("</summary></details>"), Action: openctl.ActionReplace, Reasons: []string{"new\r\nline"},
				Fields: []manifest.FieldChange{{Path: "spec.a", Old: int64(1), New: int64(2)}}},
		},
		Waves: [][]manifest.ID{{nasty("a|b"), nasty("tick`tick``")}, {nasty("</summary></details>")}},
	}
	out := markdown(t, p, output.PlanOptions{})
	golden(t, "plan-nasty.md", out)

	lines := strings.Split(out, "\n")
	var rows []string
	for _, l := range lines {
		if strings.HasPrefix(l, "| ") || strings.HasPrefix(l, "|---") {
			rows = append(rows, l)
		}
	}
	require.Len(t, rows, 2+3, "header, delimiter and one row per change:\n%s", out)
	for _, r := range rows {
		assert.Len(t, unescapedPipe.FindAllString(r, -1), 5, "four cells: %s", r)
	}
	// Only the renderer's own <details> blocks open and close: one per
	// resource with fields.
	assert.Equal(t, 2, strings.Count(out, "<details>"))
	assert.Equal(t, 2, strings.Count(out, "</details>\n"), "no </details> from the input reaches the text outside code")
	assert.NotContains(t, out, "<script>")
	assert.Contains(t, out, "line one<br>line \\| two")
	assert.Contains(t, out, "new<br>line")
	// Fences are longer than the runs of backticks inside them.
	assert.Contains(t, out, "`````diff\n- spec.cmd: \"echo ```\"\n+ spec.cmd: \"echo ````\\n</details>\"\n+ spec.`odd|path`: \"x\"\n`````\n")
	assert.Contains(t, out, "<summary><code>service/tick`tick``</code>")
	assert.Contains(t, out, "<summary><code>service/&lt;/summary&gt;&lt;/details&gt;</code>")
	assert.Contains(t, out, "1. `service/a|b`, ``` service/tick`tick`` ```\n", "a code span starting or ending with a backtick is padded")
}
