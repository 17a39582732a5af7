package openctl_test

import (
	"bufio"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readmePackages are the packages the README's Go snippets name, by the
// name they use.
var readmePackages = map[string]string{
	"openctl":      "github.com/openctl/openctl",
	"cli":          "github.com/openctl/openctl/cli",
	"manifest":     "github.com/openctl/openctl/manifest",
	"registry":     "github.com/openctl/openctl/registry",
	"providertest": "github.com/openctl/openctl/registry/providertest",
	"proxmox":      "github.com/openctl/openctl/proxmox",
	"state":        "github.com/openctl/openctl/state",
	"postgres":     "github.com/openctl/openctl/state/postgres",
	"k3stest":      "github.com/openctl/openctl/k3s/k3stest",
	"context":      "context",
	"testing":      "testing",
}

// readmeFree are the names the snippets use without declaring them, as
// parameters of the function each snippet becomes.
const readmeFree = `ctx context.Context, t *testing.T, myProvider registry.Provider, p registry.Provider,
	fixture func(string) *manifest.Resource, ids []manifest.ID, fileStore, pgStore state.RawStore`

// snippet is one ```go block of the README.
type snippet struct {
	line int
	code string
}

func readmeSnippets(t *testing.T) []snippet {
	f, err := os.Open("README.md")
	require.NoError(t, err)
	defer f.Close()
	var out []snippet
	var cur *snippet
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &snippet{line: n + 1}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.code += line + "\n"
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// importBlock is a snippet's own import list, taken out of its body.
var importBlock = regexp.MustCompile(`(?s)^import \((.*?)\)\n`)

// snippetFile turns a snippet into a Go file: a top-level declaration
// stays one; statements become the body of a function whose parameters
// are readmeFree. Every package named in readmePackages that it uses is
// imported.
func snippetFile(s snippet) (src string, bodyLine int) {
	code := s.code
	if m := importBlock.FindString(code); m != "" {
		code = code[len(m):]
		defer func() { bodyLine -= strings.Count(m, "\n") }()
	}
	var b strings.Builder
	b.WriteString("package readme\n\nimport (\n")
	used := map[string]bool{"context": true, "testing": true, "registry": true, "manifest": true, "state": true}
	for name := range readmePackages {
		if regexp.MustCompile(`\b` + name + `\.`).MatchString(code) {
			used[name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(used)) {
		fmt.Fprintf(&b, "\t%s %q\n", name, readmePackages[name])
	}
	b.WriteString(")\n\n")
	if strings.HasPrefix(code, "func ") {
		bodyLine = strings.Count(b.String(), "\n") + 1
		b.WriteString(code)
		return b.String(), bodyLine
	}
	fmt.Fprintf(&b, "func _(%s) {\n", readmeFree)
	bodyLine = strings.Count(b.String(), "\n") + 1
	b.WriteString(code)
	b.WriteString("}\n")
	return b.String(), bodyLine
}

// TestReadmeSnippetsCompile type-checks every Go snippet of the README
// against the module's packages: a snippet that calls an API that is
// gone or changed fails, naming its README line. Variables a snippet
// declares and does not use are allowed (a snippet shows calls, not a
// program).
func TestReadmeSnippetsCompile(t *testing.T) {
	snippets := readmeSnippets(t)
	require.NotEmpty(t, snippets)
	// The packages' export data, built by the go command.
	args := []string{"list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}"}
	for _, path := range readmePackages {
		args = append(args, path)
	}
	out, err := exec.Command("go", args...).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("go list: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	exports := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, file, ok := strings.Cut(line, " "); ok && file != "" {
			exports[path] = file
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	for _, s := range snippets {
		src, bodyLine := snippetFile(s)
		f, err := parser.ParseFile(fset, fmt.Sprintf("README.md:%d", s.line), src, 0)
		if err != nil {
			t.Errorf("README.md:%d: the snippet does not parse: %v\n%s", s.line, err, src)
			continue
		}
		var hard []string
		conf := types.Config{Importer: imp, Error: func(err error) {
			var te types.Error
			if errors.As(err, &te) && te.Soft {
				return // declared and not used, imported and not used
			}
			if errors.As(err, &te) {
				pos := fset.Position(te.Pos)
				hard = append(hard, fmt.Sprintf("README.md:%d: %s", s.line+pos.Line-bodyLine, te.Msg))
				return
			}
			hard = append(hard, err.Error())
		}}
		_, _ = conf.Check("readme", fset, []*ast.File{f}, nil)
		if len(hard) > 0 {
			t.Errorf("a README snippet does not compile:\n%s", strings.Join(hard, "\n"))
		}
	}
}
