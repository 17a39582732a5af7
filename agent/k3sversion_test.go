package agent_test

import (
	"strings"
	"testing"

	"github.com/openctl/openctl/agent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateK3sVersion(t *testing.T) {
	for _, v := range []string{"v1.31.2+k3s1", "v0.0.0+k3s0", "v10.200.3000+k3s42"} {
		assert.NoError(t, agent.ValidateK3sVersion(v), v)
	}
	err := agent.ValidateK3sVersion("v1.2.3+k3s1" + strings.Repeat("9", 100))
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 200, "long input is truncated in the message")
}
