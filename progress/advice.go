package progress

import (
	"context"
	"errors"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
)

// Advice says what to do about a failed resource, chosen by its error's
// code (see package errcode). It is the default for [WithAdvice]; the
// texts name the openctl CLI's commands. res.Err must not be nil.
//
//   - interrupted (context.Canceled): re-run to converge;
//   - Unauthorized: check the provider context's credentials and permissions;
//   - Transient: a temporary problem of the provider's service or of the
//     network: re-run, it resumes;
//   - Invalid: fix the manifest at res.Source (or the file:line in the message);
//   - Conflict: another openctl holds the state lock: wait, or force-unlock;
//   - AlreadyExists: a resource openctl did not create has that name;
//   - NotFound: the referenced resource does not exist;
//   - anything else (Internal): unexpected: re-run, and report it if it persists.
func Advice(res openctl.Result) string {
	if errors.Is(res.Err, context.Canceled) {
		return "interrupted: re-run the same command to converge"
	}
	switch errcode.Of(res.Err) {
	case errcode.Unauthorized:
		return "check the credentials of the provider's context and their permissions; the error above may name what is missing"
	case errcode.Transient:
		return "a temporary problem of the provider's service or of the network: re-run the same command; it resumes where it stopped (resources already applied are recorded in state)"
	case errcode.Invalid:
		if s := res.Source.String(); s != "" {
			return "fix the manifest at " + s
		}
		return "fix the manifest at the file:line named above"
	case errcode.Conflict:
		return "another openctl holds the state lock (named above): wait for it to finish, or run `openctl state force-unlock` if it crashed"
	case errcode.AlreadyExists:
		return "a resource openctl did not create has that name: rename yours or remove the existing one"
	case errcode.NotFound:
		return "the referenced resource does not exist: create it first or fix the reference"
	}
	return "an unexpected error: re-run the same command, and report it with this message if it happens again"
}
