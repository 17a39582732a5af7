package agent

import (
	"fmt"
	"regexp"

	"github.com/openctl/openctl/errcode"
)

// maxVersionLen is the longest k3s version ValidateK3sVersion accepts.
const maxVersionLen = 64

// versionRE is the only shape of k3s version an upgrade accepts. It is
// checked before the version is placed in a URL or a file name.
var versionRE = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+\+k3s[0-9]+$`)

// ValidateK3sVersion reports, with errcode.Invalid, whether v is not a
// k3s release version of the form vX.Y.Z+k3sN.
func ValidateK3sVersion(v string) error {
	if len(v) > maxVersionLen || !versionRE.MatchString(v) {
		if len(v) > maxVersionLen {
			v = v[:maxVersionLen] + "…"
		}
		return fmt.Errorf("agent: k3s version %q: want vX.Y.Z+k3sN: %w", v, errcode.Invalid)
	}
	return nil
}
