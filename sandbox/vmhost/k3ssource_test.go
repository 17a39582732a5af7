package vmhost_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// stringConsts evaluates the string constants of the packages in dirs
// (a constant made of literals, "+" and other such constants, qualified
// ones found by the package's last path element: agent.ServiceName).
func stringConsts(t *testing.T, dirs map[string]string) map[string]string {
	t.Helper()
	exprs := map[string]ast.Expr{} // "pkg.Name"
	fset := token.NewFileSet()
	for pkg, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		for _, file := range files {
			f, err := parser.ParseFile(fset, file, nil, 0)
			require.NoError(t, err)
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, s := range gd.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							exprs[pkg+"."+n.Name] = vs.Values[i]
						}
					}
				}
			}
		}
	}
	var eval func(pkg string, e ast.Expr) (string, bool)
	eval = func(pkg string, e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind != token.STRING {
				return "", false
			}
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		case *ast.BinaryExpr:
			x, ok1 := eval(pkg, e.X)
			y, ok2 := eval(pkg, e.Y)
			return x + y, ok1 && ok2 && e.Op == token.ADD
		case *ast.ParenExpr:
			return eval(pkg, e.X)
		case *ast.Ident:
			if v, ok := exprs[pkg+"."+e.Name]; ok {
				return eval(pkg, v)
			}
		case *ast.SelectorExpr:
			if id, ok := e.X.(*ast.Ident); ok {
				if v, ok := exprs[id.Name+"."+e.Sel.Name]; ok {
					return eval(id.Name, v)
				}
			}
		}
		return "", false
	}
	out := map[string]string{}
	for name, e := range exprs {
		pkg := name[:len(name)-len(filepath.Ext(name))]
		if v, ok := eval(pkg, e); ok {
			out[name] = v
		}
	}
	return out
}

// k3sScript is the K3s provider's script constant name (unexported
// there) as its source has it now, so that what the tests run here is
// what the provider sends.
func k3sScript(t *testing.T, name string) string {
	t.Helper()
	consts := stringConsts(t, map[string]string{
		"k3s": "../../k3s", "agent": "../../agent", "pki": "../../agent/pki",
	})
	src, ok := consts["k3s."+name]
	require.True(t, ok, "k3s.%s not found in the k3s package's source", name)
	return src
}

// funcStrings returns the string literals in the body of the function
// name of the package in dir, in source order: the templates a function
// of the provider renders (its unit files, its start script).
func funcStrings(t *testing.T, dir, name string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != name || fd.Recv != nil {
				continue
			}
			var out []string
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if bl, ok := n.(*ast.BasicLit); ok && bl.Kind == token.STRING {
					s, err := strconv.Unquote(bl.Value)
					require.NoError(t, err)
					out = append(out, s)
				}
				return true
			})
			return out
		}
	}
	t.Fatalf("func %s not found in %s", name, dir)
	return nil
}

// k3sTemplate is the string literal of the provider's function fn that
// starts with prefix.
func k3sTemplate(t *testing.T, fn, prefix string) string {
	t.Helper()
	for _, s := range funcStrings(t, "../../k3s", fn) {
		if strings.HasPrefix(s, prefix) {
			return s
		}
	}
	t.Fatalf("k3s.%s has no string starting with %q", fn, prefix)
	return ""
}
