package k3s

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLastLogLine(t *testing.T) {
	for _, tt := range []struct{ log, want string }{
		{"", ""},
		{"a\nb\n\n", "b"},
		{"level=info msg=a\nlevel=fatal msg=\"duplicate node names\"\nlevel=info msg=b\n", `level=fatal msg="duplicate node names"`},
		{"level=error msg=x\nlevel=fatal msg=y\nlevel=info msg=z", "level=fatal msg=y"},
		{"level=fatal msg=y\nlevel=error msg=x\n", "level=error msg=x"},
	} {
		assert.Equal(t, tt.want, lastLogLine(tt.log), "%q", tt.log)
	}
}
