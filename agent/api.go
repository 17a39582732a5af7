package agent

// InitSystem names the node's service manager.
type InitSystem string

// The init systems the agent knows how to drive.
const (
	Systemd InitSystem = "systemd"
	OpenRC  InitSystem = "openrc"
)

// Role is the k3s role installed on the node.
type Role string

// The k3s roles. The role decides the service name.
const (
	RoleServer Role = "server" // service "k3s"
	RoleAgent  Role = "agent"  // service "k3s-agent"
	RoleNone   Role = ""       // k3s not installed
)

// ServiceName returns the name of the k3s service for the role: "k3s" for
// RoleServer, "k3s-agent" for RoleAgent and "" for RoleNone or an unknown
// role.
func (r Role) ServiceName() string {
	switch r {
	case RoleServer:
		return "k3s"
	case RoleAgent:
		return "k3s-agent"
	}
	return ""
}

// ServiceAction is a service-control verb.
type ServiceAction string

// The service-control verbs accepted by POST /v1/service/k3s/{action}.
const (
	Start   ServiceAction = "start"
	Stop    ServiceAction = "stop"
	Restart ServiceAction = "restart"
)

// Valid reports whether a is one of Start, Stop or Restart.
func (a ServiceAction) Valid() bool {
	return a == Start || a == Stop || a == Restart
}

// Service states, in [Info.ServiceState] and [ServiceResult.ServiceState]
// (reported by node.System.ServiceState).
const (
	StateActive   = "active"
	StateInactive = "inactive"
	StateFailed   = "failed"
	StateUnknown  = "unknown"
)

// Facts are host facts reported by /v1/info.
type Facts struct {
	Hostname string     `json:"hostname"` // os.Hostname
	OS       string     `json:"os"`       // runtime.GOOS
	Arch     string     `json:"arch"`     // runtime.GOARCH
	Kernel   string     `json:"kernel"`   // uname -r equivalent
	Distro   string     `json:"distro"`   // PRETTY_NAME from /etc/os-release
	Init     InitSystem `json:"init"`     // detected at start
}

// DefaultPort is the agent's TCP port.
const DefaultPort = 9443

// The range of the lines parameter of GET /v1/logs/k3s.
const (
	MinLogLines     = 1
	MaxLogLines     = 5000
	DefaultLogLines = 100
)

// Capabilities advertised in [Info.Capabilities]. A client checks one with
// [Info.Has] before calling an endpoint an older agent may lack.
const (
	CapInfo     = "info"             // GET /v1/info
	CapLogs     = "logs"             // GET /v1/logs/k3s
	CapFollow   = "logs-follow"      // GET /v1/logs/k3s?follow=true
	CapService  = "service"          // POST /v1/service/k3s/{start,stop,restart}
	CapUpgrade  = "upgrade"          // POST /v1/upgrade/k3s
	CapRollback = "upgrade-rollback" // a failed upgrade is rolled back
)

// Info is the body of GET /v1/info: the host's facts (inlined) and the
// state of k3s and of the agent.
type Info struct {
	Facts
	// K3sVersion is the installed binary's version ("" if it could not be
	// read; Problems says why).
	K3sVersion string `json:"k3sVersion"`
	// Role is the installed k3s role ("" if k3s is not installed).
	Role Role `json:"role"`
	// ServiceState is "active", "inactive", "failed" or "unknown".
	ServiceState string `json:"serviceState"`
	// AgentVersion is the version the agent reports (node.ServerConfig.Version;
	// "" if it reports none).
	AgentVersion string `json:"agentVersion"`
	// Capabilities lists the endpoints and behaviours the agent supports.
	Capabilities []string `json:"capabilities"`
	// AcceptedCAs are the fingerprints (pki.Fingerprint) of the CAs whose
	// client certificates the agent accepts, and ServerCert the
	// fingerprint of the certificate it serves: what its last credential
	// (re)load installed, which a CA rotation checks before its next step.
	AcceptedCAs []string `json:"acceptedCAs,omitempty"`
	ServerCert  string   `json:"serverCert,omitempty"`
	// Problems lists facts that could not be read; the others are still
	// reported.
	Problems []string `json:"problems,omitempty"`
}

// Has reports whether the agent advertises capability c.
func (i *Info) Has(c string) bool {
	for _, x := range i.Capabilities {
		if x == c {
			return true
		}
	}
	return false
}

// UpgradeRequest is the body of POST /v1/upgrade/k3s.
type UpgradeRequest struct {
	// Version is the target k3s release, "vX.Y.Z+k3sN".
	Version string `json:"version"`
}

// Upgrade outcomes, in [UpgradeResult.Status].
const (
	// UpgradeUpgraded: the new binary is installed and passed the health gate.
	UpgradeUpgraded = "upgraded"
	// UpgradeUnchanged: the node already ran the requested version.
	UpgradeUnchanged = "unchanged"
	// UpgradeRolledBack: the new binary failed the health gate and the
	// previous one was restored and restarted.
	UpgradeRolledBack = "rolled-back"
)

// UpgradeResult is the body of a completed POST /v1/upgrade/k3s.
type UpgradeResult struct {
	// Status is UpgradeUpgraded, UpgradeUnchanged or UpgradeRolledBack.
	Status string `json:"status"`
	// From is the version installed before the request.
	From string `json:"from"`
	// To is the requested version.
	To string `json:"to"`
	// Reason says why the upgrade was rolled back.
	Reason string `json:"reason,omitempty"`
	// ServiceState is the k3s service state when the agent answered.
	ServiceState string `json:"serviceState,omitempty"`
}

// MaxRequestBody is the largest request body an agent reads; a larger
// one is refused with 413 and the code INVALID_REQUEST.
const MaxRequestBody = 4 << 10

// ErrorBody is the body of every error response: a code of package
// errcode (for example "CONFLICT") and a message.
type ErrorBody struct {
	Code    string `json:"code"`    // an errcode.Code, such as "NOT_FOUND"
	Message string `json:"message"` // what went wrong, for people
}

// HTTP header names of the agent protocol.
const (
	// HeaderAgentVersion carries the agent's Version on every response.
	HeaderAgentVersion = "Openctl-Agent-Version"
	// TrailerLogsError is a trailer of GET /v1/logs/k3s, set when the log
	// stream failed after it had started ("CODE: message").
	TrailerLogsError = "Openctl-Error"
)

// ServiceResult is the body of a successful POST /v1/service/k3s/{action}.
type ServiceResult struct {
	// Action is the action that ran.
	Action ServiceAction `json:"action"`
	// ServiceState is the k3s service state after it ("unknown" if it
	// could not be read).
	ServiceState string `json:"serviceState"`
}
