package apischema

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Messages Proxmox VE puts in the "errors" object of a 400 "Parameter
// verification failed." response (pve-common src/PVE/JSONSchema.pm).
const (
	MsgMissing    = "property is missing and it is not optional"
	MsgNotDefined = "property is not defined in schema and the schema does not allow additional properties"
)

// Validate checks request parameters (query and body, already decoded to
// strings) together with the path parameters Lookup found, and returns
// Proxmox's message for every offending parameter, keyed by parameter name.
// It returns nil when the request is acceptable. See the package
// documentation for what is approximated.
func (op *Operation) Validate(params map[string]string) map[string]string {
	vals := make(map[string]string, len(params)+len(op.PathParams))
	for k, v := range params {
		vals[k] = v
	}
	for k, v := range op.PathParams {
		vals[k] = v
	}
	errs := map[string]string{}
	for _, name := range sortedKeys(op.Parameters) {
		p := op.Parameters[name]
		if base, ok := strings.CutSuffix(name, "[n]"); ok {
			for _, k := range sortedKeys(vals) {
				if isIndexed(k, base) {
					if msg := checkValue(k, p, vals[k]); msg != "" {
						addError(errs, k, msg)
					}
				}
			}
			continue
		}
		v, present := vals[name]
		if !present {
			if !p.Optional && p.Alias == "" {
				addError(errs, name, MsgMissing)
			}
			continue
		}
		if msg := checkValue(name, p, v); msg != "" {
			addError(errs, name, msg)
		}
	}
	for _, k := range sortedKeys(vals) {
		p := op.Property(k)
		if p == nil {
			if !op.AdditionalProperties {
				addError(errs, k, MsgNotDefined)
			}
			continue
		}
		if p.Requires != "" {
			if _, ok := vals[p.Requires]; !ok {
				addError(errs, p.Requires, fmt.Sprintf("missing property - '%s' requires this property", k))
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// Property returns the schema of the parameter with this name; net3 finds
// net[n]. It returns nil for an unknown parameter.
func (op *Operation) Property(name string) *Property {
	if p, ok := op.Parameters[name]; ok {
		return p
	}
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) || i == 0 {
		return nil
	}
	return op.Parameters[name[:i]+"[n]"]
}

// Required lists the names of the parameters that must be given (path
// parameters included), sorted.
func (op *Operation) Required() []string {
	var out []string
	for _, name := range sortedKeys(op.Parameters) {
		p := op.Parameters[name]
		if !p.Optional && p.Alias == "" && !strings.HasSuffix(name, "[n]") {
			out = append(out, name)
		}
	}
	return out
}

func isIndexed(k, base string) bool {
	rest, ok := strings.CutPrefix(k, base)
	if !ok || rest == "" {
		return false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// addError mirrors add_error: a second message for the same key is appended
// after a literal backslash-n (Perl single quotes).
func addError(errs map[string]string, key, msg string) {
	if key == "" {
		key = "_root"
	}
	if old, ok := errs[key]; ok {
		errs[key] = old + `\n` + msg
		return
	}
	errs[key] = msg
}

var (
	integerRE = regexp.MustCompile(`^[+-]?\d+$`)
	numberRE  = regexp.MustCompile(`^[+-]?(\d+\.\d+|\d+\.|\.\d+|\d+)([eE][+-]?\d+)?$`)
)

// checkValue is check_prop for a defined scalar value: type, format,
// pattern, maxLength, minLength, maximum, minimum, enum — first failure wins
// except for enum, as in Proxmox.
func checkValue(path string, p *Property, v string) string {
	switch p.Type {
	case "boolean":
		// check_type accepts exactly '1' and '0'.
		if v != "1" && v != "0" {
			return fmt.Sprintf("type check ('%s') failed - got '%s'", p.Type, v)
		}
	case "integer":
		if !integerRE.MatchString(v) {
			return fmt.Sprintf("type check ('%s') failed - got '%s'", p.Type, v)
		}
	case "number":
		if !numberRE.MatchString(v) {
			return fmt.Sprintf("type check ('%s') failed - got '%s'", p.Type, v)
		}
	case "array", "object":
		return "" // not representable as one string; not checked
	}
	msg := ""
	if p.Format != "" {
		msg = checkFormat(path, p.Format, v)
	} else if p.PropertyString != nil {
		msg = checkPropertyString(path, p.PropertyString, v)
	}
	if msg != "" {
		// $@ of a die "...\n" keeps its newline.
		if !strings.HasSuffix(msg, "\n") {
			msg += "\n"
		}
		return "invalid format - " + msg
	}
	if p.re != nil && !p.re.MatchString(v) {
		return "value does not match the regex pattern"
	}
	if p.MaxLength != nil && utf8.RuneCountInString(v) > *p.MaxLength {
		return fmt.Sprintf("value may only be %d characters long", *p.MaxLength)
	}
	if p.MinLength != nil && utf8.RuneCountInString(v) < *p.MinLength {
		return fmt.Sprintf("value must be at least %d characters long", *p.MinLength)
	}
	if numberRE.MatchString(v) {
		f, err := strconv.ParseFloat(v, 64)
		if err == nil {
			if p.Maximum != nil && f > *p.Maximum {
				return "value must have a maximum value of " + perlNum(*p.Maximum)
			}
			if p.Minimum != nil && f < *p.Minimum {
				return "value must have a minimum value of " + perlNum(*p.Minimum)
			}
		}
	}
	if len(p.Enum) > 0 {
		for _, e := range p.Enum {
			if e == v {
				return ""
			}
		}
		return fmt.Sprintf("value '%s' does not have a value in the enumeration '%s'", v, strings.Join(p.Enum, ", "))
	}
	return ""
}

func perlNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// checkPropertyString follows parse_property_string: comma-separated parts,
// key=value or a bare value for the default key, aliases followed, then
// every key checked like a parameter. Validator callbacks are not run.
func checkPropertyString(path string, format map[string]*Property, data string) string {
	res := map[string]string{}
	var defaultKey string
	for _, part := range strings.Split(data, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		if k, v, ok := strings.Cut(part, "="); ok && k != "" && v != "" {
			if _, dup := res[k]; dup {
				return "duplicate key in comma-separated list property: " + k + "\n"
			}
			s := format[k]
			if s != nil && s.Alias != "" {
				if s.KeyAlias != "" {
					if _, dup := res[s.KeyAlias]; dup {
						return "key alias '" + s.KeyAlias + "' is already defined\n"
					}
					res[s.KeyAlias] = k
				}
				k = s.Alias
				s = format[k]
			}
			if s == nil {
				return "invalid key in comma-separated list property: " + k + "\n"
			}
			if s.Type == "boolean" {
				if b, ok := parseBoolean(v); ok {
					v = b
				}
			}
			res[k] = v
		} else if !strings.Contains(part, "=") {
			if defaultKey != "" {
				return "duplicate key in comma-separated list property: " + defaultKey + "\n"
			}
			for _, key := range sortedKeys(format) {
				if format[key].DefaultKey {
					defaultKey = key
					break
				}
			}
			if defaultKey == "" {
				return "value without key, but schema does not define a default key\n"
			}
			if _, dup := res[defaultKey]; dup {
				return "duplicate key in comma-separated list property: " + defaultKey + "\n"
			}
			res[defaultKey] = part
		} else {
			return "missing key in comma-separated list property\n"
		}
	}
	errs := map[string]string{}
	for _, k := range sortedKeys(format) {
		s := format[k]
		sub := path + "." + k
		v, ok := res[k]
		if !ok {
			if !s.Optional && s.Alias == "" {
				addError(errs, sub, MsgMissing)
			}
			continue
		}
		if msg := checkValue(sub, s, v); msg != "" {
			addError(errs, sub, msg)
		}
	}
	if len(errs) == 0 {
		return ""
	}
	// PVE::Exception::stringify: the message, then "$key: $error\n" per
	// error (Perl's hash order; sorted here).
	var b strings.Builder
	b.WriteString("format error\n")
	for _, k := range sortedKeys(errs) {
		b.WriteString(k + ": " + errs[k] + "\n")
	}
	return b.String()
}

// parseBoolean is PVE::JSONSchema::parse_boolean.
func parseBoolean(v string) (string, bool) {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return "1", true
	case "0", "false", "no", "off":
		return "0", true
	}
	return "", false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
