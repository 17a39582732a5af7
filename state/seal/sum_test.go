package seal_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state/seal"
)

func TestKeyringSum(t *testing.T) {
	// Cheap keys (one iteration): the sum depends on the data key, not on
	// how the passphrase was stretched.
	kf, k1, err := seal.NewKeyIter(secret.New("pass one"), 1)
	require.NoError(t, err)
	again, err := kf.UnlockAnyIter(secret.New("pass one"))
	require.NoError(t, err)
	_, k2, err := seal.NewKeyIter(secret.New("pass one"), 1)
	require.NoError(t, err)
	msg := []byte("the plan")
	assert.Len(t, k1.Sum("a", msg), 32)
	assert.Equal(t, k1.Sum("a", msg), again.Sum("a", msg), "same key, same sum")
	assert.NotEqual(t, k1.Sum("a", msg), k1.Sum("b", msg), "labels give independent keys")
	assert.NotEqual(t, k1.Sum("a", msg), k1.Sum("a", []byte("the plan!")))
	assert.NotEqual(t, k1.Sum("a", msg), k2.Sum("a", msg), "another data key, another sum")
}
