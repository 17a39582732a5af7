package k3semu

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseJoinToken(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	tok, err := parseJoinToken("K10" + hash + "::server:pw:with:colons\n")
	require.NoError(t, err)
	assert.Equal(t, joinToken{caHash: hash, user: "server", password: "pw:with:colons"}, tok)
	tok, err = parseJoinToken("short")
	require.NoError(t, err)
	assert.Equal(t, joinToken{password: "short"}, tok)
	tok, err = parseJoinToken("K10" + hash + "::abcdef.0123456789abcdef")
	require.NoError(t, err)
	assert.Equal(t, joinToken{caHash: hash, bootstrap: "abcdef.0123456789abcdef"}, tok)
	tok, err = parseJoinToken("abcdef.0123456789abcdef")
	require.NoError(t, err)
	assert.Equal(t, joinToken{bootstrap: "abcdef.0123456789abcdef"}, tok)
	for _, bad := range []string{"K10abc::server:pw", "K10" + hash + "::server", "K10" + hash + "server:pw"} {
		_, err := parseJoinToken(bad)
		assert.Error(t, err, bad)
	}
}
