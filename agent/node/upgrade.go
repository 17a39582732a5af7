package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
)

const (
	healthyChecks  = 2 // consecutive healthy polls the gate wants
	previousSuffix = ".previous"
)

// healthPoll spaces the health gate's polls of the service: 50ms doubling
// up to 2s.
func healthPoll() backoff.Policy {
	return backoff.Policy{Initial: 50 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2}
}

// decodeUpgradeRequest decodes and validates the body of POST
// /v1/upgrade/k3s: exactly one JSON object with the single field version,
// which must pass ValidateK3sVersion.
func decodeUpgradeRequest(r io.Reader) (agent.UpgradeRequest, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var req agent.UpgradeRequest
	tooLarge := func(err error) error {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return errcode.Wrap(errcode.Invalid, fmt.Sprintf("agent: request body over %d bytes", mbe.Limit), err)
		}
		return nil
	}
	if err := dec.Decode(&req); err != nil {
		if e := tooLarge(err); e != nil {
			return agent.UpgradeRequest{}, e
		}
		return agent.UpgradeRequest{}, errcode.Wrap(errcode.Invalid, "agent: upgrade request", err)
	}
	// The object may fit under the cap while the body does not (trailing
	// white space): that is still a body over the cap.
	if _, err := dec.Token(); err != io.EOF {
		if e := tooLarge(err); e != nil {
			return agent.UpgradeRequest{}, e
		}
		return agent.UpgradeRequest{}, fmt.Errorf("agent: upgrade request: data after the JSON object: %w", errcode.Invalid)
	}
	if err := agent.ValidateK3sVersion(req.Version); err != nil {
		return agent.UpgradeRequest{}, err
	}
	return req, nil
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
func (s *Server) upgrade(ctx context.Context, version string) (*agent.UpgradeResult, error) {
	if err := agent.ValidateK3sVersion(version); err != nil {
		return nil, err
	}
	role, err := s.sys.Role(ctx)
	if err != nil {
		return nil, fmt.Errorf("agent: upgrade: k3s role: %w", err)
	}
	if role == agent.RoleNone {
		return nil, fmt.Errorf("agent: upgrade: k3s is not installed: %w", errcode.NotFound)
	}
	bin := s.sys.K3sBinary()
	from, err := s.sys.K3sVersion(ctx, bin)
	if err != nil {
		s.log.Warn("agent: upgrade: installed k3s version unknown", "binary", bin, "err", err)
		from = ""
	}
	res := &agent.UpgradeResult{From: from, To: version}
	if from == version {
		res.Status = agent.UpgradeUnchanged
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
		res.Status = agent.UpgradeUpgraded
		res.ServiceState = s.serviceState(ctx)
		return res, nil
	}

	s.log.Warn("agent: upgrade: health gate failed, rolling back", "from", from, "to", version, "reason", reason)
	if err := restorePrevious(bin); err != nil {
		return nil, fmt.Errorf("agent: upgrade to %s failed (%s) and the previous binary could not be restored: %w", version, reason, err)
	}
	res.Status = agent.UpgradeRolledBack
	res.Reason = reason
	rctx, cancel := context.WithTimeout(ctx, s.healthTimeout)
	defer cancel()
	ready := s.watchReady(rctx)
	restartErr := s.sys.Service(rctx, agent.Restart)
	if restartErr != nil {
		res.Reason += "; restart after rollback: " + restartErr.Error()
	}
	res.ServiceState = s.waitActive(rctx)
	if restartErr == nil && ready != nil && res.ServiceState == agent.StateActive && !waitReady(rctx, ready) {
		res.Reason += fmt.Sprintf("; the previous k3s has not reported that it is up and running within %v", s.healthTimeout)
	}
	return res, nil
}

// watchReady starts watching k3s for readiness if the System can
// (ReadyWatcher); nil means the service state alone decides.
func (s *Server) watchReady(ctx context.Context) func(context.Context) (bool, error) {
	w, ok := s.sys.(ReadyWatcher)
	if !ok {
		return nil
	}
	ready, err := w.WatchReady(ctx)
	if err != nil {
		s.log.Warn("agent: upgrade: cannot watch k3s for readiness; the service state decides", "err", err)
		return nil
	}
	return ready
}

// waitReady polls ready until it reports true (true) or ctx is done
// (false).
func waitReady(ctx context.Context, ready func(context.Context) (bool, error)) bool {
	polls := healthPoll().Start()
	for {
		if ok, err := ready(ctx); err == nil && ok {
			return true
		}
		if polls.Wait(ctx) != nil {
			return false
		}
	}
}

func (s *Server) serviceState(ctx context.Context) string {
	st, err := s.sys.ServiceState(ctx)
	if err != nil {
		return agent.StateUnknown
	}
	return st
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
// consecutive polls, and, if the System is a ReadyWatcher, for k3s to
// report that it is up and running. It returns "" when healthy, or why
// not: at once when the binary reports another version, which no wait
// would change.
func (s *Server) healthGate(ctx context.Context, bin, version string) string {
	ctx, cancel := context.WithTimeout(ctx, s.healthTimeout)
	defer cancel()
	ready := s.watchReady(ctx)
	if err := s.sys.Service(ctx, agent.Restart); err != nil {
		return "restart: " + err.Error()
	}
	// The polls slow down while the service is not healthy and keep their
	// pace once it is, so that the consecutive healthy polls come quickly.
	polls := healthPoll().Start()
	wait := polls.Next()
	healthy := 0
	last := "no health check ran"
	for {
		switch st, err := s.sys.ServiceState(ctx); {
		case err != nil:
			last, healthy = "service state: "+err.Error(), 0
		case st != agent.StateActive:
			last, healthy = "service is "+st, 0
		default:
			switch v, err := s.sys.K3sVersion(ctx, bin); {
			case err != nil:
				last, healthy = "k3s version: "+err.Error(), 0
			case v != version:
				// The installed file will not start reporting another
				// version: the release is wrong, waiting cannot help.
				return fmt.Sprintf("the new binary reports %s, not %s", v, version)
			case ready == nil:
				healthy++
			default:
				switch ok, err := ready(ctx); {
				case err != nil:
					last, healthy = "k3s readiness: "+err.Error(), 0
				case !ok:
					last, healthy = "k3s has not reported that it is up and running since the restart", 0
				default:
					healthy++
				}
			}
		}
		if healthy >= healthyChecks {
			return ""
		}
		if backoff.Sleep(ctx, wait) != nil {
			return fmt.Sprintf("not healthy within %v: %s", s.healthTimeout, last)
		}
		if healthy == 0 {
			wait = polls.Next()
		}
	}
}

// waitActive polls the service state until it is active or ctx is done,
// and returns the last state seen.
func (s *Server) waitActive(ctx context.Context) string {
	polls := healthPoll().Start()
	for {
		st := s.serviceState(ctx)
		if st == agent.StateActive {
			return st
		}
		if polls.Wait(ctx) != nil {
			return st
		}
	}
}
