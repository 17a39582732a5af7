package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openctl/openctl/errcode"
)

// A status without a JSON error body maps back to the code the agent's
// server answers it for (node's TestHTTPStatus is the other half), and
// the statuses a proxy or load balancer adds get sensible codes.
func TestStatusCode(t *testing.T) {
	for _, tt := range []struct {
		status int
		want   errcode.Code
	}{
		{404, errcode.NotFound},
		{409, errcode.Conflict},
		{400, errcode.Invalid},
		{403, errcode.Unauthorized},
		{401, errcode.Unauthorized},
		{503, errcode.Transient},
		{502, errcode.Transient},
		{504, errcode.Transient},
		{429, errcode.Transient},
		{500, errcode.Internal},
		{413, errcode.Invalid},
		{301, errcode.Internal},
	} {
		assert.Equal(t, tt.want, statusCode(tt.status), "%d", tt.status)
	}
}
