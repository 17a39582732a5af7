package addrmap_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openctl/openctl/internal/addrmap"
)

func TestInto(t *testing.T) {
	m := addrmap.Into(netip.MustParsePrefix("127.80.0.0/16"))
	for in, want := range map[string]string{
		"192.168.1.50": "127.80.1.50",
		"10.0.7.9":     "127.80.7.9",
		"127.80.1.49":  "127.80.1.49", // already there: a second map changes nothing
		"127.0.0.1":    "127.0.0.1",
		"fd00::1":      "fd00::1",
	} {
		assert.Equal(t, want, m(netip.MustParseAddr(in)).String(), in)
	}
	m = addrmap.Into(netip.MustParsePrefix("10.99.128.0/20"))
	assert.Equal(t, "10.99.129.50", m(netip.MustParseAddr("192.168.1.50")).String(), "host bits of a /20")
}
