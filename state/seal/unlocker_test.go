package seal_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state/seal"
)

func TestUnlockerAsksOnceAndRemembers(t *testing.T) {
	asked := 0
	u := seal.NewUnlocker(func() (secret.Secret, error) { asked++; return secret.New("pass"), nil })
	before := seal.Derivations()
	kf, ring, err := u.Create()
	require.NoError(t, err)
	got, err := u.Unlock(kf)
	require.NoError(t, err)
	assert.Same(t, ring, got, "a created key is unlocked without a derivation")
	assert.Equal(t, int64(1), seal.Derivations()-before)
	assert.Equal(t, 1, asked)

	wrong := seal.NewUnlocker(func() (secret.Secret, error) { return secret.New("nope"), nil })
	_, err = wrong.Unlock(kf)
	require.True(t, errors.Is(err, errcode.Unauthorized))
	before = seal.Derivations()
	_, err = wrong.Unlock(kf)
	require.True(t, errors.Is(err, errcode.Unauthorized))
	assert.Zero(t, seal.Derivations()-before, "a wrong passphrase is not retried")
	wrong.Add(ring)
	got, err = wrong.Unlock(kf)
	require.NoError(t, err)
	assert.Same(t, ring, got)
}
