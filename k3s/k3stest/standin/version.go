package standin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	_ "unsafe" // go:linkname, see setKubeVersion

	cbversion "k8s.io/component-base/version"

	"github.com/openctl/openctl/internal/k3semu"
)

// DefaultVersion is the k3s version a binary without a version trailer reports.
const DefaultVersion = "v1.37.2+k3s1"

// TrailerPrefix starts the version trailer: the last line of the executable
// file, "\n" + TrailerPrefix + "version=<v> commit=<8+ hex>\n". Anything
// after the ELF image is ignored by the kernel and the Go runtime, so
// appending a trailer (or replacing the last one) changes the reported
// version and the file's sha256 without a rebuild. The main module's test
// harness writes it with a plain append; [WriteVersioned] does it from Go.
const TrailerPrefix = "#openctl-k3s-standin "

// maxTrailer bounds how far from the end of the file a trailer is looked for.
const maxTrailer = 512

// defaultVersion is the version of a binary without a trailer.
func defaultVersion() k3semu.Version {
	return k3semu.Version{K3s: DefaultVersion, Commit: k3semu.CommitFor(DefaultVersion)}
}

// ReadVersion returns the version recorded in the trailer of the file at
// path (normally os.Executable), or the default version if it has none.
// A malformed trailer is an error.
func ReadVersion(path string) (k3semu.Version, error) {
	f, err := os.Open(path)
	if err != nil {
		return k3semu.Version{}, fmt.Errorf("standin: read version: %w", err)
	}
	defer f.Close()
	tail, _, err := readTail(f)
	if err != nil {
		return k3semu.Version{}, fmt.Errorf("standin: read version of %s: %w", path, err)
	}
	v, found, err := parseTrailer(tail)
	if err != nil {
		return k3semu.Version{}, fmt.Errorf("standin: version trailer of %s: %w", path, err)
	}
	if !found {
		return defaultVersion(), nil
	}
	return v, nil
}

// readTail returns the last maxTrailer bytes of f and the offset they start at.
func readTail(f *os.File) ([]byte, int64, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	off := max(st.Size()-maxTrailer, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, err
	}
	return buf, off, nil
}

// trailerStart returns the index of the trailer's leading "\n" in tail, or -1.
func trailerStart(tail []byte) int {
	if !bytes.HasSuffix(tail, []byte("\n")) {
		return -1
	}
	i := bytes.LastIndex(tail, []byte("\n"+TrailerPrefix))
	if i < 0 || bytes.IndexByte(tail[i+1:len(tail)-1], '\n') >= 0 {
		return -1
	}
	return i
}

func parseTrailer(tail []byte) (k3semu.Version, bool, error) {
	i := trailerStart(tail)
	if i < 0 {
		return k3semu.Version{}, false, nil
	}
	line := strings.TrimSuffix(string(tail[i+1+len(TrailerPrefix):]), "\n")
	var v k3semu.Version
	for _, field := range strings.Fields(line) {
		key, val, _ := strings.Cut(field, "=")
		switch key {
		case "version":
			v.K3s = val
		case "commit":
			v.Commit = val
		default:
			return k3semu.Version{}, true, fmt.Errorf("unknown field %q", key)
		}
	}
	if v.Commit == "" {
		v.Commit = k3semu.CommitFor(v.K3s)
	}
	if err := v.Validate(); err != nil {
		return k3semu.Version{}, true, err
	}
	return v, true, nil
}

// Trailer returns the bytes to append to a stand-in binary so that it
// reports v (replacing any trailer already there is the caller's job; see
// [WriteVersioned]).
func Trailer(v k3semu.Version) []byte {
	return []byte("\n" + TrailerPrefix + "version=" + v.K3s + " commit=" + v.Commit + "\n")
}

// WriteVersioned copies the stand-in binary src to dst (mode 0755),
// dropping any trailer src has and appending one for v. A missing commit is
// derived from the version.
func WriteVersioned(src, dst string, v k3semu.Version) error {
	if v.Commit == "" {
		v.Commit = k3semu.CommitFor(v.K3s)
	}
	if err := v.Validate(); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("standin: write versioned binary: %w", err)
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return fmt.Errorf("standin: write versioned binary: %w", err)
	}
	size := st.Size()
	tail, off, err := readTail(in)
	if err != nil {
		return fmt.Errorf("standin: write versioned binary: %w", err)
	}
	if i := trailerStart(tail); i >= 0 {
		size = off + int64(i)
	}
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return fmt.Errorf("standin: write versioned binary: %w", err)
	}
	_, err = io.Copy(out, io.NewSectionReader(in, 0, size))
	if err == nil {
		_, err = out.Write(Trailer(v))
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("standin: write versioned binary %s: %w", dst, err)
	}
	return nil
}

// The Kubernetes version variables are normally set with -X ldflags; the
// stand-in sets them at run time from the trailer instead, so one build
// serves every version. They are read only after Main starts.

//go:linkname cbGitMajor k8s.io/component-base/version.gitMajor
var cbGitMajor string

//go:linkname cbGitMinor k8s.io/component-base/version.gitMinor
var cbGitMinor string

//go:linkname cbGitVersion k8s.io/component-base/version.gitVersion
var cbGitVersion string

//go:linkname cbGitCommit k8s.io/component-base/version.gitCommit
var cbGitCommit string

//go:linkname cbGitTreeState k8s.io/component-base/version.gitTreeState
var cbGitTreeState string

//go:linkname cbBuildDate k8s.io/component-base/version.buildDate
var cbBuildDate string

//go:linkname cgGitMajor k8s.io/client-go/pkg/version.gitMajor
var cgGitMajor string

//go:linkname cgGitMinor k8s.io/client-go/pkg/version.gitMinor
var cgGitMinor string

//go:linkname cgGitVersion k8s.io/client-go/pkg/version.gitVersion
var cgGitVersion string

//go:linkname cgGitCommit k8s.io/client-go/pkg/version.gitCommit
var cgGitCommit string

//go:linkname cgGitTreeState k8s.io/client-go/pkg/version.gitTreeState
var cgGitTreeState string

//go:linkname cgBuildDate k8s.io/client-go/pkg/version.buildDate
var cgBuildDate string

// setKubeVersion makes the embedded Kubernetes components (apiserver,
// kubectl, client-go) report v. Call it before any of them starts.
func setKubeVersion(v k3semu.Version) {
	major, minor, ok := v.MajorMinor()
	if !ok {
		return
	}
	commit := v.Commit
	for len(commit) < 40 {
		commit += "0"
	}
	const date = "2026-01-01T00:00:00Z"
	cbGitMajor, cbGitMinor, cbGitVersion, cbGitCommit, cbGitTreeState, cbBuildDate = major, minor, v.K3s, commit, "clean", date
	cgGitMajor, cgGitMinor, cgGitVersion, cgGitCommit, cgGitTreeState, cgBuildDate = major, minor, v.K3s, commit, "clean", date
	// component-base copied gitVersion at init; equal to gitVersion now,
	// so this cannot fail validation.
	_ = cbversion.SetDynamicVersion(v.K3s)
}
