package agent

import (
	"bytes"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/errcode"
)

// Where the agent lives on a node, and how it listens, unless
// [InstallOptions] say otherwise.
const (
	DefaultBinaryPath = "/usr/local/bin/openctl-agent"
	DefaultConfigDir  = "/etc/openctl-agent"
	DefaultListenAddr = ":9443"
	// ServiceName is the name of the agent's own systemd unit and OpenRC
	// service.
	ServiceName = "openctl-agent"
)

// Paths of the agent's service definition.
const (
	SystemdUnitPath  = "/etc/systemd/system/" + ServiceName + ".service"
	OpenRCScriptPath = "/etc/init.d/" + ServiceName
	// OpenRCLogPath is where the OpenRC service sends the agent's output
	// (systemd sends it to the journal).
	OpenRCLogPath = "/var/log/" + ServiceName + ".log"
)

// InstallOptions describe how the agent is installed on a node. The zero
// value, with Init set, is the standard installation.
type InstallOptions struct {
	// Init selects the service definition: Systemd or OpenRC. Required.
	Init InitSystem
	// BinaryPath is where the agent binary goes. Default DefaultBinaryPath.
	BinaryPath string
	// ConfigDir holds ca.pem, server.pem and server.key. Default
	// DefaultConfigDir.
	ConfigDir string
	// Listen is the agent's --listen address, host:port with an empty
	// host, an IP address or a DNS name. Default DefaultListenAddr.
	Listen string
	// ReleaseURL is the agent's --release-url, the base URL k3s releases
	// are downloaded from: http or https, without user info, query or
	// fragment. Empty leaves the flag out, so the agent uses its default.
	ReleaseURL string
	// HealthTimeout is the agent's --health-timeout: how long, after an
	// upgrade's restart, k3s has to be up and running and report the new
	// version before the previous binary is restored (see "Upgrades" in
	// the package documentation). A whole number of seconds
	// from 1s to MaxHealthTimeout. Zero leaves the flag out, so the agent
	// uses its default (2 minutes, node.DefaultHealthTimeout).
	HealthTimeout time.Duration
}

// MaxHealthTimeout is the longest [InstallOptions.HealthTimeout]. An
// upgrade's answer can take the download plus two health timeouts (the
// gate, then the restart after a rollback): a controller allowing for a
// health timeout of more than a few minutes must raise
// [ClientConfig.UpgradeTimeout] above DefaultUpgradeTimeout.
const MaxHealthTimeout = 30 * time.Minute

// FileKind says what an [InstallFile] holds, so the installer knows where
// to get the contents the helpers cannot know.
type FileKind string

// The kinds of files an installation places.
const (
	KindDir        FileKind = "dir"         // a directory; no contents
	KindBinary     FileKind = "binary"      // the agent binary for the node's architecture; supplied by the installer
	KindCA         FileKind = "ca"          // the cluster's accepted-CA bundle, PEM; supplied by the installer
	KindServerCert FileKind = "server-cert" // the node's server certificate, PEM; supplied by the installer
	KindServerKey  FileKind = "server-key"  // the node's server private key, PEM; supplied by the installer
	KindService    FileKind = "service"     // the systemd unit or OpenRC script; Content is rendered
)

// InstallFile is one file or directory an installation places on a node.
type InstallFile struct {
	Path  string      // absolute path on the node
	Mode  fs.FileMode // permission bits, with fs.ModeDir for a directory
	Owner string      // owning user
	Group string      // owning group
	Kind  FileKind    // what the file holds
	// Content is the file's contents when the helpers know them (the
	// service definition); nil for directories and for files the
	// installer supplies (the binary and the certificate material, which
	// is kept out of this type so that it is never printed with it).
	Content []byte
}

// InstallFiles returns what the K3s provider must place on a node to
// install the agent, in the order to place it: the configuration directory
// (0700), the binary (0755), ca.pem, server.pem and server.key (0600), then
// the systemd unit or OpenRC script (rendered). Everything is owned by
// root:root. After placing them, run [EnableCommands].
//
// Invalid options are reported with an error coded Invalid.
func InstallFiles(opts InstallOptions) ([]InstallFile, error) {
	o, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	svc := InstallFile{Kind: KindService, Owner: "root", Group: "root"}
	if o.Init == Systemd {
		svc.Path, svc.Mode = SystemdUnitPath, 0o644
		svc.Content, err = SystemdUnit(opts)
	} else {
		svc.Path, svc.Mode = OpenRCScriptPath, 0o755
		svc.Content, err = OpenRCScript(opts)
	}
	if err != nil {
		return nil, err
	}
	file := func(p string, mode fs.FileMode, kind FileKind) InstallFile {
		return InstallFile{Path: p, Mode: mode, Owner: "root", Group: "root", Kind: kind}
	}
	return []InstallFile{
		file(o.ConfigDir, fs.ModeDir|0o700, KindDir),
		file(o.BinaryPath, 0o755, KindBinary),
		file(o.caPath(), 0o600, KindCA),
		file(o.certPath(), 0o600, KindServerCert),
		file(o.keyPath(), 0o600, KindServerKey),
		svc,
	}, nil
}

// EnableCommands returns the commands, as argument vectors to run without
// a shell, that enable the agent's service at boot and (re)start it after
// [InstallFiles] were placed: systemctl daemon-reload and enable --now plus
// a restart (so that a reinstall picks up new files) for systemd;
// rc-update add and rc-service restart for OpenRC.
func EnableCommands(init InitSystem) ([][]string, error) {
	switch init {
	case Systemd:
		return [][]string{
			{"systemctl", "daemon-reload"},
			{"systemctl", "enable", ServiceName},
			{"systemctl", "restart", ServiceName},
		}, nil
	case OpenRC:
		return [][]string{
			{"rc-update", "add", ServiceName, "default"},
			{"rc-service", ServiceName, "restart"},
		}, nil
	}
	return nil, fmt.Errorf("agent: install: unknown init system %q: %w", init, errcode.Invalid)
}

// ReloadCommand is the command that makes a running agent re-read its
// credentials (the CA bundle, its certificate and key) without a restart:
// systemctl reload, or rc-service … reload, both of which send it SIGHUP.
// A CA rotation writes the new files, then runs it.
func ReloadCommand(init InitSystem) ([]string, error) {
	switch init {
	case Systemd:
		return []string{"systemctl", "reload", ServiceName}, nil
	case OpenRC:
		return []string{"rc-service", ServiceName, "reload"}, nil
	}
	return nil, fmt.Errorf("agent: install: unknown init system %q: %w", init, errcode.Invalid)
}

// SystemdUnit renders the agent's systemd unit for opts (opts.Init is
// ignored). Every value is validated before it is rendered, and quoted by
// systemd's rules; invalid options are reported with an error coded
// Invalid.
func SystemdUnit(opts InstallOptions) ([]byte, error) {
	opts.Init = Systemd
	return renderService(systemdTmpl, opts, systemdQuote)
}

// OpenRCScript renders the agent's OpenRC init script for opts (opts.Init
// is ignored). Every value is validated before it is rendered, and
// single-quoted for the shell; invalid options are reported with an error
// coded Invalid.
func OpenRCScript(opts InstallOptions) ([]byte, error) {
	opts.Init = OpenRC
	return renderService(openrcTmpl, opts, shellQuote)
}

// tmplData is what the templates see: every value already quoted.
type tmplData struct {
	Binary  string     // the binary path, quoted
	Flags   []tmplFlag // the agent's flags
	LogPath string     // OpenRC only
}

// tmplFlag is one flag of the agent's command line.
type tmplFlag struct {
	Name  string // a constant, such as --listen
	Value string // the validated value, quoted
}

func renderService(t *template.Template, opts InstallOptions, quote func(string) string) ([]byte, error) {
	o, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	d := tmplData{Binary: quote(o.BinaryPath), LogPath: quote(OpenRCLogPath)}
	flag := func(name, value string) { d.Flags = append(d.Flags, tmplFlag{name, quote(value)}) }
	flag("--listen", o.Listen)
	flag("--ca", o.caPath())
	flag("--cert", o.certPath())
	flag("--key", o.keyPath())
	if o.ReleaseURL != "" {
		flag("--release-url", o.ReleaseURL)
	}
	if o.HealthTimeout != 0 {
		flag("--health-timeout", strconv.FormatInt(int64(o.HealthTimeout/time.Second), 10)+"s")
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		return nil, fmt.Errorf("agent: install: render %s: %w", t.Name(), err)
	}
	return buf.Bytes(), nil
}

var systemdTmpl = template.Must(template.New("systemd unit").Parse(`# Managed by openctl: changes are overwritten on reinstall.
[Unit]
Description=openctl node agent
Documentation=https://github.com/openctl/openctl
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
ExecStart={{.Binary}}{{range .Flags}} {{.Name}} {{.Value}}{{end}}
ExecReload=/bin/kill -HUP $MAINPID
Restart=always
RestartSec=5s
TimeoutStopSec=60s

[Install]
WantedBy=multi-user.target
`))

var openrcTmpl = template.Must(template.New("OpenRC script").Parse(`#!/sbin/openrc-run
# Managed by openctl: changes are overwritten on reinstall.

name="openctl-agent"
description="openctl node agent"
supervisor=supervise-daemon
command={{.Binary}}
command_args="{{range $i, $f := .Flags}}{{if $i}} {{end}}{{$f.Name}} {{$f.Value}}{{end}}"
output_log={{.LogPath}}
error_log={{.LogPath}}
respawn_delay=5
respawn_max=0
retry="TERM/60/KILL/5"
extra_started_commands="reload"

depend() {
	need net
	after firewall
}

reload() {
	ebegin "Reloading ${name} credentials"
	supervise-daemon "${RC_SVCNAME}" --signal HUP
	eend $?
}
`))

// normalize fills in defaults and validates every value that ends up in a
// rendered file.
func (o InstallOptions) normalize() (InstallOptions, error) {
	if o.Init != Systemd && o.Init != OpenRC {
		return o, installInvalidf("init system %q is neither %q nor %q", o.Init, Systemd, OpenRC)
	}
	if o.BinaryPath == "" {
		o.BinaryPath = DefaultBinaryPath
	}
	if o.ConfigDir == "" {
		o.ConfigDir = DefaultConfigDir
	}
	if o.Listen == "" {
		o.Listen = DefaultListenAddr
	}
	if err := checkInstallPath("binary path", o.BinaryPath); err != nil {
		return o, err
	}
	if err := checkInstallPath("config directory", o.ConfigDir); err != nil {
		return o, err
	}
	if o.ConfigDir == "/" {
		return o, installInvalidf("config directory must not be /")
	}
	if err := checkInstallListen(o.Listen); err != nil {
		return o, err
	}
	if o.ReleaseURL != "" {
		if err := checkInstallReleaseURL(o.ReleaseURL); err != nil {
			return o, err
		}
	}
	if o.HealthTimeout != 0 && (o.HealthTimeout < time.Second || o.HealthTimeout > MaxHealthTimeout || o.HealthTimeout%time.Second != 0) {
		return o, installInvalidf("health timeout %v: want a whole number of seconds from 1s to %v", o.HealthTimeout, MaxHealthTimeout)
	}
	return o, nil
}

func (o InstallOptions) caPath() string   { return path.Join(o.ConfigDir, pki.CACertFile) }
func (o InstallOptions) certPath() string { return path.Join(o.ConfigDir, pki.ServerCertFile) }
func (o InstallOptions) keyPath() string  { return path.Join(o.ConfigDir, pki.ServerKeyFile) }

func installInvalidf(format string, args ...any) error {
	return fmt.Errorf("agent: install: %s: %w", fmt.Sprintf(format, args...), errcode.Invalid)
}

// safePathRE is what a path may consist of: no whitespace, quotes,
// backslashes, $, %, backticks or other characters that systemd or the
// shell would interpret.
var safePathRE = regexp.MustCompile(`^/[A-Za-z0-9._+@/-]*$`)

func checkInstallPath(what, p string) error {
	if !safePathRE.MatchString(p) || path.Clean(p) != p {
		return installInvalidf("%s %q must be a clean absolute path of letters, digits and ._+@-", what, p)
	}
	return nil
}

var dnsNameRE = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$`)

func checkInstallListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return installInvalidf("listen address %q: %v", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return installInvalidf("listen address %q: port must be a number from 1 to 65535", addr)
	}
	if host == "" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return installInvalidf("listen address %q: IPv6 zones are not supported", addr)
		}
		return nil
	}
	if len(host) > 253 || !dnsNameRE.MatchString(host) {
		return installInvalidf("listen address %q: host must be empty, an IP address or a DNS name", addr)
	}
	return nil
}

// unsafeURLChars are characters a release URL may not contain, even
// percent-encoded ones aside: quotes, backslashes, $ and backticks would
// let the value escape its quoting, and whitespace or control characters
// would split it.
const unsafeURLChars = "\"'\\$`"

func checkInstallReleaseURL(raw string) error {
	for _, r := range raw {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune(unsafeURLChars, r) {
			return installInvalidf("release URL %q: must not contain %q, whitespace, control or non-ASCII characters", raw, r)
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return installInvalidf("release URL %q: %v", raw, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return installInvalidf("release URL %q: scheme must be http or https", raw)
	case u.Host == "" || u.Opaque != "":
		return installInvalidf("release URL %q: no host", raw)
	case u.User != nil:
		return installInvalidf("release URL %q: user info is not allowed", raw)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(raw, "?#"):
		return installInvalidf("release URL %q: query and fragment are not allowed", raw)
	}
	return nil
}

// systemdBare is what systemd takes literally in an unquoted ExecStart
// argument.
var systemdBare = regexp.MustCompile(`^[A-Za-z0-9._+@/:,=\[\]-]+$`)

// systemdQuote quotes a validated value for an ExecStart line: bare when it
// has nothing systemd would interpret, otherwise double-quoted with
// backslashes and quotes escaped, and % (specifiers) and $ (environment
// expansion) doubled.
func systemdQuote(s string) string {
	if systemdBare.MatchString(s) {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `%`, `%%`, `$`, `$$`)
	return `"` + r.Replace(s) + `"`
}

// shellQuote single-quotes a value for the shell. OpenRC evaluates
// command_args, so the quotes survive the double-quoted assignment and
// reach the agent as one argument each; validation has already ruled out
// the characters that are special inside double quotes ($, `, \, ").
func shellQuote(s string) string {
	return `'` + strings.ReplaceAll(s, `'`, `'\''`) + `'`
}
