// Package apicheck lists the exported API of a Go package from its
// source, one declaration a line, in the spirit of the Go project's
// api/*.txt files: the root package's TestAPI compares every public
// package's list with its golden file under api/, so that an exported
// change cannot land without the golden file (and CHANGELOG.md) saying
// so.
//
// The list is syntactic: it reads the package's non-test files with
// go/parser, without type checking, and prints each exported constant,
// variable, function, type, struct field, interface method and method
// of an exported type with its types, parameter names left out. A
// change a reader of godoc would see as an API change changes the list;
// a doc comment or a function body does not.
package apicheck

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Package returns the exported API of the package in dir, under the
// import path path: sorted lines such as
//
//	pkg example.com/p, func New(string, ...Option) (*Client, error)
//	pkg example.com/p, method (*Client) Close() error
//	pkg example.com/p, type Options struct, Timeout time.Duration
func Package(dir, path string) ([]string, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return nil, err
		}
		if ignored(f) {
			continue
		}
		files = append(files, f)
	}
	w := &lister{fset: fset, prefix: "pkg " + path + ", "}
	for _, f := range files {
		for _, d := range f.Decls {
			w.decl(d)
		}
	}
	sort.Strings(w.lines)
	return w.lines, nil
}

// ignored says the file is not built on linux/amd64, the platform the
// list describes.
func ignored(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() > f.Package {
			break
		}
		for _, c := range g.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			if x, err := constraint.Parse(c.Text); err == nil {
				return !x.Eval(func(tag string) bool { return tag == "linux" || tag == "unix" || tag == "amd64" || tag == "gc" })
			}
		}
	}
	return false
}

type lister struct {
	fset   *token.FileSet
	prefix string
	lines  []string
}

func (w *lister) add(format string, args ...any) {
	w.lines = append(w.lines, w.prefix+fmt.Sprintf(format, args...))
}

// expr prints a type expression on one line.
func (w *lister) expr(e ast.Expr) string {
	var b bytes.Buffer
	_ = printer.Fprint(&b, w.fset, stripNames(e))
	return strings.Join(strings.Fields(b.String()), " ")
}

func (w *lister) decl(d ast.Decl) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		w.funcDecl(d)
	case *ast.GenDecl:
		var lastType ast.Expr // a const group's specs without a type take the one before
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				w.typeSpec(s)
			case *ast.ValueSpec:
				if s.Type != nil || len(s.Values) > 0 {
					lastType = s.Type
				}
				kind := "var"
				if d.Tok == token.CONST {
					kind = "const"
				}
				for _, n := range s.Names {
					if !n.IsExported() {
						continue
					}
					switch {
					case s.Type != nil:
						w.add("%s %s %s", kind, n.Name, w.expr(s.Type))
					case kind == "const" && lastType != nil:
						w.add("const %s %s", n.Name, w.expr(lastType))
					case kind == "const" && len(s.Values) == len(s.Names):
						w.add("const %s = %s", n.Name, w.expr(s.Values[slices.Index(s.Names, n)]))
					default:
						w.add("%s %s", kind, n.Name)
					}
				}
			}
		}
	}
}

func (w *lister) funcDecl(d *ast.FuncDecl) {
	if !d.Name.IsExported() {
		return
	}
	sig := strings.TrimPrefix(w.expr(d.Type), "func")
	if d.Recv == nil {
		w.add("func %s%s", d.Name.Name, sig)
		return
	}
	recv := d.Recv.List[0].Type
	base := recv
	if s, ok := base.(*ast.StarExpr); ok {
		base = s.X
	}
	switch b := base.(type) {
	case *ast.IndexExpr:
		base = b.X
	case *ast.IndexListExpr:
		base = b.X
	}
	if id, ok := base.(*ast.Ident); !ok || !id.IsExported() {
		return
	}
	w.add("method (%s) %s%s", w.expr(recv), d.Name.Name, sig)
}

func (w *lister) typeSpec(s *ast.TypeSpec) {
	if !s.Name.IsExported() {
		return
	}
	name := s.Name.Name
	if s.TypeParams != nil {
		var params []string
		for _, f := range s.TypeParams.List {
			var names []string
			for _, n := range f.Names {
				names = append(names, n.Name)
			}
			params = append(params, strings.Join(names, ", ")+" "+w.expr(f.Type))
		}
		name += "[" + strings.Join(params, ", ") + "]"
	}
	if s.Assign.IsValid() {
		w.add("type %s = %s", name, w.expr(s.Type))
		return
	}
	switch t := s.Type.(type) {
	case *ast.StructType:
		w.add("type %s struct", name)
		for _, f := range t.Fields.List {
			if len(f.Names) == 0 {
				if embeddedExported(f.Type) {
					w.add("type %s struct, embedded %s", name, w.expr(f.Type))
				}
				continue
			}
			for _, n := range f.Names {
				if n.IsExported() {
					w.add("type %s struct, %s %s", name, n.Name, w.expr(f.Type))
				}
			}
		}
	case *ast.InterfaceType:
		w.add("type %s interface", name)
		for _, m := range t.Methods.List {
			if len(m.Names) == 0 {
				w.add("type %s interface, embedded %s", name, w.expr(m.Type))
				continue
			}
			for _, n := range m.Names {
				if n.IsExported() {
					w.add("type %s interface, %s%s", name, n.Name, strings.TrimPrefix(w.expr(m.Type), "func"))
				}
			}
		}
	default:
		w.add("type %s %s", name, w.expr(s.Type))
	}
}

// embeddedExported says an embedded field's type is exported (its
// fields and methods are then the struct's).
func embeddedExported(e ast.Expr) bool {
	switch t := e.(type) {
	case *ast.StarExpr:
		return embeddedExported(t.X)
	case *ast.SelectorExpr:
		return t.Sel.IsExported()
	case *ast.Ident:
		return t.IsExported()
	case *ast.IndexExpr:
		return embeddedExported(t.X)
	case *ast.IndexListExpr:
		return embeddedExported(t.X)
	}
	return false
}

// stripNames returns e with the parameter and result names of every
// function type in it removed, and unexported struct fields and
// interface methods left out, so that only what callers depend on is
// printed. It copies what it changes.
func stripNames(e ast.Expr) ast.Expr {
	switch t := e.(type) {
	case *ast.FuncType:
		c := *t
		c.Params = stripFields(t.Params, false)
		c.Results = stripFields(t.Results, false)
		return &c
	case *ast.StarExpr:
		return &ast.StarExpr{X: stripNames(t.X)}
	case *ast.ArrayType:
		return &ast.ArrayType{Len: t.Len, Elt: stripNames(t.Elt)}
	case *ast.MapType:
		return &ast.MapType{Key: stripNames(t.Key), Value: stripNames(t.Value)}
	case *ast.ChanType:
		return &ast.ChanType{Dir: t.Dir, Value: stripNames(t.Value)}
	case *ast.Ellipsis:
		return &ast.Ellipsis{Elt: stripNames(t.Elt)}
	case *ast.StructType:
		return &ast.StructType{Fields: stripFields(t.Fields, true)}
	case *ast.InterfaceType:
		return &ast.InterfaceType{Methods: stripFields(t.Methods, true)}
	}
	return e
}

// stripFields copies a field list: for parameters and results without
// their names (a name given to n types becomes n entries); for struct
// fields and interface methods (keep), only the exported ones, named.
func stripFields(l *ast.FieldList, keep bool) *ast.FieldList {
	if l == nil {
		return nil
	}
	out := &ast.FieldList{}
	for _, f := range l.List {
		t := stripNames(f.Type)
		if keep {
			var names []*ast.Ident
			for _, n := range f.Names {
				if n.IsExported() {
					names = append(names, ast.NewIdent(n.Name))
				}
			}
			if len(f.Names) > 0 && len(names) == 0 {
				continue
			}
			out.List = append(out.List, &ast.Field{Names: names, Type: t})
			continue
		}
		n := max(len(f.Names), 1)
		for range n {
			out.List = append(out.List, &ast.Field{Type: t})
		}
	}
	return out
}
