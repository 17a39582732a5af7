package k3s

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/remote"
)

// install writes what the node's k3s needs: the binary and the
// service's environment (uploaded), or the install script's run; the
// kube-vip manifest of a server that holds the VIP, before k3s starts
// (it applies server/manifests at start-up); the service. Each is written
// only when it differs from what the host has.
func (n *nodeApply) install(ctx context.Context) error {
	p, s, pr, h := n.p, n.s, n.pr, n.h
	registry.CallOf(ctx).ReportStep("installing k3s " + s.K3s.Version)
	if s.K3s.method() == InstallUpload {
		bin, err := p.bins.get(ctx, s.K3s.Version, pr.uname)
		if err != nil {
			return p.nodeErr(n.name, "find the k3s binary", err)
		}
		if up, err := upload(ctx, h, bin, pr.binary); err != nil {
			return p.nodeErr(n.name, "upload the k3s binary", err)
		} else if up {
			n.changed = true
		}
		if pr.env != sha256Hex(n.env) {
			if err := h.WriteFile(ctx, envPath(pr.init, s.Role), 0o600, bytes.NewReader(n.env)); err != nil {
				return p.nodeErr(n.name, "write the service's environment", err)
			}
			n.changed = true
		}
	}
	if s.Role == RoleServer && s.VIP != nil {
		iface := firstOf(s.VIP.Interface, pr.iface)
		if iface == "" {
			return p.nodeErr(n.name, "place the VIP", errcode.New(errcode.Invalid, fmt.Sprintf("no interface holds %s on %s: set spec.vip.interface", s.Address, h.Addr())))
		}
		if m := kubeVIPManifest(s.VIP.Address, iface); pr.vip != sha256Hex(m) {
			if err := h.WriteFile(ctx, kubeVIPPath, 0o600, bytes.NewReader(m)); err != nil {
				return p.nodeErr(n.name, "write the kube-vip manifest", err)
			}
		}
	}
	if s.K3s.method() == InstallScript {
		// The script writes the binary, the environment file (from the
		// K3S_* variables) and the service; it starts nothing.
		ran, err := installByScript(ctx, h, pr, s, n.args, n.env)
		if err != nil {
			return p.nodeErr(n.name, "run the install script", err)
		}
		n.changed = n.changed || ran
		return nil
	}
	if unit := unitFile(pr.init, s.Role, n.args); pr.unit != sha256Hex(unit) {
		mode := 0o644
		if pr.init == initOpenRC {
			mode = 0o755
		}
		if err := h.WriteFile(ctx, unitPath(pr.init, s.Role), fs.FileMode(mode), bytes.NewReader(unit)); err != nil {
			return p.nodeErr(n.name, "write the service", err)
		}
		n.changed = true
	}
	return nil
}

// installHash identifies an install script run: the script, the version,
// the arguments and the environment (tokens included, hashed).
func installHash(url, version string, args []string, env []byte) string {
	return sha256Hex(fmt.Appendf(nil, "%s\n%s\n%q\n%s", url, version, args, env))
}

// installScriptRun fetches the install script ($1: its URL) on the node
// and runs it with the variables of the file $2 (0600, tokens: removed at
// once, so they never appear on a command line), INSTALL_K3S_VERSION
// ($3) and INSTALL_K3S_SKIP_START (openctl starts the service itself,
// without blocking), the command and flags after them; then records $4 in
// installedPath.
const installScriptRun = `url=$1 vars=$2 version=$3 want=$4
shift 4
set -a; . "$vars"; set +a
rm -f "$vars"
script=$(mktemp)
trap 'rm -f "$script"' EXIT
if command -v curl >/dev/null 2>&1; then curl -sSfL --proto =https -o "$script" "$url"
elif command -v wget >/dev/null 2>&1; then wget -q --https-only -O "$script" "$url"
else echo "neither curl nor wget is installed to fetch $url" >&2; exit 1; fi
INSTALL_K3S_VERSION=$version INSTALL_K3S_SKIP_START=true sh "$script" "$@"
mkdir -p "$(dirname ` + installedPath + `)"
echo "$want" > ` + installedPath

// installByScript runs the install script on the node unless it already
// ran with the same script, version, arguments and environment and the
// installed k3s reports the version.
func installByScript(ctx context.Context, h *remote.Host, pr *probe, s *NodeSpec, args []string, env []byte) (bool, error) {
	url := s.K3s.scriptURL()
	want := installHash(url, s.K3s.Version, args, env)
	if pr.installed == want && pr.version == s.K3s.Version {
		return false, nil
	}
	vars := "/run/openctl-k3s-install.env"
	if err := h.WriteFile(ctx, vars, 0o600, bytes.NewReader(env)); err != nil {
		return false, err
	}
	cmd := "server"
	if s.Role == RoleAgent {
		cmd = "agent"
	}
	words := []string{url, vars, s.K3s.Version, want, cmd}
	var b strings.Builder
	b.WriteString("set -- ")
	for i, w := range append(words, args...) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(remote.Quote(w))
	}
	b.WriteString("\n" + installScriptRun)
	_, err := h.Run(ctx, remote.Command{Step: "run the install script", Script: b.String()})
	return true, err
}

// upload copies the binary to the host unless it is there already.
func upload(ctx context.Context, h *remote.Host, bin *binary, have string) (bool, error) {
	if have == bin.sha256 {
		return false, nil
	}
	f, err := os.Open(bin.path)
	if err != nil {
		return false, errcode.Wrap(errcode.Internal, "k3s: binary", err)
	}
	defer f.Close()
	return true, h.WriteFile(ctx, binPath, 0o755, f)
}
