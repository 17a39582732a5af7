package main

import (
	"fmt"
	"strings"

	"github.com/openctl/openctl/manifest"
)

// selector is a label selector in kubectl's equality-based form:
// "app=web,tier!=db,env,!legacy" — key=value (also key==value), key!=value,
// key (the label exists) and !key (it does not). Every requirement must
// hold.
type selector []requirement

type requirement struct {
	key, value string
	op         string // "=", "!=", "exists", "!exists"
}

func parseSelector(s string) (selector, error) {
	var sel selector
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		var r requirement
		switch {
		case part == "":
			return nil, fmt.Errorf("label selector %q: empty requirement", s)
		case strings.Contains(part, "!="):
			r.key, r.value, _ = strings.Cut(part, "!=")
			r.op = "!="
		case strings.Contains(part, "=="):
			r.key, r.value, _ = strings.Cut(part, "==")
			r.op = "="
		case strings.Contains(part, "="):
			r.key, r.value, _ = strings.Cut(part, "=")
			r.op = "="
		case strings.HasPrefix(part, "!"):
			r.key, r.op = part[1:], "!exists"
		default:
			r.key, r.op = part, "exists"
		}
		r.key, r.value = strings.TrimSpace(r.key), strings.TrimSpace(r.value)
		if r.key == "" || strings.ContainsAny(r.key, "=! ") || strings.ContainsAny(r.value, "=! ") {
			return nil, fmt.Errorf("label selector %q: cannot read %q (want key=value, key!=value, key or !key)", s, part)
		}
		sel = append(sel, r)
	}
	return sel, nil
}

// matches reports whether r's labels satisfy every requirement.
func (sel selector) matches(r *manifest.Resource) bool {
	for _, req := range sel {
		v, ok := r.Metadata.Labels[req.key]
		switch req.op {
		case "=":
			if !ok || v != req.value {
				return false
			}
		case "!=":
			if ok && v == req.value {
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
