package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/openctl/openctl/errcode"
)

// versionRE is the only shape of k3s version an upgrade accepts. It is
// checked before the version is placed in a URL or a file name.
var versionRE = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+\+k3s[0-9]+$`)

const (
	maxVersionLen  = 64
	maxSumsBytes   = 1 << 20 // a sha256sum-<arch>.txt file
	maxBinaryBytes = 1 << 30 // a k3s binary is ~70 MiB
	healthyChecks  = 2       // consecutive healthy polls the gate wants
	healthPollMin  = 50 * time.Millisecond
	healthPollMax  = 2 * time.Second
	previousSuffix = ".previous"
)

// ErrRolledBack is returned by [Client.Upgrade], together with the
// result, when the new k3s binary failed the health gate and the agent
// restored the previous one. Check it with errors.Is.
var ErrRolledBack = errors.New("agent: upgrade rolled back")

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

// decodeUpgradeRequest decodes and validates the body of POST
// /v1/upgrade/k3s: exactly one JSON object with the single field version,
// which must pass ValidateK3sVersion.
func decodeUpgradeRequest(r io.Reader) (UpgradeRequest, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var req UpgradeRequest
	tooLarge := func(err error) error {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return errcode.Wrap(errcode.Invalid, fmt.Sprintf("agent: request body over %d bytes", mbe.Limit), err)
		}
		return nil
	}
	if err := dec.Decode(&req); err != nil {
		if e := tooLarge(err); e != nil {
			return UpgradeRequest{}, e
		}
		return UpgradeRequest{}, errcode.Wrap(errcode.Invalid, "agent: upgrade request", err)
	}
	// The object may fit under the cap while the body does not (trailing
	// white space): that is still a body over the cap.
	if _, err := dec.Token(); err != io.EOF {
		if e := tooLarge(err); e != nil {
			return UpgradeRequest{}, e
		}
		return UpgradeRequest{}, fmt.Errorf("agent: upgrade request: data after the JSON object: %w", errcode.Invalid)
	}
	if err := ValidateK3sVersion(req.Version); err != nil {
		return UpgradeRequest{}, err
	}
	return req, nil
}

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

func (s *Server) handleUpgrade(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodPost) {
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeError(w, r, http.StatusUnsupportedMediaType, errcode.Invalid, "content type must be application/json")
			return
		}
	}
	req, err := decodeUpgradeRequest(r.Body)
	if err != nil {
		writeErr(w, r, err)
		return
	}
	auditAttrs(r, slog.String("version", req.Version))
	if !s.busy.TryLock() {
		writeError(w, r, http.StatusConflict, errcode.Conflict, "another upgrade or service action is in progress")
		return
	}
	defer s.busy.Unlock()
	// The download and the health gate outlast the server's write timeout.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.downloadTimeout + 3*s.healthTimeout + time.Minute))
	res, err := s.upgrade(r.Context(), req.Version)
	if err != nil {
		writeErr(w, r, err)
		return
	}
	setOutcome(r, res.Status)
	auditAttrs(r, slog.String("from", res.From))
	writeJSON(w, http.StatusOK, res)
}

// upgrade installs k3s version (already validated) and decides with the
// health gate whether to keep it.
func (s *Server) upgrade(ctx context.Context, version string) (*UpgradeResult, error) {
	if err := ValidateK3sVersion(version); err != nil {
		return nil, err
	}
	role, err := s.sys.Role(ctx)
	if err != nil {
		return nil, fmt.Errorf("agent: upgrade: k3s role: %w", err)
	}
	if role == RoleNone {
		return nil, fmt.Errorf("agent: upgrade: k3s is not installed: %w", errcode.NotFound)
	}
	bin := s.sys.K3sBinary()
	from, err := s.sys.K3sVersion(ctx, bin)
	if err != nil {
		s.log.Warn("agent: upgrade: installed k3s version unknown", "binary", bin, "err", err)
		from = ""
	}
	res := &UpgradeResult{From: from, To: version}
	if from == version {
		res.Status = UpgradeUnchanged
		res.ServiceState = s.serviceState(ctx)
		return res, nil
	}
	facts, err := s.sys.Facts(ctx)
	if err != nil {
		return nil, fmt.Errorf("agent: upgrade: host facts: %w", err)
	}
	asset, sums, err := releaseAssets(facts.Arch)
	if err != nil {
		return nil, err
	}

	dctx, cancel := context.WithTimeout(ctx, s.downloadTimeout)
	tmp, err := s.download(dctx, version, asset, sums, filepath.Dir(bin))
	cancel()
	if err != nil {
		return nil, err
	}

	// From the swap on, the upgrade is finished (kept or rolled back) even
	// if the client goes away.
	ctx = context.WithoutCancel(ctx)
	if err := swapIn(bin, tmp); err != nil {
		_ = os.Remove(tmp)
		return nil, err
	}
	s.log.Info("agent: upgrade: new k3s binary installed", "from", from, "to", version, "binary", bin)
	reason := s.healthGate(ctx, bin, version)
	if reason == "" {
		res.Status = UpgradeUpgraded
		res.ServiceState = s.serviceState(ctx)
		return res, nil
	}

	s.log.Warn("agent: upgrade: health gate failed, rolling back", "from", from, "to", version, "reason", reason)
	if err := restorePrevious(bin); err != nil {
		return nil, fmt.Errorf("agent: upgrade to %s failed (%s) and the previous binary could not be restored: %w", version, reason, err)
	}
	res.Status = UpgradeRolledBack
	res.Reason = reason
	rctx, cancel := context.WithTimeout(ctx, s.healthTimeout)
	defer cancel()
	if err := s.sys.Service(rctx, Restart); err != nil {
		res.Reason += "; restart after rollback: " + err.Error()
	}
	res.ServiceState = s.waitActive(rctx)
	return res, nil
}

func (s *Server) serviceState(ctx context.Context) string {
	st, err := s.sys.ServiceState(ctx)
	if err != nil {
		return StateUnknown
	}
	return st
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

// swapIn keeps the installed binary as bin.previous (a hard link, or a
// copy where links are not possible) and renames tmp over bin.
func swapIn(bin, tmp string) error {
	prev := bin + previousSuffix
	if err := os.Remove(prev); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("agent: upgrade: remove old %s: %w", prev, err)
	}
	if err := os.Link(bin, prev); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("agent: upgrade: no installed binary at %s to keep: %w", bin, errcode.NotFound)
		}
		if err := copyFile(bin, prev); err != nil {
			return fmt.Errorf("agent: upgrade: keep previous binary: %w", err)
		}
	}
	if err := os.Rename(tmp, bin); err != nil {
		return fmt.Errorf("agent: upgrade: install new binary: %w", err)
	}
	return syncDir(filepath.Dir(bin))
}

// restorePrevious renames bin.previous back over bin.
func restorePrevious(bin string) error {
	if err := os.Rename(bin+previousSuffix, bin); err != nil {
		return err
	}
	return syncDir(filepath.Dir(bin))
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("agent: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("agent: sync %s: %w", dir, err)
	}
	return nil
}

// healthGate restarts k3s and waits, within the health timeout, for the
// service to be active and the binary to report version on healthyChecks
// consecutive polls. It returns "" when healthy, or why not.
func (s *Server) healthGate(ctx context.Context, bin, version string) string {
	ctx, cancel := context.WithTimeout(ctx, s.healthTimeout)
	defer cancel()
	if err := s.sys.Service(ctx, Restart); err != nil {
		return "restart: " + err.Error()
	}
	wait := healthPollMin
	healthy := 0
	last := "no health check ran"
	for {
		switch st, err := s.sys.ServiceState(ctx); {
		case err != nil:
			last, healthy = "service state: "+err.Error(), 0
		case st != StateActive:
			last, healthy = "service is "+st, 0
		default:
			switch v, err := s.sys.K3sVersion(ctx, bin); {
			case err != nil:
				last, healthy = "k3s version: "+err.Error(), 0
			case v != version:
				last, healthy = "k3s reports "+v, 0
			default:
				healthy++
			}
		}
		if healthy >= healthyChecks {
			return ""
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Sprintf("not healthy within %v: %s", s.healthTimeout, last)
		case <-t.C:
		}
		if healthy == 0 {
			wait = min(2*wait, healthPollMax)
		}
	}
}

// waitActive polls the service state until it is active or ctx is done,
// and returns the last state seen.
func (s *Server) waitActive(ctx context.Context) string {
	wait := healthPollMin
	for {
		st := s.serviceState(ctx)
		if st == StateActive {
			return st
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return st
		case <-t.C:
		}
		wait = min(2*wait, healthPollMax)
	}
}
