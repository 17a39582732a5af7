package progress

import (
	"context"
	"errors"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state/seal"
)

// Advice says what to do about a failed resource, chosen by its error's
// cause: a problem of the state store ([openctl.StateError]) by what the
// store could not do, anything else by its code (see package errcode).
// It is the default for [WithAdvice]; the texts name the openctl CLI's
// commands and environment variables. res.Err must not be nil.
//
//   - interrupted (context.Canceled): re-run to converge;
//   - the state store (see [StateAdvice]): the state passphrase, missing
//     or wrong, or the store's problem named in the error;
//   - Unauthorized: check the provider context's credentials and permissions;
//   - Transient: a temporary problem of the provider's service or of the
//     network: re-run, it resumes;
//   - Invalid: fix the manifest at res.Source (or the file:line in the message);
//   - Conflict: another openctl holds the state lock: wait, or force-unlock;
//   - AlreadyExists: another openctl state owns it
//     (registry.ErrOwnedElsewhere): adopt it; else a resource openctl did
//     not create has that name;
//   - NotFound: for a $ref whose target does not exist
//     (refs.ErrTargetNotFound), the referenced resource does not exist; for
//     one whose target lacks the field (refs.ErrFieldNotFound), that field;
//     else something the error names was not found;
//   - anything else (Internal): unexpected: re-run, and report it if it persists.
func Advice(res openctl.Result) string {
	if errors.Is(res.Err, context.Canceled) {
		return "interrupted: re-run the same command to converge"
	}
	var se *openctl.StateError
	if errors.As(res.Err, &se) {
		return StateAdvice(se)
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
		if errors.Is(res.Err, registry.ErrOwnedElsewhere) {
			return "another openctl state owns it: take it into this state with the `openctl state adopt` command named above, or choose another name"
		}
		return "a resource openctl did not create has that name: rename yours or remove the existing one"
	case errcode.NotFound:
		switch {
		case errors.Is(res.Err, refs.ErrTargetNotFound):
			return "the referenced resource does not exist: create it first or fix the reference"
		case errors.Is(res.Err, refs.ErrFieldNotFound):
			return "the referenced resource has no value at that field (yet): check the field's name, or apply what sets it first"
		}
		return "something the resource needs was not found (named above): create it, or fix the manifest to name one that exists"
	}
	return "an unexpected error: re-run the same command, and report it with this message if it happens again"
}

// StateAdvice says what to do about a state store that could not do what
// an operation needed, by what it was (e.Op) and the error's code:
//
//   - unlock, Unauthorized: the state passphrase is wrong;
//   - unlock, anything else: the passphrase is missing or unusable;
//   - record: the resource was applied but not recorded: fix the store's
//     problem and re-run;
//   - Unauthorized otherwise: the passphrase or the store's credentials;
//   - Conflict: another openctl changed the state meanwhile: re-run;
//   - otherwise: the store's problem named in the error.
func StateAdvice(e *openctl.StateError) string {
	code := errcode.Of(e.Err)
	switch {
	case e.Op == "unlock" && code == errcode.Unauthorized:
		return "the state passphrase is wrong: set " + seal.EnvPassphrase + " (or " + seal.EnvPassphraseFile + ") to the passphrase this state was created with"
	case e.Op == "unlock":
		return "the state needs its passphrase to seal secrets: set " + seal.EnvPassphrase + " to it, or " + seal.EnvPassphraseFile + " to a file holding it (a new state takes the one given)"
	case e.Op == "record":
		return "the resource was applied but the state could not record it: fix the state problem named above (if it is the passphrase, set " + seal.EnvPassphrase + "), then re-run the same command"
	case code == errcode.Unauthorized:
		return "the state refused access: check the state passphrase (" + seal.EnvPassphrase + ") and the state store's credentials; the error above says which"
	case code == errcode.Conflict:
		return "another openctl changed the state meanwhile: re-run the same command"
	}
	return "the state store failed (named above): fix it, then re-run the same command"
}
