package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/seal"
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

// TestExitCodeCorruptState: a state record that does not decode is a
// failure of the store, exit 1, however it is wrapped (issue 12: state
// list and apply exited 2, plan --detailed-exitcode 1). It pins the
// message the file store gives, which stateDamaged recognises.
func TestExitCodeCorruptState(t *testing.T) {
	dir := t.TempDir()
	st, err := state.OpenFile(dir, state.FileOptions{})
	require.NoError(t, err)
	rec := &state.Record{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: "web-01", Spec: map[string]any{"cores": int64(2)}}
	_, err = st.Put(t.Context(), rec)
	require.NoError(t, err)
	var file string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, "web-01.yaml") {
			file = path
		}
		return err
	}))
	require.NotEmpty(t, file)
	require.NoError(t, os.WriteFile(file, []byte("not: a record\n"), 0o600))
	_, getErr := st.Get(t.Context(), rec.ID())
	require.Error(t, getErr)
	_, listErr := st.List(t.Context(), state.Filter{})
	require.Error(t, listErr)

	keyPath := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(keyPath, []byte("version: [\n"), 0o600))
	_, keyErr := seal.LoadKeyFile(keyPath, nil)
	require.Error(t, keyErr)

	for name, err := range map[string]error{
		"get":                 getErr,
		"list":                listErr,
		"wrapped by engine":   errcode.Wrap(errcode.Invalid, "openctl: plan VirtualMachine/web-01 (vms.yaml:1)", getErr),
		"wrapped with %w":     fmt.Errorf("apply: %w", getErr),
		"joined with another": errors.Join(errors.New("x"), getErr),
		"postgres":            state.Corrupt("postgres: record proxmox.openctl.io/v1/VirtualMachine/a is corrupt", errors.New("bad json")),
		"key file":            keyErr,
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, exitFailure, exitCode(t.Context(), err), err.Error())
		})
	}
	// An invalid manifest that merely mentions the word stays exit 2.
	assert.Equal(t, exitInvalid, exitCode(t.Context(), errcode.New(errcode.Invalid, "proxmox: spec.description: text is corrupt")))
}
