package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
)

// PlanFormat is an output format of a plan, as given to "plan -o" and
// "show -o".
type PlanFormat string

// The plan formats.
const (
	// PlanText is [WritePlan]'s Terraform-like text.
	PlanText PlanFormat = "text"
	// PlanJSON is [WritePlanJSON]'s versioned [PlanReport].
	PlanJSON PlanFormat = "json"
	// PlanMarkdown is [WritePlanMarkdown]'s pull-request comment.
	PlanMarkdown PlanFormat = "markdown"
)

// PlanFormats lists the plan formats, in the order help text shows them.
func PlanFormats() []PlanFormat { return []PlanFormat{PlanText, PlanJSON, PlanMarkdown} }

// ParsePlanFormat reads a plan format name. The empty string is
// [PlanText]; case and surrounding spaces are ignored; "md" is
// [PlanMarkdown]. An unknown name is an [errcode.Invalid] error that lists
// the formats.
func ParsePlanFormat(s string) (PlanFormat, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "":
		return PlanText, nil
	case "md":
		return PlanMarkdown, nil
	}
	names := make([]string, 0, len(PlanFormats()))
	for _, f := range PlanFormats() {
		if string(f) == s {
			return f, nil
		}
		names = append(names, string(f))
	}
	return "", errcode.New(errcode.Invalid, fmt.Sprintf("output: unknown plan format %q: want one of %s", s, strings.Join(names, ", ")))
}

// RenderPlan writes p in format f: [WritePlan] (with o), [WritePlanJSON]
// or [WritePlanMarkdown] (with o.Names). An empty f is [PlanText]; an
// unknown one is an [errcode.Invalid] error. It is what "openctl plan -o"
// and "openctl show -o" call.
func RenderPlan(w io.Writer, f PlanFormat, p *openctl.Plan, o PlanOptions) error {
	switch f {
	case "", PlanText:
		return WritePlan(w, p, o)
	case PlanJSON:
		return WritePlanJSON(w, p)
	case PlanMarkdown:
		return WritePlanMarkdown(w, p, PlanOptions{Names: o.Names})
	}
	return errcode.New(errcode.Invalid, fmt.Sprintf("output: unknown plan format %q: want one of text, json, markdown", string(f)))
}
