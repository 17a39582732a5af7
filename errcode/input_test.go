package errcode_test

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openctl/openctl/errcode"
)

func TestInputErrorFormat(t *testing.T) {
	tests := []struct {
		err  *errcode.InputError
		want string
	}{
		{&errcode.InputError{Input: "manifest", File: "cluster.yaml", Line: 12, Column: 3, Field: "metadata.name", Msg: "bad"}, "cluster.yaml:12:3: metadata.name: bad"},
		{&errcode.InputError{Input: "manifest", File: "cluster.yaml", Line: 12, Msg: "bad"}, "cluster.yaml:12: bad"},
		{&errcode.InputError{Input: "manifest", File: "cluster.yaml", Msg: "bad"}, "cluster.yaml: bad"},
		{&errcode.InputError{Input: "manifest", File: "<stdin>", Line: 1, Column: 1, Field: "kind", Msg: "bad"}, "<stdin>:1:1: kind: bad"},
		{&errcode.InputError{Input: "manifest", Field: "spec.a", Msg: "bad"}, "manifest: spec.a: bad"},
		{&errcode.InputError{Input: "manifest", Line: 4, Column: 2, Msg: "bad"}, "manifest: line 4, column 2: bad"},
		{&errcode.InputError{Input: "config", Msg: "bad"}, "config: bad"},
		{&errcode.InputError{Msg: "bad"}, "bad"},
		{&errcode.InputError{Input: "config", File: "c.yaml", Msg: "cannot read the configuration", Err: fs.ErrPermission}, "c.yaml: cannot read the configuration: permission denied"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.err.Error())
			assert.ErrorIs(t, tt.err, errcode.Invalid)
			assert.NotErrorIs(t, tt.err, errcode.NotFound)
			assert.Equal(t, errcode.Invalid, errcode.Of(tt.err))
			if tt.err.Err != nil {
				assert.True(t, errors.Is(tt.err, tt.err.Err), "the cause is found")
			}
		})
	}
}
