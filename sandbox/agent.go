package sandbox

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/openctl/openctl/agent/node"
	"github.com/openctl/openctl/remote"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// AgentProgramPath is where the world's hosts have the node agent's
// program: the agent binaries the K3s provider installs are small files
// whose interpreter line names it.
const AgentProgramPath = "/usr/lib/openctl-sandbox/openctl-agent"

// agentVersion is what the world's agents report: the version of the
// module this program was built from, as cmd/openctl-agent reports its
// own.
func agentVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// writeAgentBinaries writes the agent "binaries" of every architecture
// the K3s provider may install (AgentBinaryDir).
func (w *World) writeAgentBinaries() error {
	dir := filepath.Join(w.dir, "agent")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	content := "#!" + AgentProgramPath + "\n# openctl-agent " + agentVersion() + " for openctl's sandbox\n"
	for _, arch := range []string{"amd64", "arm64", "arm"} {
		if err := os.WriteFile(filepath.Join(dir, "openctl-agent-linux-"+arch), []byte(content), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// agentProgram is the node agent of a host at addr: node.Command, the
// program cmd/openctl-agent runs, reading the host's files, listening on
// the host's address (a wildcard --listen binds addr, as a host's own
// interfaces are all it has), driving the host through its systemctl and
// journalctl.
func (w *World) agentProgram(addr netip.Addr) vmhost.Program {
	return func(ctx context.Context, c *vmhost.Call) int {
		// Run through a binary's interpreter line: the program, the
		// binary, its arguments; run by name (the program is registered
		// under the binary's base name too): the binary, its arguments.
		args := c.Args[1:]
		if path.Clean(c.Args[0]) == AgentProgramPath && len(args) > 0 {
			args = args[1:]
		}
		cmd := node.Command{
			Version: agentVersion(),
			Stdout:  c.Stdout,
			Stderr:  c.Stderr,
			NewSystem: func() (node.System, error) {
				return node.NewHostSystem(node.HostOptions{Root: c.Host.Dir(), Runner: hostRunner{c.Host}})
			},
			ReadFile: c.ReadFile,
			Listen: func(network, address string) (net.Listener, error) {
				host, port, err := net.SplitHostPort(address)
				if err != nil {
					return nil, err
				}
				if a, err := netip.ParseAddr(host); host == "" || (err == nil && a.IsUnspecified()) {
					address = net.JoinHostPort(addr.String(), port)
				}
				return net.Listen(network, address)
			},
			Reload: c.Reloads(),
		}
		return cmd.Run(ctx, args)
	}
}

// hostRunner runs the agent's host programs (systemctl, journalctl, k3s
// --version) on a simulated host, as root with LC_ALL=C.
type hostRunner struct{ h *vmhost.Host }

var _ node.Runner = hostRunner{}

func (r hostRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	var out bytes.Buffer
	err := r.Stream(ctx, &out, name, args...)
	return out.Bytes(), err
}

func (r hostRunner) Stream(ctx context.Context, w io.Writer, name string, args ...string) error {
	// The agent's HostSystem finds files under its root, the host's
	// directory — the k3s binary it runs with --version too: on the host
	// that is the path without the directory.
	if rel, err := filepath.Rel(r.h.Dir(), name); err == nil && filepath.IsAbs(name) && rel != ".." && !strings.HasPrefix(rel, "../") {
		name = "/" + rel
	}
	words := append([]string{name}, args...)
	for i, a := range words {
		words[i] = remote.Quote(a)
	}
	var stderr bytes.Buffer
	status, err := r.h.Run(ctx, strings.Join(words, " "), nil, w, &stderr, []string{"LC_ALL=C"}, "root")
	if err != nil {
		return err
	}
	if status != 0 {
		return &node.ExitError{Cmd: strings.Join(append([]string{name}, args...), " "), Code: status, Stderr: stderr.String()}
	}
	return nil
}
