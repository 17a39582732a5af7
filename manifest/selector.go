package manifest

import (
	"fmt"
	"strings"

	"github.com/openctl/openctl/errcode"
)

// Selector is a label selector in kubectl's equality-based form:
// "app=web,tier!=db,env,!legacy" — key=value (also key==value), key!=value,
// key (the label exists) and !key (it does not), every requirement
// holding. The zero Selector matches everything.
type Selector []Requirement

// Requirement is one term of a Selector.
type Requirement struct {
	Key   string
	Op    string // "=", "!=", "exists" or "!exists"
	Value string // for "=" and "!="
}

// ParseSelector parses a label selector. An empty string is the Selector
// that matches everything. Errors match errcode.Invalid and quote the
// term that could not be read.
func ParseSelector(s string) (Selector, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var sel Selector
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		var r Requirement
		switch {
		case part == "":
			return nil, errcode.New(errcode.Invalid, fmt.Sprintf("label selector %q: empty requirement", s))
		case strings.Contains(part, "!="):
			r.Key, r.Value, _ = strings.Cut(part, "!=")
			r.Op = "!="
		case strings.Contains(part, "=="):
			r.Key, r.Value, _ = strings.Cut(part, "==")
			r.Op = "="
		case strings.Contains(part, "="):
			r.Key, r.Value, _ = strings.Cut(part, "=")
			r.Op = "="
		case strings.HasPrefix(part, "!"):
			r.Key, r.Op = part[1:], "!exists"
		default:
			r.Key, r.Op = part, "exists"
		}
		r.Key, r.Value = strings.TrimSpace(r.Key), strings.TrimSpace(r.Value)
		if r.Key == "" || strings.ContainsAny(r.Key, "=! ") || strings.ContainsAny(r.Value, "=! ") {
			return nil, errcode.New(errcode.Invalid, fmt.Sprintf("label selector %q: cannot read %q (want key=value, key!=value, key or !key)", s, part))
		}
		sel = append(sel, r)
	}
	return sel, nil
}

// Matches reports whether labels satisfy every requirement.
func (sel Selector) Matches(labels map[string]string) bool {
	for _, req := range sel {
		v, ok := labels[req.Key]
		switch req.Op {
		case "=":
			if !ok || v != req.Value {
				return false
			}
		case "!=":
			if ok && v == req.Value {
				return false
			}
		case "exists":
			if !ok {
				return false
			}
		case "!exists":
			if ok {
				return false
			}
		}
	}
	return true
}
