package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/node"
)

// runningK3s is a minimal node.System: a k3s server that is running.
type runningK3s struct{}

func (runningK3s) Facts(context.Context) (agent.Facts, error) {
	return agent.Facts{Hostname: "cp-0", OS: "linux", Arch: "amd64", Init: agent.Systemd}, nil
}
func (runningK3s) Role(context.Context) (agent.Role, error)           { return agent.RoleServer, nil }
func (runningK3s) ServiceState(context.Context) (string, error)       { return agent.StateActive, nil }
func (runningK3s) Service(context.Context, agent.ServiceAction) error { return nil }
func (runningK3s) Logs(_ context.Context, _ int, w io.Writer) error {
	_, err := io.WriteString(w, "k3s is fine\n")
	return err
}
func (r runningK3s) FollowLogs(ctx context.Context, n int, w io.Writer) error {
	return r.Logs(ctx, n, w)
}
func (runningK3s) K3sBinary() string { return "/usr/local/bin/k3s" }
func (runningK3s) K3sVersion(context.Context, string) (string, error) {
	return "v1.31.2+k3s1", nil
}

// A server over a System, called in process through its Handler (a real
// node serves it with Serve or ListenAndServe, over mutual TLS).
func ExampleNewServer() {
	srv, err := node.NewServer(node.ServerConfig{System: runningK3s{}, Version: "v1.2.3"})
	if err != nil {
		fmt.Println(err)
		return
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/info", nil))
	var info agent.Info
	if err := json.NewDecoder(rec.Body).Decode(&info); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rec.Code, rec.Header().Get(agent.HeaderAgentVersion))
	fmt.Println(info.Hostname, info.Role, info.K3sVersion, info.ServiceState, info.AgentVersion)
	// Output:
	// 200 v1.2.3
	// cp-0 server v1.31.2+k3s1 active v1.2.3
}
