package proxmox

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	pve "github.com/luthermonson/go-proxmox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
)

// TestClassify: Proxmox answers mapped to what the engine does with them.
func TestClassify(t *testing.T) {
	api := func(code int, msg string) error {
		return &pve.APIError{StatusCode: code, Status: fmt.Sprintf("%d %s", code, msg), Message: msg}
	}
	for _, tc := range []struct {
		err  error
		want errcode.Code
	}{
		{api(http.StatusUnauthorized, "authentication failure"), errcode.Unauthorized},
		{api(http.StatusForbidden, "Permission check failed (/vms/9000, VM.Clone)"), errcode.Unauthorized},
		{api(500, "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout"), errcode.Transient},
		{api(500, "VM is locked (clone)"), errcode.Transient},
		{api(500, "unable to create VM 100: config file already exists"), errcode.Transient},
		{api(500, "Internal Server Error"), errcode.Transient},
		{api(503, "Service Unavailable"), errcode.Transient},
		{api(500, "Configuration file 'nodes/pve1/qemu-server/100.conf' does not exist"), errcode.NotFound},
		{api(500, "VM is protected - protection mode enabled"), errcode.Invalid},
		{api(500, "Linked clone feature is not supported for drive 'scsi0'"), errcode.Invalid},
		{api(500, "you can't start a vm if it's a template"), errcode.Invalid},
		{api(400, "Parameter verification failed."), errcode.Invalid},
		{&pve.TaskFailedError{ExitStatus: "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout"}, errcode.Transient},
		{&pve.TaskFailedError{ExitStatus: "start failed: QEMU exited with code 1"}, errcode.Internal},
		{errcode.New(errcode.Conflict, "already classified"), errcode.Conflict},
	} {
		got := classify(tc.err)
		assert.True(t, errors.Is(got, tc.want), "%v: got %s, want %s", tc.err, errcode.Of(got), tc.want)
	}
	assert.Nil(t, classify(nil))
}

// TestTaskErrorCodeReachesTheEngine: a TaskError's code is found by
// errcode.Of — which the engine's retry uses — not only by errors.Is; a
// timed-out task (no underlying error) included. errors.As still reaches
// the go-proxmox error.
func TestTaskErrorCodeReachesTheEngine(t *testing.T) {
	timedOut := fmt.Errorf("proxmox: apply VirtualMachine x: %w", &TaskError{Type: "qmclone", Timeout: time.Minute, code: errcode.Transient})
	assert.Equal(t, errcode.Transient, errcode.Of(timedOut))
	assert.True(t, errcode.Retryable(timedOut))

	tf := &pve.TaskFailedError{ExitStatus: "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout"}
	failed := fmt.Errorf("start: %w", &TaskError{Type: "qmstart", ExitStatus: tf.ExitStatus, code: errcode.Transient, err: tf})
	assert.Equal(t, errcode.Transient, errcode.Of(failed))
	got, ok := errors.AsType[*pve.TaskFailedError](failed)
	require.True(t, ok)
	assert.Same(t, tf, got)

	internal := &TaskError{Type: "qmclone", ExitStatus: "boom", code: errcode.Internal, err: &pve.TaskFailedError{ExitStatus: "boom"}}
	assert.False(t, errcode.Retryable(internal))
}
