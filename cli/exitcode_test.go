package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/state"
)

func TestExitCode(t *testing.T) {
	_, manifestErr := manifest.DecodeBytes([]byte("apiVersion: [1]\n"), "bad.yaml")
	require.Error(t, manifestErr)
	locked := &state.LockedError{Scope: "default", Holder: state.LockInfo{Who: "ann", Host: "ci", PID: 7}}
	cancelled, cancel := context.WithCancelCause(t.Context())
	cancel(&interrupted{sig: os.Interrupt})
	terminated, cancel2 := context.WithCancelCause(t.Context())
	cancel2(&interrupted{sig: syscall.SIGTERM})
	plainCancel, cancel3 := context.WithCancel(t.Context())
	cancel3()

	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want int
	}{
		{"success", t.Context(), nil, 0},
		{"failure", t.Context(), errors.New("boom"), 1},
		{"transient", t.Context(), errcode.New(errcode.Transient, "proxmox: 503"), 1},
		{"lock held", t.Context(), fmt.Errorf("apply: %w", locked), 1},
		{"not found", t.Context(), errcode.New(errcode.NotFound, "no vm"), 1},
		{"invalid", t.Context(), errcode.New(errcode.Invalid, "bad spec"), 2},
		{"manifest", t.Context(), manifestErr, 2},
		{"usage", t.Context(), usagef("no manifests"), 2},
		{"chosen code", t.Context(), &exitError{code: 2}, 2},
		{"chosen code wrapped", t.Context(), fmt.Errorf("x: %w", &exitError{code: 1, err: errors.New("y")}), 1},
		{"interrupted", cancelled, context.Canceled, 130},
		{"interrupted, any error", cancelled, &exitError{code: 1}, 130},
		{"terminated", terminated, errors.New("cancelled"), 143},
		{"interrupted but fine", cancelled, nil, 0},
		{"cancelled without a signal", plainCancel, context.Canceled, 1},
		{"stdout closed", t.Context(), fmt.Errorf("output: %w", &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}), 141},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, exitCode(tc.ctx, tc.err))
		})
	}
}
