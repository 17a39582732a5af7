package node

import (
	"fmt"
	"net/http"

	"github.com/openctl/openctl/agent"
)

// capabilities is what this agent advertises.
func capabilities() []string {
	return []string{agent.CapInfo, agent.CapLogs, agent.CapFollow, agent.CapService, agent.CapUpgrade, agent.CapRollback}
}

func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	ctx := r.Context()
	facts, err := s.sys.Facts(ctx)
	if err != nil {
		writeErr(w, r, fmt.Errorf("agent: host facts: %w", err))
		return
	}
	info := agent.Info{
		Facts:        facts,
		AgentVersion: s.version,
		Capabilities: capabilities(),
		ServiceState: agent.StateUnknown,
	}
	if c := s.creds.Load(); c != nil {
		info.AcceptedCAs, info.ServerCert = c.bundle.Fingerprints(), c.cert
	}
	role, err := s.sys.Role(ctx)
	if err != nil {
		info.Problems = append(info.Problems, "role: "+err.Error())
	}
	info.Role = role
	if err == nil && role != agent.RoleNone {
		if st, err := s.sys.ServiceState(ctx); err != nil {
			info.Problems = append(info.Problems, "service state: "+err.Error())
		} else {
			info.ServiceState = st
		}
		if v, err := s.sys.K3sVersion(ctx, s.sys.K3sBinary()); err != nil {
			info.Problems = append(info.Problems, "k3s version: "+err.Error())
		} else {
			info.K3sVersion = v
		}
	}
	writeJSON(w, http.StatusOK, info)
}
