package kubeconfig

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openctl/openctl/errcode"
)

// Rewrite returns the kubeconfig k3s wrote (data, the contents of
// /etc/rancher/k3s/k3s.yaml) made fit for use from another machine: the
// cluster's server URL replaced by server, and the cluster, the user and
// the context renamed to name, which also becomes the current context.
//
// The rewrite is structural: data is decoded with clientcmd.Load, the
// entries are renamed in the decoded config and the result is encoded
// with clientcmd.Write. No text is replaced, so "default" or "127.0.0.1"
// inside certificate data, a namespace or anything else are left alone.
// Every other field of the cluster, user and context (CA data, client
// certificate and key, the context's namespace, extensions) is kept.
//
// data must hold exactly one context, naming a cluster and a user that
// data defines, and no other cluster or user: the shape k3s writes. server
// must be an https URL of a host (an IP address or a DNS name) and an
// optional port, with no path, such as the VIP's "https://10.0.0.10:6443";
// name must be non-empty and hold no space or control character. Anything else is refused with an error matching
// errcode.Invalid that says what is wrong.
func Rewrite(data []byte, server, name string) ([]byte, error) {
	if err := checkServer(server); err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	cfg, err := load(data)
	if err != nil {
		return nil, err
	}
	if n := len(cfg.Contexts); n != 1 {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("kubeconfig: want exactly one context (as k3s writes), found %d", n))
	}
	var ctx *clientcmdapi.Context
	for _, c := range cfg.Contexts {
		ctx = c
	}
	if ctx == nil {
		return nil, errcode.New(errcode.Invalid, "kubeconfig: the context is empty")
	}
	cluster, ok := cfg.Clusters[ctx.Cluster]
	if !ok || cluster == nil {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("kubeconfig: the context names cluster %q, which is not defined", ctx.Cluster))
	}
	user, ok := cfg.AuthInfos[ctx.AuthInfo]
	if !ok || user == nil {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("kubeconfig: the context names user %q, which is not defined", ctx.AuthInfo))
	}
	if len(cfg.Clusters) != 1 || len(cfg.AuthInfos) != 1 {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("kubeconfig: want one cluster and one user (as k3s writes), found %d clusters and %d users", len(cfg.Clusters), len(cfg.AuthInfos)))
	}

	cluster.Server = server
	ctx.Cluster, ctx.AuthInfo = name, name
	out := clientcmdapi.NewConfig()
	out.Preferences = cfg.Preferences
	out.Extensions = cfg.Extensions
	out.Clusters[name] = cluster
	out.AuthInfos[name] = user
	out.Contexts[name] = ctx
	out.CurrentContext = name
	b, err := clientcmd.Write(*out)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "kubeconfig: encoding", err)
	}
	return b, nil
}

// load decodes data as a kubeconfig; an error matches errcode.Invalid.
func load(data []byte) (*clientcmdapi.Config, error) {
	cfg, err := decode(data)
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "kubeconfig: not a kubeconfig", err)
	}
	return cfg, nil
}

// decode is clientcmd.Load with its error made safe to show. clientcmd
// reports a name used twice with the whole list in Go syntax, credentials
// included (a duplicated user prints its client key's bytes): the list is
// cut off and the message clipped, at the price of the original error
// value, whose type carries nothing a caller could use.
func decode(data []byte) (*clientcmdapi.Config, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		msg := err.Error()
		if i := strings.Index(msg, " in list: "); i >= 0 {
			msg = msg[:i] + " in the list"
		}
		return nil, errors.New(clip(msg))
	}
	return cfg, nil
}

// checkServer accepts an https URL with a host and nothing after it but
// an optional "/".
func checkServer(server string) error {
	u, err := url.Parse(server)
	if err != nil {
		return errcode.Wrap(errcode.Invalid, fmt.Sprintf("kubeconfig: server %q: want an https:// URL such as https://10.0.0.10:6443", server), err)
	}
	switch {
	case u.Scheme != "https":
		return errcode.New(errcode.Invalid, fmt.Sprintf("kubeconfig: server %q: want an https:// URL such as https://10.0.0.10:6443", server))
	case u.Hostname() == "":
		return errcode.New(errcode.Invalid, fmt.Sprintf("kubeconfig: server %q has no host", server))
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return errcode.New(errcode.Invalid, fmt.Sprintf("kubeconfig: server %q: want only https://host[:port]", server))
	case net.ParseIP(u.Hostname()) == nil && !isDNSName(u.Hostname()):
		return errcode.New(errcode.Invalid, fmt.Sprintf("kubeconfig: server %q: the host is neither an IP address nor a DNS name", server))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return errcode.New(errcode.Invalid, fmt.Sprintf("kubeconfig: server %q: port out of range", server))
		}
	}
	return nil
}

// isDNSName reports whether s is made of dot-separated labels of ASCII
// letters, digits, '-' and '_' (what a --tls-san name can be).
func isDNSName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// checkName accepts a non-empty name without spaces or control
// characters: one that kubectl's --context flag can name.
func checkName(name string) error {
	if name == "" {
		return errcode.New(errcode.Invalid, "kubeconfig: empty name")
	}
	if strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar }) >= 0 {
		return errcode.New(errcode.Invalid, fmt.Sprintf("kubeconfig: name %q: spaces and control characters are not allowed", name))
	}
	return nil
}
