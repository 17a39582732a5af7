package k3semu

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"runtime"
)

// Version is what a k3s twin's binary reports: the k3s release tag and
// the commit `k3s --version` prints.
type Version struct {
	K3s    string // e.g. v1.37.2+k3s1
	Commit string // 8 to 40 lowercase hex digits
}

var (
	versionRE = regexp.MustCompile(`^v(\d+)\.(\d+)\.(\d+)(?:[-+][0-9A-Za-z.+-]*)?$`)
	commitRE  = regexp.MustCompile(`^[0-9a-f]{8,40}$`)
)

// ValidRelease reports whether tag is a k3s release tag Kubernetes
// clients parse: vMAJOR.MINOR.PATCH with an optional -pre or +k3sN.
func ValidRelease(tag string) bool { return versionRE.MatchString(tag) }

// Validate reports whether v has a release tag Kubernetes clients parse
// (vMAJOR.MINOR.PATCH[+k3sN]) and a hex commit.
func (v Version) Validate() error {
	if !ValidRelease(v.K3s) {
		return fmt.Errorf("standin: version %q is not of the form vMAJOR.MINOR.PATCH[+k3sN]", v.K3s)
	}
	if !commitRE.MatchString(v.Commit) {
		return fmt.Errorf("standin: commit %q is not 8 to 40 lowercase hex digits", v.Commit)
	}
	return nil
}

// Short is the 8-character commit k3s prints.
func (v Version) Short() string {
	if len(v.Commit) > 8 {
		return v.Commit[:8]
	}
	return v.Commit
}

// String is the two lines `k3s --version` prints.
func (v Version) String() string {
	return fmt.Sprintf("k3s version %s (%s)\ngo version %s\n", v.K3s, v.Short(), runtime.Version())
}

// CommitFor derives a stable, release-specific fake commit.
func CommitFor(release string) string {
	sum := sha256.Sum256([]byte(release))
	return hex.EncodeToString(sum[:4])
}

// MajorMinor is the release's major and minor numbers ("1", "37");
// ok is false when the release tag is not valid.
func (v Version) MajorMinor() (major, minor string, ok bool) {
	m := versionRE.FindStringSubmatch(v.K3s)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}
