package k3slite

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/openctl/openctl/internal/k3semu"
)

// ProgramPath is where sandbox hosts have the k3s program: a k3s
// "binary" is a small file whose #! line names it (see Binary).
const ProgramPath = "/usr/lib/openctl-sandbox/k3s"

// DefaultVersion is the version of a k3s binary without a version line
// (the program run under another name, e.g. the kubectl link).
const DefaultVersion = "v1.37.2+k3s1"

// versionPrefix starts the version line of a sandbox k3s binary.
const versionPrefix = "#openctl-k3s-sandbox "

// Binary returns the content of a sandbox k3s binary of version (e.g.
// "v1.37.2+k3s1"): an interpreter line naming ProgramPath and a version
// line. Different versions give different bytes (and sha256). It panics
// on a version that is not vMAJOR.MINOR.PATCH[+k3sN]-shaped.
func Binary(version string) []byte { return BinaryReporting(version, version) }

// BinaryReporting returns a sandbox k3s binary of release that reports
// version reports (in `k3s --version` and as its Node's kubeletVersion):
// a binary that fails the node agent's upgrade health gate when installed
// as release, the way the stand-in's tests make a failing release (a
// binary whose trailer names another version). Its bytes differ from
// Binary(reports) and Binary(release).
func BinaryReporting(release, reports string) []byte {
	for _, v := range []string{release, reports} {
		if !k3semu.ValidRelease(v) {
			panic(fmt.Sprintf("k3slite: version %q is not of the form vMAJOR.MINOR.PATCH[+k3sN]", v))
		}
	}
	line := versionPrefix + "version=" + reports + " commit=" + k3semu.CommitFor(reports)
	if release != reports {
		line += " release=" + release
	}
	return []byte("#!" + ProgramPath + "\n" + line + "\n")
}

// parseBinary reads the version line of a sandbox k3s binary; a file
// without one is DefaultVersion.
func parseBinary(b []byte) (k3semu.Version, error) {
	v := k3semu.Version{K3s: DefaultVersion, Commit: k3semu.CommitFor(DefaultVersion)}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, versionPrefix)
		if !ok {
			continue
		}
		v = k3semu.Version{}
		for _, f := range strings.Fields(rest) {
			key, val, _ := strings.Cut(f, "=")
			switch key {
			case "version":
				v.K3s = val
			case "commit":
				v.Commit = val
			case "release":
			default:
				return k3semu.Version{}, fmt.Errorf("k3slite: version line: unknown field %q", key)
			}
		}
		if !k3semu.ValidRelease(v.K3s) {
			return k3semu.Version{}, fmt.Errorf("k3slite: version %q is not of the form vMAJOR.MINOR.PATCH[+k3sN]", v.K3s)
		}
		if v.Commit == "" {
			v.Commit = k3semu.CommitFor(v.K3s)
		}
		return v, nil
	}
	return v, nil
}

// WriteRelease lays out a k3s release in dir the way the K3s provider's
// binary directory (providers.k3s.binaryDir) and the release page have it:
// <dir>/<release>/k3s and sha256sum-amd64.txt, and k3s-arm64 with
// sha256sum-arm64.txt, all holding bin (Binary(release), or
// BinaryReporting(release, …) for a release that fails the health gate).
func WriteRelease(dir, release string, bin []byte) error {
	vdir := filepath.Join(dir, release)
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return fmt.Errorf("k3slite: %w", err)
	}
	sum := sha256.Sum256(bin)
	for arch, name := range map[string]string{"amd64": "k3s", "arm64": "k3s-arm64"} {
		if err := os.WriteFile(filepath.Join(vdir, name), bin, 0o755); err != nil {
			return fmt.Errorf("k3slite: %w", err)
		}
		line := fmt.Sprintf("%s  %s\n", hex.EncodeToString(sum[:]), name)
		if err := os.WriteFile(filepath.Join(vdir, "sha256sum-"+arch+".txt"), []byte(line), 0o644); err != nil {
			return fmt.Errorf("k3slite: %w", err)
		}
	}
	return nil
}
