package node

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/errcode"
)

func FuzzDecodeUpgradeRequest(f *testing.F) {
	for _, s := range []string{
		`{"version":"v1.31.2+k3s1"}`,
		`{"version":"v1.2.3+k3s1;rm -rf /"}`,
		`{"version":"../"}`,
		`{"version":"v1.2.3%2Bk3s1"}`,
		`{"version":"v1.2.3+k3s1\n"}`,
		`{"version":"v1.2.3\u002bk3s1"}`,
		`{"VERSION":"v1.2.3+k3s1"}`,
		`{"version":"v1.2.3+k3s1","version":"v1.2.3+k3s1;id"}`,
		`{"version":"v1.2.3+k3s1","x":1}`,
		`{"version":"v1.2.3+k3s1"} x`,
		`{"version":"v1.2.3+k3s1"}` + "\n",
		`null`, ``, `[]`, `{"version":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := decodeUpgradeRequest(strings.NewReader(string(data)))
		if err != nil {
			require.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
			return
		}
		// Anything accepted is a plain release version: safe in a URL path
		// segment without escaping and as a file name.
		require.Regexp(t, `^v[0-9]+\.[0-9]+\.[0-9]+\+k3s[0-9]+$`, req.Version)
		require.LessOrEqual(t, len(req.Version), 64, "agent.ValidateK3sVersion caps versions at 64 bytes")
		require.NotContains(t, req.Version, "/")
	})
}

func FuzzParseLogsQuery(f *testing.F) {
	for _, s := range []string{"", "lines=1", "lines=5000", "lines=5001", "lines=0", "lines=-1", "lines=abc",
		"lines=%2B5", "lines=1&lines=2", "x=1", "lines=0100", "lines=%zz", "lines=1e3", "lines= 5",
		"follow=true", "lines=10&follow=true", "follow=false", "follow=1", "follow=true&follow=true", "follow="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		n, _, err := parseLogsQuery(q)
		if err != nil {
			require.True(t, errcode.Is(err, errcode.Invalid))
			return
		}
		require.GreaterOrEqual(t, n, agent.MinLogLines)
		require.LessOrEqual(t, n, agent.MaxLogLines)
	})
}

func TestParseLogsQuery(t *testing.T) {
	for q, want := range map[string]struct {
		n      int
		follow bool
	}{"": {100, false}, "lines=1": {1, false}, "lines=5000": {5000, false}, "lines=0100": {100, false}, "lines=42": {42, false},
		"follow=true": {100, true}, "lines=7&follow=true": {7, true}, "follow=false&lines=3": {3, false}} {
		n, follow, err := parseLogsQuery(q)
		require.NoError(t, err, q)
		assert.Equal(t, want.n, n, q)
		assert.Equal(t, want.follow, follow, q)
	}
	for _, q := range []string{"follow=1", "follow=yes", "follow=true&follow=false", "lines=2&lines=2"} {
		_, _, err := parseLogsQuery(q)
		require.ErrorIs(t, err, errcode.Invalid, q)
	}
}

func FuzzParseSums(f *testing.F) {
	sum := sha256.Sum256([]byte("k3s"))
	good := fmt.Sprintf("%x  k3s-airgap-images-amd64.tar\n%x  k3s\n", sum, sum)
	f.Add([]byte(good), "k3s")
	f.Add([]byte(fmt.Sprintf("%x *k3s-arm64\n", sum)), "k3s-arm64")
	f.Add([]byte(fmt.Sprintf("%x  k3s\n%x  k3s\n", sum, [32]byte{})), "k3s")
	f.Add([]byte("zz  k3s\n"), "k3s")
	f.Add([]byte(""), "k3s")
	f.Fuzz(func(t *testing.T, data []byte, asset string) {
		got, err := parseSums(data, asset)
		if err == nil {
			require.Len(t, got, sha256.Size)
		}
	})
}

func TestParseSums(t *testing.T) {
	sum := sha256.Sum256([]byte("bin"))
	other := sha256.Sum256([]byte("other"))
	file := fmt.Sprintf("%x  k3s-airgap-images-arm64.tar\n%x *k3s-arm64\r\n%x  k3s\n", other, sum, other)
	got, err := parseSums([]byte(file), "k3s-arm64")
	require.NoError(t, err)
	assert.Equal(t, sum[:], got)
	got, err = parseSums([]byte(file), "k3s")
	require.NoError(t, err)
	assert.Equal(t, other[:], got)

	_, err = parseSums([]byte(file), "k3s-armhf")
	assert.True(t, errcode.Is(err, errcode.NotFound))
	_, err = parseSums([]byte(fmt.Sprintf("%x  k3s\n%x  k3s\n", sum, other)), "k3s")
	assert.ErrorContains(t, err, "twice")
	_, err = parseSums([]byte("abcd  k3s\n"), "k3s")
	assert.ErrorContains(t, err, "malformed")
}

func TestReleaseAssets(t *testing.T) {
	for arch, want := range map[string][2]string{
		"amd64": {"k3s", "sha256sum-amd64.txt"},
		"arm64": {"k3s-arm64", "sha256sum-arm64.txt"},
		"arm":   {"k3s-armhf", "sha256sum-arm.txt"},
	} {
		b, s, err := releaseAssets(arch)
		require.NoError(t, err)
		assert.Equal(t, want, [2]string{b, s})
	}
	_, _, err := releaseAssets("386")
	assert.True(t, errcode.Is(err, errcode.Invalid))
}

// The server's status for each code is the one agent.Client maps back to
// the same code when an answer has no JSON body (AlreadyExists shares
// Conflict's 409); the client's half is agent's TestStatusCode.
func TestHTTPStatus(t *testing.T) {
	want := map[errcode.Code]int{
		errcode.NotFound:      404,
		errcode.AlreadyExists: 409,
		errcode.Conflict:      409,
		errcode.Invalid:       400,
		errcode.Unauthorized:  403,
		errcode.Transient:     503,
		errcode.Canceled:      503,
		errcode.Internal:      500,
	}
	for _, c := range errcode.Codes() {
		s, ok := want[c]
		require.True(t, ok, "code %s has no expected status", c)
		assert.Equal(t, s, httpStatus(c), "%s", c)
	}
}
