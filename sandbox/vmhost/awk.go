package vmhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// progAwk is a small awk: awk [-F FS] [-v NAME=VALUE]… 'PROGRAM' [FILE…].
// goawk, the library the brief asked for, is not served by the module
// proxy here, so this implements the part of the language the scripts
// openctl sends use, and a little more: BEGIN/END and expression
// patterns (/re/ included); actions of print, printf, if/else, next,
// exit, assignments (= += -=, to variables, array elements and fields),
// blocks; expressions with || && ! ~ !~ comparisons, concatenation,
// + - * / %, unary minus, $expr, NR NF FS OFS, and the functions
// length, split, substr, index, tolower, toupper. Not there: loops,
// user functions, getline, output redirection, sub/gsub, ?:, ++/--.
func progAwk(ctx context.Context, c *Call) int {
	args := c.Args[1:]
	a := &awk{c: c, vars: map[string]*awkVal{}, arrays: map[string]map[string]*awkVal{}}
	a.setVar("FS", awkStr(" "))
	a.setVar("OFS", awkStr(" "))
	a.setVar("ORS", awkStr("\n"))
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		opt := args[0]
		args = args[1:]
		switch {
		case opt == "--":
		case opt == "-F" || opt == "-v":
			if len(args) == 0 {
				return c.Errorf(2, "option requires an argument -- %s", opt[1:])
			}
			if err := a.option(opt[1], args[0]); err != nil {
				return c.Errorf(2, "%v", err)
			}
			args = args[1:]
			continue
		case strings.HasPrefix(opt, "-F") || strings.HasPrefix(opt, "-v"):
			if err := a.option(opt[1], opt[2:]); err != nil {
				return c.Errorf(2, "%v", err)
			}
			continue
		default:
			return c.Errorf(2, "option %s is not supported by this awk", opt)
		}
		break
	}
	if len(args) == 0 {
		return c.Errorf(2, "usage: awk [-F fs][-v var=value] 'prog' [file ...]")
	}
	prog, err := parseAwk(args[0])
	if err != nil {
		return c.Errorf(2, "syntax error: %v", err)
	}
	a.prog = prog
	return a.run(ctx, args[1:])
}

// awkVal is an awk value: a string, a number, or a string from input
// that looks like a number (a "strnum", compared as a number).
type awkVal struct {
	s      string
	n      float64
	num    bool // a number
	strnum bool // input that looks numeric
}

func awkStr(s string) *awkVal  { return &awkVal{s: s} }
func awkNum(n float64) *awkVal { return &awkVal{n: n, num: true} }

// awkInput is a value read from input, command line or split.
func awkInput(s string) *awkVal {
	v := &awkVal{s: s}
	if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && strings.TrimSpace(s) != "" {
		v.n, v.strnum = f, true
	}
	return v
}

func (v *awkVal) str() string {
	if !v.num {
		return v.s
	}
	if v.n == math.Trunc(v.n) && math.Abs(v.n) < 1e16 {
		return strconv.FormatInt(int64(v.n), 10)
	}
	return strconv.FormatFloat(v.n, 'g', 6, 64)
}

func (v *awkVal) number() float64 {
	if v.num || v.strnum {
		return v.n
	}
	s := strings.TrimSpace(v.s)
	end := 0
	for end < len(s) && strings.IndexByte("0123456789.+-eE", s[end]) >= 0 {
		end++
	}
	for ; end > 0; end-- {
		if f, err := strconv.ParseFloat(s[:end], 64); err == nil {
			return f
		}
	}
	return 0
}

func (v *awkVal) truth() bool {
	if v.num || v.strnum {
		return v.n != 0
	}
	return v.s != ""
}

type awkCtl int

const (
	ctlNone awkCtl = iota
	ctlNext
	ctlExit
)

// awk is one run of an awk program.
type awk struct {
	c      *Call
	prog   *awkProg
	vars   map[string]*awkVal
	arrays map[string]map[string]*awkVal
	fields []string // $0, $1…
	nr     int
	status int
}

func (a *awk) option(flag byte, v string) error {
	if flag == 'F' {
		if v == "t" {
			v = "\t"
		}
		a.setVar("FS", awkStr(v))
		return nil
	}
	name, val, ok := strings.Cut(v, "=")
	if !ok || !awkName.MatchString(name) {
		return fmt.Errorf("invalid -v argument: %s", v)
	}
	a.setVar(name, awkInput(unescapeAwk(val)))
	return nil
}

var awkName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (a *awk) setVar(name string, v *awkVal) { a.vars[name] = v }

func (a *awk) getVar(name string) *awkVal {
	switch name {
	case "NR", "FNR":
		return awkNum(float64(a.nr))
	case "NF":
		return awkNum(float64(len(a.fields) - 1))
	}
	if v, ok := a.vars[name]; ok {
		return v
	}
	return awkStr("")
}

func (a *awk) setRecord(line string) {
	a.fields = append([]string{line}, splitFields(line, a.getVar("FS").str())...)
}

// splitFields splits a record as FS says: " " on runs of blanks, one
// other character on itself, anything longer as a regular expression.
func splitFields(s, fs string) []string {
	switch {
	case s == "":
		return nil
	case fs == " ":
		return strings.Fields(s)
	case len(fs) == 1:
		return strings.Split(s, fs)
	}
	re, err := regexp.Compile(fs)
	if err != nil {
		return strings.Split(s, fs)
	}
	return re.Split(s, -1)
}

func (a *awk) field(i int) *awkVal {
	if i < 0 || i >= len(a.fields) {
		return awkStr("")
	}
	return awkInput(a.fields[i])
}

func (a *awk) setField(i int, v string) {
	if i == 0 {
		a.setRecord(v)
		return
	}
	for len(a.fields) <= i {
		a.fields = append(a.fields, "")
	}
	a.fields[i] = v
	a.fields[0] = strings.Join(a.fields[1:], a.getVar("OFS").str())
}

func (a *awk) run(ctx context.Context, files []string) int {
	exec := func(items []awkItem) awkCtl {
		for _, it := range items {
			if ctx.Err() != nil {
				a.status = 143
				return ctlExit
			}
			if it.pattern != nil && !it.pattern(a).truth() {
				continue
			}
			if ctl := it.action(a); ctl != ctlNone {
				return ctl
			}
		}
		return ctlNone
	}
	if exec(a.prog.begin) == ctlExit {
		exec(a.prog.end)
		return a.status
	}
	exited := false
	if len(a.prog.main) > 0 || len(a.prog.end) > 0 {
		st := inputs(a.c, files, func(_ string, r io.Reader) error {
			if exited {
				return nil
			}
			return lines(ctxReader{ctx, r}, func(line string, _ bool) bool {
				a.nr++
				a.setRecord(line)
				if exec(a.prog.main) == ctlExit {
					exited = true
					return false
				}
				return true
			})
		})
		if st != 0 && a.status == 0 {
			a.status = 2
		}
	}
	if ctx.Err() == nil {
		exec(a.prog.end)
	}
	return a.status
}

// The parsed program.

type awkExpr func(a *awk) *awkVal
type awkStmt func(a *awk) awkCtl

type awkItem struct {
	pattern awkExpr // nil: every record
	action  awkStmt
}

type awkProg struct {
	begin, main, end []awkItem
}

// errAwkSyntax is a program the parser does not take.
var errAwkSyntax = errors.New("awk: syntax")

type awkTok struct {
	kind string // "num", "str", "re", "name", "func", "nl", or the operator itself
	val  string
}

// lexAwk splits a program into tokens. A / starts a regular expression
// where an operand is expected.
func lexAwk(src string) ([]awkTok, error) {
	var toks []awkTok
	operand := func() bool {
		if len(toks) == 0 {
			return true
		}
		switch toks[len(toks)-1].kind {
		case "num", "str", "re", "name", ")", "]", "$":
			return false
		}
		return true
	}
	for i := 0; i < len(src); {
		ch := src[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\r':
			i++
		case ch == '\\' && i+1 < len(src) && src[i+1] == '\n':
			i += 2
		case ch == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case ch == '\n' || ch == ';':
			toks = append(toks, awkTok{kind: "nl"})
			i++
		case ch == '"':
			j := i + 1
			var b strings.Builder
			for ; j < len(src) && src[j] != '"'; j++ {
				if src[j] == '\\' && j+1 < len(src) {
					b.WriteByte(src[j])
					j++
				}
				b.WriteByte(src[j])
			}
			if j >= len(src) {
				return nil, fmt.Errorf("unterminated string")
			}
			toks = append(toks, awkTok{"str", unescapeAwk(b.String())})
			i = j + 1
		case ch == '/' && operand():
			j := i + 1
			for ; j < len(src) && src[j] != '/'; j++ {
				if src[j] == '\\' {
					j++
				}
			}
			if j >= len(src) {
				return nil, fmt.Errorf("unterminated regular expression")
			}
			toks = append(toks, awkTok{"re", strings.ReplaceAll(src[i+1:j], `\/`, "/")})
			i = j + 1
		case ch >= '0' && ch <= '9' || ch == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.') {
				j++
			}
			toks = append(toks, awkTok{"num", src[i:j]})
			i = j
		case ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z':
			j := i
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			kind := "name"
			if j < len(src) && src[j] == '(' {
				kind = "func"
			}
			toks = append(toks, awkTok{kind, src[i:j]})
			i = j
		default:
			op := string(ch)
			if i+1 < len(src) {
				switch two := src[i : i+2]; two {
				case "==", "!=", "<=", ">=", "&&", "||", "!~", "+=", "-=", "*=", "/=":
					op = two
				}
			}
			if strings.IndexByte("{}()[],$=<>!~+-*/%", op[0]) < 0 {
				return nil, fmt.Errorf("unexpected character %q", ch)
			}
			toks = append(toks, awkTok{kind: op})
			i += len(op)
		}
	}
	return toks, nil
}

// unescapeAwk interprets a string literal's escapes.
func unescapeAwk(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\', '"', '/':
			b.WriteByte(s[i])
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

type awkParser struct {
	toks []awkTok
	pos  int
}

func (p *awkParser) peek() awkTok {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return awkTok{kind: "eof"}
}

func (p *awkParser) next() awkTok { t := p.peek(); p.pos++; return t }

func (p *awkParser) expect(kind string) error {
	if t := p.next(); t.kind != kind {
		return fmt.Errorf("%w: expected %s, found %s", errAwkSyntax, kind, describe(t))
	}
	return nil
}

func describe(t awkTok) string {
	if t.val != "" {
		return fmt.Sprintf("%q", t.val)
	}
	return t.kind
}

func (p *awkParser) skipNL() {
	for p.peek().kind == "nl" {
		p.pos++
	}
}

// parseAwk parses a program.
func parseAwk(src string) (*awkProg, error) {
	toks, err := lexAwk(src)
	if err != nil {
		return nil, err
	}
	p := &awkParser{toks: toks}
	prog := &awkProg{}
	for p.skipNL(); p.peek().kind != "eof"; p.skipNL() {
		var it awkItem
		list := &prog.main
		switch t := p.peek(); {
		case t.kind == "name" && t.val == "BEGIN":
			p.next()
			list = &prog.begin
		case t.kind == "name" && t.val == "END":
			p.next()
			list = &prog.end
		case t.kind != "{":
			if it.pattern, err = p.expr(); err != nil {
				return nil, err
			}
		}
		if p.peek().kind == "{" {
			if it.action, err = p.block(); err != nil {
				return nil, err
			}
		} else if list != &prog.main {
			return nil, fmt.Errorf("%w: BEGIN and END need an action", errAwkSyntax)
		} else {
			it.action = func(a *awk) awkCtl { a.print([]*awkVal{a.field(0)}); return ctlNone }
		}
		*list = append(*list, it)
	}
	return prog, nil
}

func (p *awkParser) block() (awkStmt, error) {
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	var stmts []awkStmt
	for p.skipNL(); p.peek().kind != "}"; p.skipNL() {
		if p.peek().kind == "eof" {
			return nil, fmt.Errorf("%w: missing }", errAwkSyntax)
		}
		s, err := p.stmt()
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, s)
	}
	p.next()
	return func(a *awk) awkCtl {
		for _, s := range stmts {
			if ctl := s(a); ctl != ctlNone {
				return ctl
			}
		}
		return ctlNone
	}, nil
}

func (p *awkParser) stmt() (awkStmt, error) {
	t := p.peek()
	switch {
	case t.kind == "{":
		return p.block()
	case t.kind == "name" && t.val == "if":
		p.next()
		if err := p.expect("("); err != nil {
			return nil, err
		}
		cond, err := p.expr()
		if err != nil {
			return nil, err
		}
		if err := p.expect(")"); err != nil {
			return nil, err
		}
		p.skipNL()
		then, err := p.stmt()
		if err != nil {
			return nil, err
		}
		save := p.pos
		p.skipNL()
		var els awkStmt
		if t := p.peek(); t.kind == "name" && t.val == "else" {
			p.next()
			p.skipNL()
			if els, err = p.stmt(); err != nil {
				return nil, err
			}
		} else {
			p.pos = save
		}
		return func(a *awk) awkCtl {
			if cond(a).truth() {
				return then(a)
			}
			if els != nil {
				return els(a)
			}
			return ctlNone
		}, nil
	case t.kind == "name" && (t.val == "print" || t.val == "printf"):
		p.next()
		var list []awkExpr
		for k := p.peek().kind; k != "nl" && k != "}" && k != "eof"; k = p.peek().kind {
			if len(list) > 0 {
				if err := p.expect(","); err != nil {
					return nil, err
				}
			}
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			list = append(list, e)
		}
		if t.val == "printf" {
			if len(list) == 0 {
				return nil, fmt.Errorf("%w: printf needs a format", errAwkSyntax)
			}
			return func(a *awk) awkCtl {
				vals := make([]any, 0, len(list)-1)
				for _, e := range list[1:] {
					v := e(a)
					if v.num || v.strnum {
						vals = append(vals, v.n)
					} else {
						vals = append(vals, v.s)
					}
				}
				fmt.Fprint(a.c.Stdout, awkSprintf(list[0](a).str(), vals))
				return ctlNone
			}, nil
		}
		return func(a *awk) awkCtl {
			vals := []*awkVal{a.field(0)}
			if len(list) > 0 {
				vals = vals[:0]
				for _, e := range list {
					vals = append(vals, e(a))
				}
			}
			a.print(vals)
			return ctlNone
		}, nil
	case t.kind == "name" && t.val == "next":
		p.next()
		return func(*awk) awkCtl { return ctlNext }, nil
	case t.kind == "name" && t.val == "exit":
		p.next()
		var code awkExpr
		if k := p.peek().kind; k != "nl" && k != "}" && k != "eof" {
			var err error
			if code, err = p.expr(); err != nil {
				return nil, err
			}
		}
		return func(a *awk) awkCtl {
			if code != nil {
				a.status = int(code(a).number()) & 0xff
			}
			return ctlExit
		}, nil
	}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	return func(a *awk) awkCtl { e(a); return ctlNone }, nil
}

// awkSprintf formats with awk's printf: %d and %i take integers, the
// rest as Go's fmt does.
func awkSprintf(format string, vals []any) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 >= len(format) {
			b.WriteByte(format[i])
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("-+ #0123456789.", format[j]) >= 0 {
			j++
		}
		if j >= len(format) {
			b.WriteString(format[i:])
			break
		}
		verb := format[j]
		spec := format[i:j]
		var v any = ""
		if n < len(vals) {
			v = vals[n]
		}
		switch verb {
		case '%':
			b.WriteByte('%')
			i = j
			continue
		case 'd', 'i':
			f, _ := v.(float64)
			if s, ok := v.(string); ok {
				f = awkInput(s).number()
			}
			fmt.Fprintf(&b, spec+"d", int64(f))
		case 's':
			if f, ok := v.(float64); ok {
				v = awkNum(f).str()
			}
			fmt.Fprintf(&b, spec+"s", v)
		case 'c':
			if f, ok := v.(float64); ok {
				v = string(rune(int(f)))
			} else if s := v.(string); s != "" {
				v = s[:1]
			}
			fmt.Fprintf(&b, spec+"s", v)
		case 'e', 'f', 'g', 'x', 'o', 'X':
			f, _ := v.(float64)
			if s, ok := v.(string); ok {
				f = awkInput(s).number()
			}
			if verb == 'x' || verb == 'o' || verb == 'X' {
				fmt.Fprintf(&b, spec+string(verb), int64(f))
			} else {
				fmt.Fprintf(&b, spec+string(verb), f)
			}
		default:
			b.WriteString(format[i : j+1])
		}
		n++
		i = j
	}
	return b.String()
}

func (a *awk) print(vals []*awkVal) {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = v.str()
	}
	io.WriteString(a.c.Stdout, strings.Join(parts, a.getVar("OFS").str())+a.getVar("ORS").str())
}

// Expressions, lowest precedence first.

func (p *awkParser) expr() (awkExpr, error) {
	start := p.pos
	lhs, set, err := p.lvalue()
	if err == nil {
		switch op := p.peek().kind; op {
		case "=", "+=", "-=", "*=", "/=":
			p.next()
			rhs, err := p.expr()
			if err != nil {
				return nil, err
			}
			return func(a *awk) *awkVal {
				v := rhs(a)
				switch op {
				case "+=":
					v = awkNum(lhs(a).number() + v.number())
				case "-=":
					v = awkNum(lhs(a).number() - v.number())
				case "*=":
					v = awkNum(lhs(a).number() * v.number())
				case "/=":
					if d := v.number(); d != 0 {
						v = awkNum(lhs(a).number() / d)
					} else {
						v = awkNum(0)
					}
				}
				set(a, v)
				return v
			}, nil
		}
	}
	p.pos = start
	return p.or()
}

// lvalue parses a variable, an array element or a field.
func (p *awkParser) lvalue() (awkExpr, func(*awk, *awkVal), error) {
	t := p.peek()
	switch {
	case t.kind == "$":
		p.next()
		idx, err := p.primary()
		if err != nil {
			return nil, nil, err
		}
		return func(a *awk) *awkVal { return a.field(int(idx(a).number())) },
			func(a *awk, v *awkVal) { a.setField(int(idx(a).number()), v.str()) }, nil
	case t.kind == "name" && !awkKeyword(t.val):
		p.next()
		if p.peek().kind == "[" {
			p.next()
			idx, err := p.expr()
			if err != nil {
				return nil, nil, err
			}
			if err := p.expect("]"); err != nil {
				return nil, nil, err
			}
			return func(a *awk) *awkVal { return a.elem(t.val, idx(a).str()) },
				func(a *awk, v *awkVal) { a.array(t.val)[idx(a).str()] = v }, nil
		}
		return func(a *awk) *awkVal { return a.getVar(t.val) },
			func(a *awk, v *awkVal) { a.setVar(t.val, v) }, nil
	}
	return nil, nil, errAwkSyntax
}

func awkKeyword(s string) bool {
	switch s {
	case "BEGIN", "END", "if", "else", "print", "printf", "next", "exit", "while", "for", "do", "function", "return", "getline", "delete", "in":
		return true
	}
	return false
}

func (a *awk) array(name string) map[string]*awkVal {
	m, ok := a.arrays[name]
	if !ok {
		m = map[string]*awkVal{}
		a.arrays[name] = m
	}
	return m
}

func (a *awk) elem(name, idx string) *awkVal {
	m := a.array(name)
	v, ok := m[idx]
	if !ok {
		v = awkStr("")
		m[idx] = v
	}
	return v
}

func (p *awkParser) binary(next func() (awkExpr, error), ops map[string]func(x, y *awkVal) *awkVal) (awkExpr, error) {
	lhs, err := next()
	if err != nil {
		return nil, err
	}
	for {
		f, ok := ops[p.peek().kind]
		if !ok {
			return lhs, nil
		}
		p.next()
		rhs, err := next()
		if err != nil {
			return nil, err
		}
		l := lhs
		lhs = func(a *awk) *awkVal { return f(l(a), rhs(a)) }
	}
}

func awkBool(b bool) *awkVal {
	if b {
		return awkNum(1)
	}
	return awkNum(0)
}

func (p *awkParser) or() (awkExpr, error) {
	lhs, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.peek().kind == "||" {
		p.next()
		p.skipNL()
		rhs, err := p.and()
		if err != nil {
			return nil, err
		}
		l := lhs
		lhs = func(a *awk) *awkVal { return awkBool(l(a).truth() || rhs(a).truth()) }
	}
	return lhs, nil
}

func (p *awkParser) and() (awkExpr, error) {
	lhs, err := p.match()
	if err != nil {
		return nil, err
	}
	for p.peek().kind == "&&" {
		p.next()
		p.skipNL()
		rhs, err := p.match()
		if err != nil {
			return nil, err
		}
		l := lhs
		lhs = func(a *awk) *awkVal { return awkBool(l(a).truth() && rhs(a).truth()) }
	}
	return lhs, nil
}

func (p *awkParser) match() (awkExpr, error) {
	lhs, err := p.compare()
	if err != nil {
		return nil, err
	}
	for k := p.peek().kind; k == "~" || k == "!~"; k = p.peek().kind {
		p.next()
		var rhs awkExpr
		if t := p.peek(); t.kind == "re" {
			p.next()
			rhs = func(*awk) *awkVal { return awkStr(t.val) }
		} else if rhs, err = p.compare(); err != nil {
			return nil, err
		}
		l, neg := lhs, k == "!~"
		lhs = func(a *awk) *awkVal {
			re, err := regexp.Compile(rhs(a).str())
			return awkBool(err == nil && re.MatchString(l(a).str()) != neg)
		}
	}
	return lhs, nil
}

func (p *awkParser) compare() (awkExpr, error) {
	lhs, err := p.concat()
	if err != nil {
		return nil, err
	}
	op := p.peek().kind
	switch op {
	case "==", "!=", "<", "<=", ">", ">=":
	default:
		return lhs, nil
	}
	p.next()
	rhs, err := p.concat()
	if err != nil {
		return nil, err
	}
	return func(a *awk) *awkVal {
		x, y := lhs(a), rhs(a)
		var c int
		if (x.num || x.strnum) && (y.num || y.strnum) {
			switch {
			case x.n < y.n:
				c = -1
			case x.n > y.n:
				c = 1
			}
		} else {
			c = strings.Compare(x.str(), y.str())
		}
		switch op {
		case "==":
			return awkBool(c == 0)
		case "!=":
			return awkBool(c != 0)
		case "<":
			return awkBool(c < 0)
		case "<=":
			return awkBool(c <= 0)
		case ">":
			return awkBool(c > 0)
		}
		return awkBool(c >= 0)
	}, nil
}

// startsOperand reports whether a token can begin a primary: where
// concatenation goes on.
func startsOperand(t awkTok) bool {
	switch t.kind {
	case "num", "str", "re", "func", "$", "(", "!", "-":
		return t.kind != "-" // a - here is subtraction
	case "name":
		return !awkKeyword(t.val)
	}
	return false
}

func (p *awkParser) concat() (awkExpr, error) {
	lhs, err := p.additive()
	if err != nil {
		return nil, err
	}
	for startsOperand(p.peek()) && p.peek().kind != "!" {
		rhs, err := p.additive()
		if err != nil {
			return nil, err
		}
		l := lhs
		lhs = func(a *awk) *awkVal { return awkStr(l(a).str() + rhs(a).str()) }
	}
	return lhs, nil
}

func (p *awkParser) additive() (awkExpr, error) {
	return p.binary(p.multiplicative, map[string]func(x, y *awkVal) *awkVal{
		"+": func(x, y *awkVal) *awkVal { return awkNum(x.number() + y.number()) },
		"-": func(x, y *awkVal) *awkVal { return awkNum(x.number() - y.number()) },
	})
}

func (p *awkParser) multiplicative() (awkExpr, error) {
	return p.binary(p.unary, map[string]func(x, y *awkVal) *awkVal{
		"*": func(x, y *awkVal) *awkVal { return awkNum(x.number() * y.number()) },
		"/": func(x, y *awkVal) *awkVal {
			if y.number() == 0 {
				return awkNum(0)
			}
			return awkNum(x.number() / y.number())
		},
		"%": func(x, y *awkVal) *awkVal {
			if y.number() == 0 {
				return awkNum(0)
			}
			return awkNum(math.Mod(x.number(), y.number()))
		},
	})
}

func (p *awkParser) unary() (awkExpr, error) {
	switch p.peek().kind {
	case "!":
		p.next()
		e, err := p.unary()
		if err != nil {
			return nil, err
		}
		return func(a *awk) *awkVal { return awkBool(!e(a).truth()) }, nil
	case "-", "+":
		neg := p.next().kind == "-"
		e, err := p.unary()
		if err != nil {
			return nil, err
		}
		return func(a *awk) *awkVal {
			if neg {
				return awkNum(-e(a).number())
			}
			return awkNum(e(a).number())
		}, nil
	}
	return p.primary()
}

func (p *awkParser) primary() (awkExpr, error) {
	t := p.peek()
	switch t.kind {
	case "num":
		p.next()
		f, err := strconv.ParseFloat(t.val, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: bad number %s", errAwkSyntax, t.val)
		}
		return func(*awk) *awkVal { return awkNum(f) }, nil
	case "str":
		p.next()
		return func(*awk) *awkVal { return awkStr(t.val) }, nil
	case "re":
		p.next()
		re, err := regexp.Compile(t.val)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errAwkSyntax, err)
		}
		return func(a *awk) *awkVal { return awkBool(re.MatchString(a.field(0).str())) }, nil
	case "(":
		p.next()
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		return e, p.expect(")")
	case "$", "name":
		if t.kind == "name" && awkKeyword(t.val) {
			break
		}
		get, _, err := p.lvalue()
		return get, err
	case "func":
		return p.call()
	}
	return nil, fmt.Errorf("%w: unexpected %s", errAwkSyntax, describe(t))
}

func (p *awkParser) call() (awkExpr, error) {
	name := p.next().val
	p.next()          // (
	var args []awkTok // the array name of split
	var exprs []awkExpr
	for p.peek().kind != ")" {
		if len(exprs) > 0 {
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		if name == "split" && len(exprs) == 1 {
			t := p.next()
			if t.kind != "name" {
				return nil, fmt.Errorf("%w: split needs an array name", errAwkSyntax)
			}
			args = append(args, t)
			exprs = append(exprs, nil)
			continue
		}
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		exprs = append(exprs, e)
		if p.peek().kind == "eof" {
			return nil, fmt.Errorf("%w: missing )", errAwkSyntax)
		}
	}
	p.next()
	arg := func(a *awk, i int) *awkVal {
		if i < len(exprs) && exprs[i] != nil {
			return exprs[i](a)
		}
		return awkStr("")
	}
	want := map[string][2]int{"length": {0, 1}, "split": {2, 3}, "substr": {2, 3}, "index": {2, 2}, "tolower": {1, 1}, "toupper": {1, 1}}
	n, ok := want[name]
	if !ok {
		return nil, fmt.Errorf("%w: function %s is not supported by this awk", errAwkSyntax, name)
	}
	if len(exprs) < n[0] || len(exprs) > n[1] {
		return nil, fmt.Errorf("%w: %s takes %d to %d arguments", errAwkSyntax, name, n[0], n[1])
	}
	switch name {
	case "length":
		return func(a *awk) *awkVal {
			if len(exprs) == 0 {
				return awkNum(float64(len(a.field(0).str())))
			}
			return awkNum(float64(len(arg(a, 0).str())))
		}, nil
	case "split":
		arr := args[0].val
		return func(a *awk) *awkVal {
			fs := a.getVar("FS").str()
			if len(exprs) == 3 {
				fs = arg(a, 2).str()
			}
			parts := splitFields(arg(a, 0).str(), fs)
			m := map[string]*awkVal{}
			for i, s := range parts {
				m[strconv.Itoa(i+1)] = awkInput(s)
			}
			a.arrays[arr] = m
			return awkNum(float64(len(parts)))
		}, nil
	case "substr":
		return func(a *awk) *awkVal {
			s := arg(a, 0).str()
			start := int(math.Round(arg(a, 1).number()))
			end := len(s) + 1
			if len(exprs) == 3 {
				end = start + int(math.Round(arg(a, 2).number()))
			}
			start = max(start, 1)
			end = min(end, len(s)+1)
			if end <= start {
				return awkStr("")
			}
			return awkStr(s[start-1 : end-1])
		}, nil
	case "index":
		return func(a *awk) *awkVal {
			return awkNum(float64(strings.Index(arg(a, 0).str(), arg(a, 1).str()) + 1))
		}, nil
	case "tolower":
		return func(a *awk) *awkVal { return awkStr(strings.ToLower(arg(a, 0).str())) }, nil
	}
	return func(a *awk) *awkVal { return awkStr(strings.ToUpper(arg(a, 0).str())) }, nil
}
