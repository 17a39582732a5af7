package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/openctl/openctl/errcode"
)

// Download limits.
const (
	maxSumsBytes   = 1 << 20 // a sha256sum-<arch>.txt file
	maxBinaryBytes = 1 << 30 // a k3s binary is ~70 MiB
)

// releaseAssets names the k3s release files for a GOARCH: the binary and
// the checksum file that lists it.
func releaseAssets(arch string) (binary, sums string, err error) {
	switch arch {
	case "amd64":
		return "k3s", "sha256sum-amd64.txt", nil
	case "arm64":
		return "k3s-arm64", "sha256sum-arm64.txt", nil
	case "arm":
		return "k3s-armhf", "sha256sum-arm.txt", nil
	}
	return "", "", fmt.Errorf("agent: no k3s release for architecture %q: %w", arch, errcode.Invalid)
}

// parseSums finds the SHA-256 of asset in a sha256sum file: lines of
// "<64 hex digits>  <file name>" (a "*" before the name, binary mode, is
// allowed). The asset must be listed exactly once, or listed with one
// hash.
func parseSums(data []byte, asset string) ([]byte, error) {
	var found []byte
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		name := strings.TrimPrefix(f[1], "*")
		if name != asset {
			continue
		}
		sum, err := hex.DecodeString(f[0])
		if err != nil || len(sum) != sha256.Size {
			return nil, fmt.Errorf("agent: checksum file: malformed SHA-256 for %s: %w", asset, errcode.Internal)
		}
		if found != nil && !bytes.Equal(found, sum) {
			return nil, fmt.Errorf("agent: checksum file lists %s twice with different hashes: %w", asset, errcode.Internal)
		}
		found = sum
	}
	if found == nil {
		return nil, fmt.Errorf("agent: checksum file has no entry for %s: %w", asset, errcode.NotFound)
	}
	return found, nil
}

// defaultHTTPClient downloads releases: the environment's proxy settings,
// at most ten redirects and never from https down to http.
func defaultHTTPClient() *http.Client {
	return &http.Client{
		Transport: http.DefaultTransport.(*http.Transport).Clone(),
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
				return fmt.Errorf("refusing redirect from https to %s", req.URL.Scheme)
			}
			return nil
		},
	}
}

// download fetches the checksum file and the binary of version into a
// temporary file in dir and verifies the binary's SHA-256. It returns the
// temporary file's name; the file is mode 0755 and synced.
func (s *Server) download(ctx context.Context, version, asset, sumsName, dir string) (string, error) {
	base := s.releaseURL + "/" + url.PathEscape(version) + "/"
	var sums bytes.Buffer
	if err := s.fetch(ctx, base+sumsName, maxSumsBytes, &sums); err != nil {
		return "", err
	}
	want, err := parseSums(sums.Bytes(), asset)
	if err != nil {
		return "", &statusError{status: http.StatusBadGateway, err: err}
	}

	f, err := os.CreateTemp(dir, ".k3s-upgrade-*")
	if err != nil {
		return "", fmt.Errorf("agent: upgrade: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	h := sha256.New()
	if err := s.fetch(ctx, base+asset, maxBinaryBytes, io.MultiWriter(f, h)); err != nil {
		return "", err
	}
	if got := h.Sum(nil); subtle.ConstantTimeCompare(got, want) != 1 {
		return "", &statusError{status: http.StatusBadGateway, err: fmt.Errorf(
			"agent: upgrade: SHA-256 of %s %s is %x, the release lists %x; nothing was installed: %w",
			version, asset, got, want, errcode.Internal)}
	}
	if err := f.Chmod(0o755); err != nil {
		return "", fmt.Errorf("agent: upgrade: %w", err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("agent: upgrade: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("agent: upgrade: %w", err)
	}
	ok = true
	return tmp, nil
}

// fetch GETs rawURL into w, at most limit bytes, within ctx.
func (s *Server) fetch(ctx context.Context, rawURL string, limit int64, w io.Writer) error {
	fail := func(err error) error {
		if ctx.Err() != nil {
			err = errcode.Wrap(errcode.Transient, fmt.Sprintf("agent: download %s: no answer within %v", rawURL, s.downloadTimeout), err)
			return &statusError{status: http.StatusGatewayTimeout, err: err}
		}
		return &statusError{status: http.StatusBadGateway, err: errcode.Wrap(errcode.Transient, "agent: download "+rawURL, err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return errcode.Wrap(errcode.Internal, "agent: download", err)
	}
	resp, err := s.httpClient.Do(req)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("agent: download %s: release not found: %w", rawURL, errcode.NotFound)
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return &statusError{status: http.StatusBadGateway, err: fmt.Errorf("agent: download %s: %s: %w", rawURL, resp.Status, errcode.Transient)}
	default:
		return &statusError{status: http.StatusBadGateway, err: fmt.Errorf("agent: download %s: %s: %w", rawURL, resp.Status, errcode.Internal)}
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return fail(err)
	}
	if n > limit {
		return &statusError{status: http.StatusBadGateway, err: fmt.Errorf("agent: download %s: larger than %d bytes: %w", rawURL, limit, errcode.Internal)}
	}
	return nil
}
