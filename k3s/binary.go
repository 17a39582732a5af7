package k3s

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/openctl/openctl/errcode"
)

// DefaultReleaseURL is where k3s releases are downloaded from:
// <url>/<version>/k3s<suffix> and <url>/<version>/sha256sum-<arch>.txt.
const DefaultReleaseURL = "https://github.com/k3s-io/k3s/releases/download"

// arch maps `uname -m` to k3s's architecture names and binary suffixes.
var archs = map[string]struct{ arch, suffix string }{
	"x86_64":  {"amd64", ""},
	"amd64":   {"amd64", ""},
	"aarch64": {"arm64", "-arm64"},
	"arm64":   {"arm64", "-arm64"},
	"armv7l":  {"arm", "-armhf"},
	"s390x":   {"s390x", "-s390x"},
}

// binaryStore finds k3s binaries in a directory laid out like the release
// page — <dir>/<version>/k3s<suffix> next to sha256sum-<arch>.txt — and
// downloads missing ones into it from a release URL. Every binary is
// checked against the release's checksum file before it is used. It is
// safe for concurrent use.
type binaryStore struct {
	dir        string
	releaseURL string // "": never download
	client     *http.Client

	mu sync.Mutex // serialises downloads
}

// binary is a k3s binary on the controller.
type binary struct {
	path   string
	sha256 string
}

// get returns the checked binary of version for uname (`uname -m`).
func (s *binaryStore) get(ctx context.Context, version, uname string) (*binary, error) {
	a, ok := archs[uname]
	if !ok {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("k3s: no k3s release for architecture %q", uname))
	}
	if s.dir == "" {
		return nil, errcode.New(errcode.Invalid, "k3s: no directory for k3s binaries: set providers.k3s.binaryDir")
	}
	dir := filepath.Join(s.dir, version)
	name := "k3s" + a.suffix
	sums := "sha256sum-" + a.arch + ".txt"
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range []string{sums, name} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			continue
		}
		if err := s.download(ctx, version, f, dir); err != nil {
			return nil, err
		}
	}
	want, err := checksum(filepath.Join(dir, sums), name)
	if err != nil {
		return nil, err
	}
	got, err := fileSHA256(filepath.Join(dir, name))
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "k3s: binary", err)
	}
	if got != want {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("k3s: %s: sha256 %s, but %s says %s: the file is corrupt or not that release", filepath.Join(dir, name), got, sums, want))
	}
	return &binary{path: filepath.Join(dir, name), sha256: got}, nil
}

// download fetches file of version into dir, atomically.
func (s *binaryStore) download(ctx context.Context, version, file, dir string) error {
	if s.releaseURL == "" {
		return errcode.New(errcode.Invalid, fmt.Sprintf("k3s: %s is missing and downloads are off: put the release's %s there", filepath.Join(dir, file), file))
	}
	u, err := url.JoinPath(s.releaseURL, version, file)
	if err != nil {
		return errcode.Wrap(errcode.Invalid, "k3s: release URL", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return errcode.Wrap(errcode.Invalid, "k3s: release URL", err)
	}
	client := s.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return errcode.Wrap(errcode.Transient, "k3s: downloading "+u, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return errcode.New(errcode.Invalid, fmt.Sprintf("k3s: %s: not found (is %s a k3s release?)", u, version))
	case resp.StatusCode >= 500:
		return errcode.New(errcode.Transient, fmt.Sprintf("k3s: downloading %s: %s", u, resp.Status))
	case resp.StatusCode != http.StatusOK:
		return errcode.New(errcode.Internal, fmt.Sprintf("k3s: downloading %s: %s", u, resp.Status))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return errcode.Wrap(errcode.Internal, "k3s: binary cache", err)
	}
	tmp, err := os.CreateTemp(dir, ".download-*")
	if err != nil {
		return errcode.Wrap(errcode.Internal, "k3s: binary cache", err)
	}
	_, err = io.Copy(tmp, resp.Body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o700)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, file))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return errcode.Wrap(errcode.Transient, "k3s: downloading "+u, err)
	}
	return nil
}

// checksum returns the sha256 a release's checksum file gives for name.
func checksum(path, name string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", errcode.Wrap(errcode.Invalid, "k3s: checksums", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 && strings.TrimPrefix(fields[1], "*") == name {
			if len(fields[0]) != 64 {
				break
			}
			return strings.ToLower(fields[0]), nil
		}
	}
	return "", errcode.New(errcode.Invalid, fmt.Sprintf("k3s: %s has no checksum for %s", path, name))
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
