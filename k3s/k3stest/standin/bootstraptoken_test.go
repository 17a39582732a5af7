package standin

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/openctl/openctl/internal/k3semu"
)

// The emulator core writes bootstrap tokens without k8s.io/cluster-bootstrap
// (the main module does not require it); these compare it with that
// library, which the real k3s uses.
func TestBootstrapTokenMatchesClusterBootstrap(t *testing.T) {
	for _, tok := range []string{
		"abcdef.0123456789abcdef", "ABCDEF.0123456789abcdef", "abcdef.0123456789abcde", "abcdef0123456789abcdef",
		"abcdef.0123456789abcdef\n", " abcdef.0123456789abcdef", "abc-ef.0123456789abcdef", "", ".",
	} {
		assert.Equal(t, bootstraputil.IsValidBootstrapToken(tok), k3semu.IsBootstrapToken(tok), "%q", tok)
	}
	for range 50 {
		tok := k3semu.GenerateBootstrapToken()
		assert.True(t, bootstraputil.IsValidBootstrapToken(tok), tok)
	}

	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	sec, err := k3semu.BootstrapTokenSecret("abcdef.0123456789abcdef", "joins", time.Hour, now)
	require.NoError(t, err)
	assert.Equal(t, bootstraputil.BootstrapTokenSecretName("abcdef"), sec.Name)
	assert.Equal(t, bootstrapapi.SecretTypeBootstrapToken, sec.Type)
	for key, want := range map[string]string{
		bootstrapapi.BootstrapTokenIDKey:               "abcdef",
		bootstrapapi.BootstrapTokenSecretKey:           "0123456789abcdef",
		bootstrapapi.BootstrapTokenDescriptionKey:      "joins",
		bootstrapapi.BootstrapTokenExpirationKey:       now.Add(time.Hour).Format(time.RFC3339),
		bootstrapapi.BootstrapTokenUsageSigningKey:     "true",
		bootstrapapi.BootstrapTokenUsageAuthentication: "true",
		bootstrapapi.BootstrapTokenExtraGroupsKey:      k3semu.NodeBootstrapTokenAuthGroup,
	} {
		assert.Equal(t, want, string(sec.Data[key]), key)
	}
	assert.Len(t, sec.Data, 7)
}
