package errcode_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openctl/openctl/errcode"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want errcode.Code
	}{
		{"nil", nil, ""},
		{"bare code", errcode.NotFound, errcode.NotFound},
		{"wrapped code", fmt.Errorf("proxmox: vm 100: %w", errcode.Transient), errcode.Transient},
		{"*Error", errcode.New(errcode.Conflict, "locked"), errcode.Conflict},
		{"wrapped *Error", fmt.Errorf("x: %w", errcode.Wrap(errcode.Unauthorized, "login", errors.New("401"))), errcode.Unauthorized},
		{"outermost wins", errcode.Wrap(errcode.Invalid, "bad", fmt.Errorf("inner: %w", errcode.Transient)), errcode.Invalid},
		{"joined: first coded", errors.Join(errors.New("plain"), errcode.AlreadyExists), errcode.AlreadyExists},
		{"uncoded is internal", errors.New("boom"), errcode.Internal},
		{"deadline is transient", fmt.Errorf("get: %w", context.DeadlineExceeded), errcode.Transient},
		{"cancel is cancelled", context.Canceled, errcode.Canceled},
		{"cancel wins over the code on the way", errcode.Wrap(errcode.Transient, "ssh: dial", fmt.Errorf("x: %w", context.Canceled)), errcode.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, errcode.Of(tc.err))
		})
	}
}

func TestErrorIsAndFormat(t *testing.T) {
	cause := errors.New("connection reset")
	err := errcode.Wrap(errcode.Transient, "proxmox: clone 9000", cause)
	assert.True(t, errors.Is(err, errcode.Transient))
	assert.False(t, errors.Is(err, errcode.NotFound))
	assert.True(t, errors.Is(err, cause), "the cause stays reachable")
	assert.True(t, errcode.Retryable(err))
	assert.False(t, errcode.Retryable(errcode.New(errcode.Invalid, "x")))
	assert.Equal(t, "proxmox: clone 9000: connection reset (TRANSIENT)", err.Error())
	assert.Equal(t, "just a message (NOT_FOUND)", errcode.New(errcode.NotFound, "just a message").Error())
	assert.Equal(t, "NOT_FOUND", (&errcode.Error{Code: errcode.NotFound}).Error())
	assert.Equal(t, "vm: NOT_FOUND", errcode.Wrap(errcode.NotFound, "vm", errcode.NotFound).Error(), "the code is not repeated")
	assert.Nil(t, errcode.Wrap(errcode.Internal, "x", nil))
	assert.True(t, errcode.Is(fmt.Errorf("a: %w", errcode.Conflict), errcode.Conflict))
	assert.Len(t, errcode.Codes(), 8)
}

type testErr struct{ n int }

func (e *testErr) Error() string { return "test error" }

func TestAll(t *testing.T) {
	a, b, c := &testErr{1}, &testErr{2}, &testErr{3}
	err := errors.Join(a, fmt.Errorf("wrapped: %w", errors.Join(b, errors.New("other"))), c)
	assert.Equal(t, []*testErr{a, b, c}, errcode.All[*testErr](err))
	assert.Nil(t, errcode.All[*testErr](errors.New("none")))
	assert.Nil(t, errcode.All[*testErr](nil))
}
