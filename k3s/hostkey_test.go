package k3s_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/k3s/k3stest"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/state"
)

// Host keys are always verified: an unknown one is refused with its
// fingerprint and what to do, a different one as a possible attack —
// before anything is installed.
func TestHostKeyRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	n := k3stest.NewNetwork(t)
	h, err := n.AddHost(ctx, "keyed", k3stest.HostOptions{})
	require.NoError(t, err)
	p := newOffline(t)
	e, err := openctl.New(openctl.WithProviders(p), openctl.WithStore(state.NewMemory()))
	require.NoError(t, err)
	cluster := func(hostKey string) *manifest.Resource {
		host := map[string]any{"name": "keyed", "address": h.Addr().String(), "role": "server"}
		if hostKey != "" {
			host["sshHostKey"] = hostKey
		}
		return &manifest.Resource{APIVersion: k3s.APIVersion, Kind: k3s.KindCluster, Metadata: manifest.Metadata{Name: "keys"}, Spec: map[string]any{
			"hosts": []any{host},
			"k3s":   map[string]any{"version": standinVersion},
			"ssh": map[string]any{"user": k3stest.DefaultUser, "privateKeyPath": n.KeyFile(),
				"knownHosts": []any{filepath.Join(t.TempDir(), "known_hosts")}},
		}}
	}

	_, err = e.Apply(ctx, cluster(""))
	require.ErrorIs(t, err, errcode.Invalid)
	assert.Contains(t, err.Error(), "unknown host key ssh-ed25519 "+ssh.FingerprintSHA256(h.HostKey()))
	assert.Contains(t, err.Error(), "trustOnFirstUse")

	pub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	other, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	_, err = e.Apply(ctx, cluster(string(ssh.MarshalAuthorizedKey(other))))
	require.ErrorIs(t, err, errcode.Invalid)
	assert.Contains(t, err.Error(), "the host key has CHANGED")

	out, err := h.Run(ctx, "sh", "-c", "ls /usr/local/bin/k3s /etc/systemd/system/k3s.service 2>&1 || true")
	require.NoError(t, err)
	assert.Contains(t, string(out), "No such file", "nothing was installed")
}
