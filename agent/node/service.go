package node

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/errcode"
)

// serviceTimeout bounds a service action; it runs to completion or to
// this timeout even if the client goes away.
const serviceTimeout = 2 * time.Minute

func (s *Server) handleService(w http.ResponseWriter, r *http.Request) {
	action := agent.ServiceAction(r.PathValue("action"))
	if !action.Valid() {
		writeError(w, r, http.StatusNotFound, errcode.NotFound, fmt.Sprintf("unknown service action %q (want start, stop or restart)", r.PathValue("action")))
		return
	}
	if !allow(w, r, http.MethodPost) {
		return
	}
	if !s.busy.TryLock() {
		writeError(w, r, http.StatusConflict, errcode.Conflict, "another service action or upgrade is in progress")
		return
	}
	defer s.busy.Unlock()
	// A service action is not abandoned halfway because the client went
	// away; it runs to completion or to serviceTimeout.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), serviceTimeout)
	defer cancel()
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(serviceTimeout + writeTimeout))
	role, err := s.sys.Role(ctx)
	if err != nil {
		writeErr(w, r, fmt.Errorf("agent: k3s role: %w", err))
		return
	}
	if role == agent.RoleNone {
		writeError(w, r, http.StatusNotFound, errcode.NotFound, "k3s is not installed")
		return
	}
	if err := s.sys.Service(ctx, action); err != nil {
		writeErr(w, r, fmt.Errorf("agent: %s %s: %w", action, role.ServiceName(), err))
		return
	}
	st, err := s.sys.ServiceState(ctx)
	if err != nil {
		st = agent.StateUnknown
	}
	writeJSON(w, http.StatusOK, agent.ServiceResult{Action: action, ServiceState: st})
}
