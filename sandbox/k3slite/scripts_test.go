package k3slite_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openctl/openctl/sandbox/k3slite"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// providerScript is the K3s provider's script constant name as its source
// has it now (string constants of k3s and agent, + and literals only).
func providerScript(t *testing.T, name string) string {
	t.Helper()
	exprs := map[string]ast.Expr{}
	fset := token.NewFileSet()
	for pkg, dir := range map[string]string{"k3s": "../../k3s", "agent": "../../agent"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			f, err := parser.ParseFile(fset, file, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.CONST {
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
	}
	var eval func(pkg string, e ast.Expr) string
	eval = func(pkg string, e ast.Expr) string {
		switch e := e.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(e.Value)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return s
		case *ast.BinaryExpr:
			return eval(pkg, e.X) + eval(pkg, e.Y)
		case *ast.ParenExpr:
			return eval(pkg, e.X)
		case *ast.Ident:
			return eval(pkg, exprs[pkg+"."+e.Name])
		case *ast.SelectorExpr:
			id := e.X.(*ast.Ident)
			return eval(id.Name, exprs[id.Name+"."+e.Sel.Name])
		}
		t.Fatalf("%s: cannot evaluate %T", name, e)
		return ""
	}
	e, ok := exprs["k3s."+name]
	if !ok {
		t.Fatalf("k3s.%s not in the provider's source", name)
	}
	return eval("k3s", e)
}

// fakeSystemctl answers is-active with "active" and accepts the rest.
func fakeSystemctl(_ context.Context, c *vmhost.Call) int {
	if len(c.Args) > 1 && c.Args[1] == "is-active" {
		for _, a := range c.Args[2:] {
			if a == "--quiet" {
				return 0
			}
		}
		c.Stdout.Write([]byte("active\n"))
	}
	return 0
}

// The provider's probe and node status scripts read what the light k3s
// wrote: version, readiness through k3s kubectl, token files and
// kubeconfig; its uninstall script removes it and a reinstalled server
// joins again once its Node was deleted.
func TestProviderScripts(t *testing.T) {
	n := newNetwork(t)
	ctx := context.Background()
	mk := func(name, addr string) *vmhost.Host {
		h, err := vmhost.New(t.TempDir(), vmhost.Options{Hostname: name, Init: vmhost.InitSystemd,
			Addresses: []vmhost.Address{{Interface: "eth0", Prefix: mustPrefix(addr + "/16")}},
			Programs:  map[string]vmhost.Program{k3slite.ProgramPath: n.Program(), "/usr/bin/systemctl": fakeSystemctl}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		install(t, h, "v1.37.2+k3s1")
		run(t, h, "touch /etc/systemd/system/k3s.service /etc/systemd/system/k3s-agent.service", nil)
		return h
	}
	s0, s1 := mk("p0", "127.80.208.10"), mk("p1", "127.80.208.11")
	p0 := start(t, n, s0, []string{"K3S_TOKEN=pw"}, "server", "--cluster-init", "--node-ip=127.80.208.10")
	p0.waitReady(t)
	token := strings.TrimSpace(run(t, s0, "cat /var/lib/rancher/k3s/server/token", nil))
	join := func() *proc {
		p := start(t, n, s1, []string{"K3S_TOKEN=" + token}, "server", "--server=https://127.80.208.10:6443", "--node-ip=127.80.208.11")
		p.waitReady(t)
		return p
	}
	p1 := join()

	probe := run(t, s0, "set -- k3s 127.80.208.10\n"+providerScript(t, "probeScript"), nil)
	for _, line := range []string{"init=systemd", "version=v1.37.2+k3s1", "active=1", "iface=eth0", "uname=x86_64"} {
		if !strings.Contains(probe, line+"\n") {
			t.Errorf("probe lacks %q:\n%s", line, probe)
		}
	}
	status := run(t, s1, "set -- k3s p1 whole\n"+providerScript(t, "nodeStatusScript"), nil)
	for _, line := range []string{"installed=1", "state=active", "version=v1.37.2+k3s1", "ready=True", "--- /var/lib/rancher/k3s/server/token\n" + token + "\n", "server: https://127.0.0.1:6443"} {
		if !strings.Contains(status, line) {
			t.Errorf("node status lacks %q:\n%s", line, status)
		}
	}

	// Removal as the provider does it: delete the Node, uninstall.
	cs := clientFor(t, s0, "127.80.208.10")
	if err := cs.CoreV1().Nodes().Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if st := p1.wait(t); st != 1 {
		t.Fatalf("removed server: %d\n%s", st, p0.log.String())
	}
	run(t, s1, "set -- k3s\n"+providerScript(t, "uninstallScript"), nil)
	if _, _, st := sh(s1, "test -e /usr/local/bin/k3s || test -e /var/lib/rancher/k3s || test -e /etc/rancher/k3s", nil); st == 0 {
		t.Fatal("uninstall left k3s behind")
	}
	install(t, s1, "v1.37.2+k3s1")
	join()
	eventually(t, "p1 back", func() error {
		_, err := cs.CoreV1().Nodes().Get(ctx, "p1", metav1.GetOptions{})
		return err
	})
}
