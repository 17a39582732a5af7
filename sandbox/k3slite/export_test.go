package k3slite_test

import (
	"io/fs"
	"net/netip"
	"strings"

	"github.com/openctl/openctl/sandbox/k3slite"
	"github.com/openctl/openctl/sandbox/vmhost"
)

var k3sBinary = k3slite.Binary

// fsStat returns the ls-style mode of a host's file.
func fsStat(h *vmhost.Host, p string) (string, error) {
	fi, err := fs.Stat(h.FS(), strings.TrimPrefix(p, "/"))
	if err != nil {
		return "", err
	}
	return fi.Mode().String(), nil
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }
