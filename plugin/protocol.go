package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

// ProtocolVersion is the version of the plugin protocol this package
// speaks: requests carry it as "version", and a plugin whose capabilities
// name another major version is refused.
const ProtocolVersion = "1.0"

// The actions of the protocol, as a plugin lists them per resource in its
// capabilities and as requests carry them.
const (
	ActionGet    = "get"
	ActionList   = "list"
	ActionCreate = "create"
	ActionApply  = "apply"
	ActionDelete = "delete"
)

// Capabilities is what a plugin prints for --capabilities.
type Capabilities struct {
	ProviderName     string               `json:"providerName"`
	ProtocolVersion  string               `json:"protocolVersion"`
	Resources        []ResourceCapability `json:"resources"`
	ComputeProvider  *ComputeProvider     `json:"computeProvider,omitempty"`
	SupportsDispatch bool                 `json:"supportsDispatch,omitempty"`
	Subcommands      []Subcommand         `json:"subcommands,omitempty"`
	// SecretConfigFields are keys of the plugin's configuration section
	// whose values are secrets (an openctl extension; keys ending in
	// "Secret", "password", "token" or "apiKey" are secrets anyway).
	SecretConfigFields []string `json:"secretConfigFields,omitempty"`
}

// ResourceCapability is one kind a plugin serves and the actions it
// supports on it.
type ResourceCapability struct {
	Kind    string   `json:"kind"`
	Plural  string   `json:"plural,omitempty"`
	Actions []string `json:"actions"`
}

// Supports reports whether the kind supports action.
func (r ResourceCapability) Supports(action string) bool { return slices.Contains(r.Actions, action) }

// ComputeProvider says which compute contract a plugin implements.
type ComputeProvider struct {
	Implements string   `json:"implements"`
	Features   []string `json:"features,omitempty"`
}

// Subcommand is a plugin-defined operation (the seed's
// SubcommandDefinition); openctl offers it as a registry action.
type Subcommand struct {
	Name           string     `json:"name"`
	Short          string     `json:"short"`
	Long           string     `json:"long,omitempty"`
	Action         string     `json:"action"`
	Kind           string     `json:"kind,omitempty"` // openctl extension; default: the plugin's first kind
	PositionalArgs []PosArg   `json:"positionalArgs,omitempty"`
	Flags          []FlagSpec `json:"flags,omitempty"`
}

// PosArg is a positional argument of a subcommand.
type PosArg struct {
	Name     string `json:"name"`
	Required bool   `json:"required,omitempty"`
}

// FlagSpec is a flag of a subcommand.
type FlagSpec struct {
	Name     string `json:"name"`
	Short    string `json:"short,omitempty"`
	Type     string `json:"type"`
	Default  string `json:"default,omitempty"`
	Required bool   `json:"required,omitempty"`
	Help     string `json:"help,omitempty"`
}

// Request is one call to a plugin, written as one JSON document on its
// standard input.
type Request struct {
	Version           string             `json:"version"`
	Action            string             `json:"action"`
	ResourceType      string             `json:"resourceType,omitempty"`
	ResourceName      string             `json:"resourceName,omitempty"`
	Manifest          *manifest.Resource `json:"manifest,omitempty"`
	Config            map[string]any     `json:"config,omitempty"`
	ContinuationToken string             `json:"continuationToken"`
	DispatchResults   []DispatchResult   `json:"dispatchResults"`
	Args              map[string]any     `json:"args,omitempty"`
}

// Response is a plugin's answer, one JSON document on its standard
// output.
type Response struct {
	Status           string               `json:"status"`
	Resource         *manifest.Resource   `json:"resource,omitempty"`
	Resources        []*manifest.Resource `json:"resources,omitempty"`
	Message          string               `json:"message,omitempty"`
	Error            *ErrorBody           `json:"error,omitempty"`
	DispatchRequests []DispatchRequest    `json:"dispatchRequests,omitempty"`
	Continuation     *Continuation        `json:"continuation,omitempty"`
	StateUpdate      *StateUpdate         `json:"stateUpdate,omitempty"`
}

// ErrorBody is the error of a response whose status is "error".
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details string `json:"details,omitempty"`
}

// DispatchRequest asks openctl to apply a resource of another provider.
type DispatchRequest struct {
	ID           string             `json:"id"`
	Provider     string             `json:"provider"`
	Action       string             `json:"action"`
	ResourceType string             `json:"resourceType"`
	Manifest     *manifest.Resource `json:"manifest,omitempty"`
	WaitFor      *WaitFor           `json:"waitFor,omitempty"`
}

// WaitFor is a dispatch request's wait condition.
type WaitFor struct {
	Field   string `json:"field"`
	Value   any    `json:"value"`
	Timeout string `json:"timeout,omitempty"`
}

// Continuation carries the token the next request sends back.
type Continuation struct {
	Token string `json:"token"`
}

// DispatchResult is the outcome of one dispatch request.
type DispatchResult struct {
	ID       string             `json:"id"`
	Status   string             `json:"status"`
	Resource *manifest.Resource `json:"resource,omitempty"`
	Error    *ErrorBody         `json:"error,omitempty"`
}

// The operations of a StateUpdate.
const (
	StateSave   = "save"
	StateDelete = "delete"
)

// StateUpdate asks openctl to record (operation "save") or forget
// ("delete") the state of the resource the request is about.
type StateUpdate struct {
	Operation string `json:"operation"`
	Provider  string `json:"provider,omitempty"`
	Name      string `json:"name,omitempty"`
	State     *State `json:"state,omitempty"`
}

// State is the resource a StateUpdate saves: what openctl records for it
// when the response carries no resource, and its children.
type State struct {
	APIVersion string             `json:"apiVersion,omitempty"`
	Kind       string             `json:"kind,omitempty"`
	Metadata   *manifest.Metadata `json:"metadata,omitempty"`
	Spec       map[string]any     `json:"spec,omitempty"`
	Status     map[string]any     `json:"status,omitempty"`
	// Children are resources of other providers the plugin made for
	// this one; deleting it deletes them first.
	Children []ChildRef `json:"children,omitempty"`
}

// ChildRef names a child resource by provider, kind and name, as the
// protocol does.
type ChildRef struct {
	Provider string `json:"provider"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
}

// ErrProtocol is matched (errors.Is) by every error about a plugin's
// output that does not follow the protocol: invalid or trailing JSON,
// unknown fields, a bad status, a response that is too large.
var ErrProtocol = errors.New("plugin: protocol violation")

// decodeStrict decodes data, exactly one JSON document, into v,
// refusing unknown fields.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: more than one JSON document", ErrProtocol)
	}
	return nil
}

// DecodeResponse decodes a plugin's response strictly and checks its
// shape: status is "success" or "error", an error response has an error
// with a code, a success response has none.
func DecodeResponse(data []byte) (*Response, error) {
	var r Response
	if err := decodeStrict(data, &r); err != nil {
		return nil, err
	}
	switch r.Status {
	case "success":
		if r.Error != nil {
			return nil, fmt.Errorf("%w: a success response with an error", ErrProtocol)
		}
	case "error":
		if r.Error == nil || r.Error.Code == "" {
			return nil, fmt.Errorf("%w: an error response without an error code", ErrProtocol)
		}
	default:
		return nil, fmt.Errorf("%w: status %q, want \"success\" or \"error\"", ErrProtocol, r.Status)
	}
	if u := r.StateUpdate; u != nil {
		if u.Operation != StateSave && u.Operation != StateDelete {
			return nil, fmt.Errorf("%w: stateUpdate operation %q, want \"save\" or \"delete\"", ErrProtocol, u.Operation)
		}
		if u.State != nil {
			for i, c := range u.State.Children {
				if c.Provider == "" || c.Kind == "" || c.Name == "" {
					return nil, fmt.Errorf("%w: stateUpdate child %d lacks a provider, kind or name", ErrProtocol, i)
				}
			}
		}
	}
	return &r, nil
}

// DecodeCapabilities decodes a plugin's capabilities strictly and checks
// them: a provider name that is a DNS-1123 label, a protocol version of
// the same major version as ProtocolVersion, at least one kind, known
// actions.
func DecodeCapabilities(data []byte) (*Capabilities, error) {
	var c Capabilities
	if err := decodeStrict(data, &c); err != nil {
		return nil, err
	}
	if !isLabel(c.ProviderName) {
		return nil, fmt.Errorf("%w: providerName %q is not a DNS-1123 label", ErrProtocol, c.ProviderName)
	}
	if !compatible(c.ProtocolVersion) {
		return nil, &VersionError{Got: c.ProtocolVersion}
	}
	if len(c.Resources) == 0 {
		return nil, fmt.Errorf("%w: no resources", ErrProtocol)
	}
	seen := map[string]bool{}
	for _, r := range c.Resources {
		if r.Kind == "" || seen[r.Kind] {
			return nil, fmt.Errorf("%w: resource kind %q empty or listed twice", ErrProtocol, r.Kind)
		}
		seen[r.Kind] = true
		for _, a := range r.Actions {
			if !slices.Contains([]string{ActionGet, ActionList, ActionCreate, ActionApply, ActionDelete}, a) {
				return nil, fmt.Errorf("%w: kind %s: unknown action %q", ErrProtocol, r.Kind, a)
			}
		}
		if !r.Supports(ActionGet) {
			return nil, fmt.Errorf("%w: kind %s: the get action is required", ErrProtocol, r.Kind)
		}
	}
	for _, s := range c.Subcommands {
		if s.Name == "" || s.Action == "" {
			return nil, fmt.Errorf("%w: a subcommand without a name or an action", ErrProtocol)
		}
		if s.Kind != "" && !seen[s.Kind] {
			return nil, fmt.Errorf("%w: subcommand %s: unknown kind %q", ErrProtocol, s.Name, s.Kind)
		}
		for _, f := range s.Flags {
			if f.Name == "" || !slices.Contains([]string{"string", "int", "bool", "duration"}, f.Type) {
				return nil, fmt.Errorf("%w: subcommand %s: flag %q of type %q (want string, int, bool or duration)", ErrProtocol, s.Name, f.Name, f.Type)
			}
		}
	}
	return &c, nil
}

// VersionError reports a plugin speaking a protocol version this package
// does not. It matches errcode.Invalid.
type VersionError struct {
	Path string // the plugin executable, when known
	Got  string // the plugin's protocolVersion
}

func (e *VersionError) Error() string {
	p := "plugin"
	if e.Path != "" {
		p = "plugin " + e.Path
	}
	return fmt.Sprintf("%s speaks protocol version %q; this openctl speaks %s (same major version required)", p, e.Got, ProtocolVersion)
}

// Is reports whether target is errcode.Invalid or ErrProtocol.
func (e *VersionError) Is(target error) bool {
	return target == errcode.Invalid || target == ErrProtocol
}

// compatible reports whether v has the major version of ProtocolVersion.
func compatible(v string) bool {
	major, _, _ := strings.Cut(v, ".")
	want, _, _ := strings.Cut(ProtocolVersion, ".")
	_, err := strconv.Atoi(major)
	return err == nil && major == want
}

// isLabel reports whether s is a DNS-1123 label.
func isLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}
