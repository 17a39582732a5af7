package proxmox

import (
	"context"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"

	pve "github.com/luthermonson/go-proxmox"
	"github.com/openctl/openctl/errcode"
)

// permissionRe matches Proxmox's 403 message, e.g.
// "Permission check failed (/vms/100, VM.Clone)".
var permissionRe = regexp.MustCompile(`Permission check failed \(([^,)]+), ([^)]+)\)`)

// transientRe matches Proxmox messages that describe contention or a node
// that is busy rather than a request that is wrong.
var transientRe = regexp.MustCompile(`(?i)can't lock file|got timeout|VM is locked \((clone|create|migrate|backup|snapshot|snapshot-delete|rollback)\)|config file already exists|no such task|temporarily unavailable|connection refused|connection reset`)

// permanentRe matches Proxmox 5xx messages that describe a request that
// can never succeed as it stands: retrying them only delays the answer.
var permanentRe = regexp.MustCompile(`(?i)protection mode|is protected|not supported|you can't|no such storage|storage '[^']*' does not exist|unable to parse|shrinking disks|only grow|uses local storage|is a template`)

// classify gives err an errcode classification the engine can act on:
// Unauthorized for 401/403 (naming the missing privilege) and TLS
// verification failures, NotFound for missing objects, Transient for lock
// timeouts, 5xx and network failures, Invalid for rejected parameters.
// Context errors, already-classified errors and nil pass through.
func classify(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	for _, c := range errcode.Codes() {
		if errors.Is(err, c) {
			return err // already classified (an errcode.Error, a TLSError)
		}
	}
	if apiErr, ok := pve.AsAPIError(err); ok {
		switch {
		case apiErr.StatusCode == http.StatusUnauthorized:
			return errcode.Wrap(errcode.Unauthorized, "Proxmox rejected the API token (check tokenId and the secret)", err)
		case apiErr.StatusCode == http.StatusForbidden:
			if m := permissionRe.FindStringSubmatch(apiErr.Message + " " + apiErr.Status); m != nil {
				return errcode.Wrap(errcode.Unauthorized, "the API token lacks privilege "+m[2]+" on "+m[1], err)
			}
			return errcode.Wrap(errcode.Unauthorized, "permission denied", err)
		case transientRe.MatchString(apiErr.Message) || transientRe.MatchString(apiErr.Status):
			return errcode.Wrap(errcode.Transient, "", err)
		case pve.IsNotFound(err):
			return errcode.Wrap(errcode.NotFound, "", err)
		case permanentRe.MatchString(apiErr.Message) || permanentRe.MatchString(apiErr.Status):
			return errcode.Wrap(errcode.Invalid, "Proxmox refused the request", err)
		case apiErr.StatusCode == http.StatusBadRequest:
			return errcode.Wrap(errcode.Invalid, "Proxmox rejected the request", err)
		case apiErr.StatusCode == http.StatusTooManyRequests || apiErr.StatusCode >= 500:
			return errcode.Wrap(errcode.Transient, "", err)
		}
		return errcode.Wrap(errcode.Internal, "", err)
	}
	if tf, ok := errors.AsType[*pve.TaskFailedError](err); ok {
		if transientRe.MatchString(tf.ExitStatus) {
			return errcode.Wrap(errcode.Transient, "", err)
		}
		return errcode.Wrap(errcode.Internal, "", err)
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return errcode.Wrap(errcode.Transient, "", err)
	}
	if errors.Is(err, pve.ErrTimeout) {
		return errcode.Wrap(errcode.Transient, "", err)
	}
	if s := err.Error(); strings.Contains(s, "EOF") || transientRe.MatchString(s) {
		return errcode.Wrap(errcode.Transient, "", err)
	}
	return err
}

// isTransient reports whether a classified error is worth retrying.
func isTransient(err error) bool { return errcode.Is(err, errcode.Transient) }
