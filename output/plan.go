package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
)

// PlanOptions configures [WritePlan].
type PlanOptions struct {
	// Color adds ANSI colours: green for create, yellow for update, red
	// for replace and delete.
	Color bool
	// Names renders resource IDs; nil means [NameOf]. See [KindNames].
	Names func(manifest.ID) string
}

// name renders id for a plan, printable: o.Names, or NameOf.
func (o PlanOptions) name(id manifest.ID) string {
	if o.Names == nil {
		return sanitize(NameOf(id))
	}
	return sanitize(o.Names(id))
}

// waveNumbers numbers the waves of p from 1, by resource.
func waveNumbers(p *openctl.Plan) map[manifest.ID]int {
	wave := map[manifest.ID]int{}
	for i, w := range p.Waves {
		for _, id := range w {
			wave[id] = i + 1
		}
	}
	return wave
}

// PrintPlan writes p the way Terraform shows a plan; it is [WritePlan]
// with only the colour option set.
func PrintPlan(w io.Writer, p *openctl.Plan, color bool) error {
	return WritePlan(w, p, PlanOptions{Color: color})
}

// The ANSI colours.
const (
	ansiReset  = "\x1b[0m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
)

// WritePlan writes p: for each change other than a no-op, a header with a
// symbol — "+" create, "~" update, "-/+" replace, "-" delete — and the
// resource, the reasons (as "# ..." lines) and the changed fields
//
//	~ svc/web-01 will be updated in place
//	    # image change takes effect after a restart
//	    ~ spec.replicas: 2 → 4
//	    + spec.tags: ["web"]
//	    - spec.description: "old"
//
// then the execution waves ("Wave 1: svc/web-01, svc/web-02") and a summary,
// "Plan: 1 to create, 1 to update, 0 to replace, 0 to delete, 3
// unchanged." Strings are quoted, lists and maps written as JSON. Values
// of fields whose path contains "password", "passphrase", "secret" or
// "token", values that already read "[redacted]" and secret.Secret values
// are written as [redacted].
//
// A nil plan is an [errcode.Invalid] error. The plan is written with one
// call to w.Write.
func WritePlan(w io.Writer, p *openctl.Plan, o PlanOptions) error {
	if p == nil {
		return errcode.New(errcode.Invalid, "output: plan is nil")
	}
	name := o.name
	paint := func(color, s string) string {
		if !o.Color {
			return s
		}
		return color + s + ansiReset
	}
	var b bytes.Buffer
	counts := map[openctl.Action]int{}
	for _, c := range p.Changes {
		counts[c.Action]++
		if c.Action == openctl.ActionNoOp {
			continue
		}
		sym, color, verb := actionStyle(c.Action)
		fmt.Fprintf(&b, "%s %s", paint(color, fmt.Sprintf("%3s", sym)), name(c.ID))
		if c.Owner != nil {
			fmt.Fprintf(&b, " (part of %s)", name(*c.Owner))
		}
		fmt.Fprintf(&b, " %s\n", verb)
		for _, r := range c.Reasons {
			fmt.Fprintf(&b, "      # %s\n", sanitize(r))
		}
		for _, f := range c.Fields {
			path := sanitize(f.Path)
			switch {
			case f.Added:
				fmt.Fprintf(&b, "      %s %s: %s\n", paint(ansiGreen, "+"), path, planValue(f.Path, f.New))
			case f.Removed:
				fmt.Fprintf(&b, "      %s %s: %s\n", paint(ansiRed, "-"), path, planValue(f.Path, f.Old))
			default:
				fmt.Fprintf(&b, "      %s %s: %s → %s\n", paint(ansiYellow, "~"), path, planValue(f.Path, f.Old), planValue(f.Path, f.New))
			}
		}
	}
	if !p.HasChanges() {
		b.WriteString("No changes: every resource matches its manifest.\n")
	}
	if len(p.Waves) > 0 {
		b.WriteByte('\n')
		for i, wave := range p.Waves {
			ids := make([]string, len(wave))
			for j, id := range wave {
				ids[j] = name(id)
			}
			fmt.Fprintf(&b, "Wave %d: %s\n", i+1, strings.Join(ids, ", "))
		}
	}
	fmt.Fprintf(&b, "\nPlan: %d to create, %d to update, %d to replace, %d to delete, %d unchanged.\n",
		counts[openctl.ActionCreate], counts[openctl.ActionUpdate], counts[openctl.ActionReplace],
		counts[openctl.ActionDelete], counts[openctl.ActionNoOp])
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("output: print plan: %w", err)
	}
	return nil
}

// actionStyle returns the symbol, colour and verb phrase of an action.
func actionStyle(a openctl.Action) (sym, color, verb string) {
	switch a {
	case openctl.ActionCreate:
		return "+", ansiGreen, "will be created"
	case openctl.ActionUpdate:
		return "~", ansiYellow, "will be updated in place"
	case openctl.ActionReplace:
		return "-/+", ansiRed, "must be replaced"
	case openctl.ActionDelete:
		return "-", ansiRed, "will be deleted"
	}
	return "?", ansiYellow, "will be changed (" + sanitize(string(a)) + ")"
}

// sensitive reports whether a field path names a secret by convention.
func sensitive(path string) bool {
	p := strings.ToLower(path)
	for _, word := range []string{"password", "passphrase", "secret", "token"} {
		if strings.Contains(p, word) {
			return true
		}
	}
	return false
}

// planValue formats the value of the field at path for a plan line.
func planValue(path string, v any) string {
	if sensitive(path) {
		return secret.Redacted
	}
	v = redactSensitive(redactValue(v))
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if x == secret.Redacted {
			return x
		}
		return strconv.Quote(x)
	case map[string]any, []any:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(x); err != nil {
			return invalid
		}
		return sanitize(strings.TrimSuffix(b.String(), "\n"))
	}
	return sanitize(scalar(v))
}

// redactSensitive replaces the values of map keys that name secrets, in a
// value redactValue has copied.
func redactSensitive(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if sensitive(k) {
				x[k] = secret.Redacted
			} else {
				x[k] = redactSensitive(e)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = redactSensitive(e)
		}
	}
	return v
}
