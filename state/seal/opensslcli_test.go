package seal_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/internal/testenv"
	"github.com/openctl/openctl/state/seal"
)

// TestBreakGlassWithOpenSSLCLI recovers a record's secrets with nothing but
// the openssl command, running exactly the commands the package doc gives.
func TestBreakGlassWithOpenSSLCLI(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("openssl")
	if err != nil {
		testenv.Unavailable(t, "!!! openssl CLI not found (%v): the break-glass recovery is NOT tested; install openssl to run it !!!", err)
	}
	// run runs openssl with args, stdin as bash's <<< gives it (a trailing
	// newline) and extra environment variables.
	run := func(t *testing.T, stdin string, env []string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Env = append(os.Environ(), env...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			return out.String(), fmt.Errorf("openssl %s: %w: %s", args[0], err, strings.TrimSpace(errOut.String()))
		}
		return out.String(), nil
	}

	kf, k, err := seal.NewKey(pass, 0)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "key.yaml")
	require.NoError(t, kf.Save(path))
	secrets := sampleSecrets()
	sealed, err := k.Seal(vmID, secrets)
	require.NoError(t, err)
	require.Greater(t, len(sealed.Ciphertext), 1024, "long enough that -A matters")

	// SEALED_KEY=$(sed -n 's/^sealedKey: //p' key.yaml)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var sealedKey string
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "sealedKey: "); ok {
			sealedKey = v
		}
	}
	require.Equal(t, kf.SealedKey, sealedKey)

	// Step 1: the data key.
	dataKey, err := run(t, sealedKey+"\n", []string{seal.EnvPassphrase + "=" + pass.Reveal()},
		"enc", "-d", "-aes-256-cbc", "-pbkdf2", "-iter", strconv.Itoa(kf.Iterations), "-md", "sha256", "-a", "-A",
		"-pass", "env:"+seal.EnvPassphrase)
	require.NoError(t, err)
	require.Regexp(t, `^[0-9a-f]{64}$`, dataKey)
	raw, err := hex.DecodeString(dataKey)
	require.NoError(t, err)
	m := hmac.New(sha256.New, raw)
	m.Write([]byte("openctl state key check v1"))
	assert.Equal(t, kf.Check, hex.EncodeToString(m.Sum(nil)), "the recovered key is the store's data key")

	// Step 2: the record's secrets.
	js, err := run(t, sealed.Ciphertext+"\n", nil,
		"enc", "-d", "-aes-256-cbc", "-pbkdf2", "-iter", "1", "-md", "sha256", "-a", "-A", "-pass", "pass:"+dataKey)
	require.NoError(t, err)
	var got map[string]string
	require.NoError(t, json.Unmarshal([]byte(js), &got))
	want := map[string]string{}
	for p, s := range secrets {
		want[p] = s.Reveal()
	}
	assert.Equal(t, want, got)

	// The MAC and the check, as the doc computes them.
	hmacHex := func(t *testing.T, hexKey, msg string) string {
		t.Helper()
		out, err := run(t, msg, nil, "dgst", "-sha256", "-mac", "HMAC", "-macopt", "hexkey:"+hexKey, "-r")
		require.NoError(t, err)
		f := strings.Fields(out)
		require.NotEmpty(t, f)
		return f[0]
	}
	macKey := hmacHex(t, dataKey, "openctl state mac v1")
	assert.Equal(t, sealed.MAC, hmacHex(t, macKey, vmID.String()+"\x00"+sealed.Ciphertext))
	assert.Equal(t, kf.Check, hmacHex(t, dataKey, "openctl state key check v1"))

	// What the doc warns about: without -A a long single line fails.
	out, err := run(t, sealed.Ciphertext+"\n", nil,
		"enc", "-d", "-aes-256-cbc", "-pbkdf2", "-iter", "1", "-md", "sha256", "-a", "-pass", "pass:"+dataKey)
	t.Logf("without -A: err=%v, %d bytes out (want a failure, as the doc says)", err, len(out))

	// A wrong passphrase fails in openssl too.
	_, err = run(t, sealedKey+"\n", []string{seal.EnvPassphrase + "=wrong"},
		"enc", "-d", "-aes-256-cbc", "-pbkdf2", "-iter", strconv.Itoa(kf.Iterations), "-md", "sha256", "-a", "-A",
		"-pass", "env:"+seal.EnvPassphrase)
	t.Logf("wrong passphrase: %v", err)
}
