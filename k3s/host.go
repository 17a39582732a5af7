package k3s

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/remote"
)

// Paths on a node, as the k3s installer lays them out.
const (
	binPath       = "/usr/local/bin/k3s"
	kubeconfigOut = "/etc/rancher/k3s/k3s.yaml"
	dataDir       = "/var/lib/rancher/k3s"
	tokenPath     = dataDir + "/server/token"
	agentTokPath  = dataDir + "/server/agent-token"
	manifestsDir  = dataDir + "/server/manifests"
	// kubeletKubeconfig is how an agent's kubelet reaches the API (as
	// its own Node, which it may read).
	kubeletKubeconfig = dataDir + "/agent/kubelet.kubeconfig"
	// installedPath records, on a node installed by the install script,
	// the hash of what it was run with (installHash).
	installedPath = "/etc/rancher/k3s/openctl-install.sha256"
)

// The init systems a node can have.
const (
	initSystemd = "systemd"
	initOpenRC  = "openrc"
)

// probe is what a node's host looks like now: read in one command.
type probe struct {
	init    string // systemd, openrc, or "" when neither
	uname   string // uname -m
	binary  string // sha256 of /usr/local/bin/k3s; "" when absent
	env     string // sha256 of the service's environment file
	vip     string // sha256 of the kube-vip manifest
	iface   string // the interface holding the node's address
	unit    string // sha256 of the service's unit or init script
	active  bool   // the service runs
	version string // k3s --version's first line's version; "" when absent
	// installed is the installHash the install script last ran with.
	installed string
}

// probeScript prints key=value lines for a service name ($1).
const probeScript = `svc=$1 addr=$2
init=
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then init=systemd
elif [ -x /sbin/openrc-run ]; then init=openrc; fi
sum() { [ -e "$1" ] && sha256sum -- "$1" | cut -d' ' -f1; }
echo "init=$init"
echo "uname=$(uname -m)"
echo "binary=$(sum ` + binPath + `)"
case $init in
systemd) echo "unit=$(sum /etc/systemd/system/$svc.service)"; echo "env=$(sum /etc/systemd/system/$svc.service.env)"
  systemctl is-active --quiet "$svc" && echo active=1 ;;
openrc) echo "unit=$(sum /etc/init.d/$svc)"; echo "env=$(sum /etc/rancher/k3s/$svc.env)"
  rc-service "$svc" status >/dev/null 2>&1 && echo active=1 ;;
esac
[ -x ` + binPath + ` ] && echo "version=$(` + binPath + ` --version 2>/dev/null | head -n1 | cut -d' ' -f3)"
echo "vip=$(sum ` + kubeVIPPath + `)"
echo "installed=$(cat ` + installedPath + ` 2>/dev/null)"
echo "iface=$(ip -o addr show to "$addr" 2>/dev/null | { read -r _ dev _ && echo "$dev"; })"
exit 0`

func probeHost(ctx context.Context, h *remote.Host, svc, addr string) (*probe, error) {
	res, err := h.Run(ctx, remote.Command{Step: "inspect the host", Script: "set -- " + svc + " " + remote.Quote(addr) + "\n" + probeScript})
	if err != nil {
		return nil, err
	}
	p := &probe{}
	sc := bufio.NewScanner(bytes.NewReader(res.Stdout))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "init":
			p.init = v
		case "uname":
			p.uname = v
		case "binary":
			p.binary = v
		case "env":
			p.env = v
		case "unit":
			p.unit = v
		case "active":
			p.active = v == "1"
		case "version":
			p.version = v
		case "vip":
			p.vip = v
		case "iface":
			p.iface = v
		case "installed":
			p.installed = v
		}
	}
	if p.init == "" {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("k3s: %s: neither systemd nor OpenRC runs there; k3s needs one of them", h.Addr()))
	}
	return p, nil
}

// service returns the k3s service name for a role.
func service(role string) string {
	if role == RoleAgent {
		return "k3s-agent"
	}
	return "k3s"
}

// nodeArgs are the k3s flags of a node, as they go on its service's
// command line (the installer's way: INSTALL_K3S_EXEC); secrets are not
// among them (envFile).
func nodeArgs(name string, s *NodeSpec) []string {
	args := []string{"--node-name=" + name, "--node-ip=" + s.Address}
	if s.Init {
		args = append(args, "--cluster-init")
	} else {
		args = append(args, "--server="+s.Server)
	}
	if s.Role == RoleServer {
		args = append(args, "--write-kubeconfig-mode=0600")
		sans := slices.Clone(s.TLSSANs)
		if s.VIP != nil && !slices.Contains(sans, s.VIP.Address) {
			sans = append(sans, s.VIP.Address)
		}
		for _, san := range sans {
			args = append(args, "--tls-san="+san)
		}
		if s.K3s.ClusterCIDR != "" {
			args = append(args, "--cluster-cidr="+s.K3s.ClusterCIDR)
		}
		if s.K3s.ServiceCIDR != "" {
			args = append(args, "--service-cidr="+s.K3s.ServiceCIDR)
		}
		for _, d := range s.K3s.Disable {
			args = append(args, "--disable="+d)
		}
		if f := s.K3s.Flannel; f != nil && f.Backend != "" {
			args = append(args, "--flannel-backend="+f.Backend)
		}
	}
	if f := s.K3s.Flannel; f != nil && f.Iface != "" {
		args = append(args, "--flannel-iface="+f.Iface)
	}
	for _, l := range s.Labels {
		args = append(args, "--node-label="+l)
	}
	for _, t := range s.Taints {
		args = append(args, "--node-taint="+t)
	}
	args = append(args, s.K3s.ExtraArgs...)
	return append(args, s.ExtraArgs...)
}

// envFile renders the service's environment file (0600), as the
// installer writes it: the tokens, which never go on a command line.
func envFile(role, token, agentToken string) []byte {
	var b strings.Builder
	b.WriteString("# Written by openctl.\n")
	if role == RoleAgent {
		token = firstOf(agentToken, token)
		agentToken = ""
	}
	if token != "" {
		fmt.Fprintf(&b, "K3S_TOKEN=%s\n", remote.Quote(token))
	}
	if agentToken != "" {
		fmt.Fprintf(&b, "K3S_AGENT_TOKEN=%s\n", remote.Quote(agentToken))
	}
	return []byte(b.String())
}

// envPath is where a role's environment file goes for an init system.
func envPath(init, role string) string {
	if init == initOpenRC {
		return "/etc/rancher/k3s/" + service(role) + ".env"
	}
	return "/etc/systemd/system/" + service(role) + ".service.env"
}

// unitFile renders the service of a role for an init system, as the k3s
// installer writes it, with the extra arguments on the command line.
func unitFile(init, role string, extra []string) []byte {
	cmd := "server"
	if role == RoleAgent {
		cmd = "agent"
	}
	if init == initOpenRC {
		args := []string{remote.Quote(cmd)}
		for _, a := range extra {
			args = append(args, remote.Quote(a))
		}
		svc := service(role)
		return fmt.Appendf(nil, `#!/sbin/openrc-run
# Written by openctl.

depend() {
    after network-online
    want cgroups
}

supervisor=supervise-daemon
name=%[1]s
command="%[2]s"
command_args="%[3]s >>/var/log/%[1]s.log 2>&1"

output_log=/var/log/%[1]s.log
error_log=/var/log/%[1]s.log

pidfile="/var/run/%[1]s.pid"
respawn_delay=5
respawn_max=0

set -o allexport
if [ -f /etc/environment ]; then . /etc/environment; fi
if [ -f %[4]s ]; then . %[4]s; fi
set +o allexport
`, svc, binPath, strings.ReplaceAll(strings.Join(args, " "), `"`, `\"`), envPath(init, role))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `[Unit]
Description=Lightweight Kubernetes (written by openctl)
Documentation=https://k3s.io
Wants=network-online.target
After=network-online.target

[Install]
WantedBy=multi-user.target

[Service]
Type=notify
EnvironmentFile=-/etc/default/%%N
EnvironmentFile=-/etc/sysconfig/%%N
EnvironmentFile=-%s
KillMode=process
Delegate=yes
User=root
LimitNOFILE=1048576
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
TimeoutStartSec=0
Restart=always
RestartSec=5s
ExecStartPre=-/sbin/modprobe br_netfilter
ExecStartPre=-/sbin/modprobe overlay
ExecStart=%s \
    %s`, envPath(init, role), binPath, cmd)
	for _, a := range extra {
		fmt.Fprintf(&b, " \\\n    '%s'", strings.ReplaceAll(a, "'", `'\''`))
	}
	b.WriteString("\n")
	return []byte(b.String())
}

// unitPath is where a role's service goes for an init system.
func unitPath(init, role string) string {
	if init == initOpenRC {
		return "/etc/init.d/" + service(role)
	}
	return "/etc/systemd/system/" + service(role) + ".service"
}

// startScript (re)starts a role's service without waiting for it: a k3s
// that never gets ready makes systemctl restart hang forever
// (TimeoutStartSec=0), so readiness is polled with a deadline instead.
func startScript(init, role string, restart bool) string {
	svc := service(role)
	verb := "start"
	if restart {
		verb = "restart"
	}
	if init == initOpenRC {
		return fmt.Sprintf("rc-update add %s default >/dev/null\nrc-service %s %s", svc, svc, verb)
	}
	return fmt.Sprintf("systemctl daemon-reload\nsystemctl enable %s >/dev/null 2>&1\nsystemctl %s --no-block %s", unitPath(init, role), verb, svc)
}

// stopScript stops a role's service.
func stopScript(init, role string) string {
	if init == initOpenRC {
		return "rc-service " + service(role) + " stop"
	}
	return "systemctl stop " + service(role)
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// newPassword returns a random 32-hex-digit password: a k3s "short"
// token, deliberately not shaped like a bootstrap token.
func newPassword() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// existingTokens reads the tokens a node's environment file already
// holds, so that a re-apply keeps them; both "" when there is none.
func existingTokens(ctx context.Context, h *remote.Host, path string) (token, agentToken string, err error) {
	data, err := h.ReadFile(ctx, path)
	if errcode.Is(err, errcode.NotFound) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.TrimSuffix(strings.TrimPrefix(v, "'"), "'")
		switch k {
		case "K3S_TOKEN":
			token = v
		case "K3S_AGENT_TOKEN":
			agentToken = v
		}
	}
	return token, agentToken, nil
}
