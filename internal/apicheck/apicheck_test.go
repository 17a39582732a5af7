package apicheck_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/internal/apicheck"
)

const src = `package p

import (
	"context"
	"io"
)

// Doc comments are not API.
const (
	Untyped = "v"
	A Mode = iota
	B
	hidden = 1
)

type Mode int

var Default, other = New("x"), 2

type Options struct {
	Timeout  int
	Out, err io.Writer
	io.Reader
	inner
	Fn func(ctx context.Context, name string) (n int, err error)
	Nested struct{ X, y int }
}

type inner struct{ Z int }

type Doer interface {
	Do(ctx context.Context) error
	io.Closer
	private()
}

type Alias = Options

type Set[K comparable, V any] struct{ M map[K]V }

func (s *Set[K, V]) Put(k K, v V) { s.M[k] = v }

func New(name string, opts ...Options) *Options { return nil }

func (o Options) Close() error { return nil }
func (o *Options) private()    {}
func (i inner) Exported()      {}
func helper()                  {}
`

const lin = `//go:build linux

package p

func OnLinux() {}
`

const win = `//go:build windows

package p

func OnWindows() {}
`

func TestPackage(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"p.go": src, "linux.go": lin, "windows.go": win, "p_test.go": "package p\n\nfunc TestOnly() {}\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600))
	}
	lines, err := apicheck.Package(dir, "example.com/p")
	require.NoError(t, err)
	assert.Equal(t, []string{
		"pkg example.com/p, const A Mode",
		"pkg example.com/p, const B Mode",
		`pkg example.com/p, const Untyped = "v"`,
		"pkg example.com/p, func New(string, ...Options) *Options",
		"pkg example.com/p, func OnLinux()",
		"pkg example.com/p, method (*Set[K, V]) Put(K, V)",
		"pkg example.com/p, method (Options) Close() error",
		"pkg example.com/p, type Alias = Options",
		"pkg example.com/p, type Doer interface",
		"pkg example.com/p, type Doer interface, Do(context.Context) error",
		"pkg example.com/p, type Doer interface, embedded io.Closer",
		"pkg example.com/p, type Mode int",
		"pkg example.com/p, type Options struct",
		"pkg example.com/p, type Options struct, Fn func(context.Context, string) (int, error)",
		"pkg example.com/p, type Options struct, Nested struct { X int }",
		"pkg example.com/p, type Options struct, Out io.Writer",
		"pkg example.com/p, type Options struct, Timeout int",
		"pkg example.com/p, type Options struct, embedded io.Reader",
		"pkg example.com/p, type Set[K comparable, V any] struct",
		"pkg example.com/p, type Set[K comparable, V any] struct, M map[K]V",
		"pkg example.com/p, var Default",
	}, lines)
}
