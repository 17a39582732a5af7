package manifest

import (
	"fmt"
	"strings"

	"github.com/openctl/openctl/errcode"
)

// Owner labels: a child manifest produced by a composite provider's Plan
// carries the kind and name of the resource that owns it.
const (
	LabelOwnerKind       = "openctl.io/owner-kind"
	LabelOwnerName       = "openctl.io/owner-name"
	LabelOwnerAPIVersion = "openctl.io/owner-api-version"
)

// Resource is one Kubernetes-style manifest: what the user wrote (spec) and
// what the provider reports (status). Spec and Status hold only normalised
// values (see [Normalize]): map[string]any, []any, string, bool, int64,
// float64 and nil.
//
// A Resource is a plain value; it is not safe for concurrent mutation. Use
// [Resource.DeepCopy] before handing one to another goroutine that may
// change it.
type Resource struct {
	APIVersion string         `json:"apiVersion" yaml:"apiVersion"`
	Kind       string         `json:"kind" yaml:"kind"`
	Metadata   Metadata       `json:"metadata" yaml:"metadata"`
	Spec       map[string]any `json:"spec,omitempty" yaml:"spec,omitempty"`
	Status     map[string]any `json:"status,omitempty" yaml:"status,omitempty"`

	// Source is where the manifest was read from, if it was decoded from a
	// file or stream. It is not serialised.
	Source Source `json:"-" yaml:"-"`
}

// Metadata is the standard object metadata.
type Metadata struct {
	Name        string            `json:"name" yaml:"name"`
	Namespace   string            `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty" yaml:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty" yaml:"annotations,omitempty"`
}

// Source locates a manifest in its input: the file name ("-" or "<stdin>"
// for standard input), the 1-based line where the document starts and the
// 0-based index of the document within the file. A decoded resource's
// Source can also find where each field of its spec is written
// ([Source.Field], [Resource.Locate]).
type Source struct {
	File  string
	Line  int
	Index int

	in *input // the input the resource was decoded from
}

// Field returns where the spec field at path (a path as errors name it:
// "spec.k3s.version", "spec.disks[0].size") is written: the line and
// column of its key (of its value, for a list element), or, for a field
// the input does not hold, of the closest enclosing field it does hold.
// It returns the document's own line and column 0 when it knows none: a
// resource built in code, or read back from a saved plan.
//
// The decoder does not keep positions: the first call for an input
// decodes that input again to find them (the input's documents share the
// result). It is meant for reporting errors.
func (s Source) Field(path string) (line, col int) {
	return s.fieldIn(s.in.positions(s.Index), path)
}

// fieldIn is Field with the resource's positions found.
func (s Source) fieldIn(fields map[string]position, path string) (line, col int) {
	for p := path; p != ""; p = parentPath(p) {
		if at, ok := fields[p]; ok {
			return int(at.line), int(at.col)
		}
	}
	return s.Line, 0
}

// parentPath drops the last key or index of a field path ("spec.a[0]" →
// "spec.a", "spec.a" → "spec", "spec" → "").
func parentPath(p string) string {
	if i := strings.LastIndexAny(p, ".["); i > 0 {
		return p[:i]
	}
	return ""
}

// String renders the source as "file:line", or "" when unknown.
func (s Source) String() string {
	if s.File == "" {
		return ""
	}
	if s.Line > 0 {
		return fmt.Sprintf("%s:%d", s.File, s.Line)
	}
	return s.File
}

// ID identifies a resource: its apiVersion, kind and name. IDs are
// comparable and can be used as map keys.
type ID struct {
	APIVersion string `json:"apiVersion" yaml:"apiVersion"`
	Kind       string `json:"kind" yaml:"kind"`
	Name       string `json:"name" yaml:"name"`
}

// ID returns the resource's identity.
func (r *Resource) ID() ID {
	return ID{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Metadata.Name}
}

// String renders the ID as "apiVersion/kind/name", for example
// "proxmox.openctl.io/v1/VirtualMachine/web-01". [ParseID] reverses it.
func (id ID) String() string {
	return id.APIVersion + "/" + id.Kind + "/" + id.Name
}

// Short renders the ID as "kind/name", the form used in messages.
func (id ID) Short() string { return id.Kind + "/" + id.Name }

// Group returns the API group of the ID's apiVersion ("proxmox.openctl.io"
// for "proxmox.openctl.io/v1"), or "" if the apiVersion is malformed.
func (id ID) Group() string {
	g, _, err := SplitAPIVersion(id.APIVersion)
	if err != nil {
		return ""
	}
	return g
}

// Less orders IDs by apiVersion, kind, then name.
func (id ID) Less(o ID) bool { return id.Compare(o) < 0 }

// Compare returns -1, 0 or +1 ordering IDs by apiVersion, kind, then name.
func (id ID) Compare(o ID) int {
	if c := strings.Compare(id.APIVersion, o.APIVersion); c != 0 {
		return c
	}
	if c := strings.Compare(id.Kind, o.Kind); c != 0 {
		return c
	}
	return strings.Compare(id.Name, o.Name)
}

// Validate checks that the ID's apiVersion has the form <group>/<version>
// (see [SplitAPIVersion]), that kind is set and that name is a
// DNS-1123 label.
func (id ID) Validate() error {
	if _, _, err := SplitAPIVersion(id.APIVersion); err != nil {
		return err
	}
	if msg := kindProblem(id.Kind); msg != "" {
		return errcode.New(errcode.Invalid, "manifest: "+msg)
	}
	return ValidateName(id.Name)
}

// kindProblem describes what is wrong with kind, or returns "".
func kindProblem(kind string) string {
	switch {
	case kind == "":
		return "kind is empty"
	case !isKind(kind):
		return fmt.Sprintf("kind %q is not a valid kind (letters and digits, starting with an upper-case letter)", kind)
	}
	return ""
}

// ParseID parses "apiVersion/kind/name" as produced by [ID.String].
func ParseID(s string) (ID, error) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return ID{}, errcode.New(errcode.Invalid, fmt.Sprintf("manifest: id %q: want apiVersion/kind/name", s))
	}
	j := strings.LastIndexByte(s[:i], '/')
	if j < 0 {
		return ID{}, errcode.New(errcode.Invalid, fmt.Sprintf("manifest: id %q: want apiVersion/kind/name", s))
	}
	id := ID{APIVersion: s[:j], Kind: s[j+1 : i], Name: s[i+1:]}
	if err := id.Validate(); err != nil {
		return ID{}, err
	}
	return id, nil
}

// APIGroupSuffix is the suffix of the API groups of openctl's built-in
// providers: the provider named "proxmox" serves proxmox.openctl.io.
// A third-party provider may serve any group (see [SplitAPIVersion]).
const APIGroupSuffix = ".openctl.io"

// maxGroupLen is the longest API group: a DNS subdomain.
const maxGroupLen = 253

// SplitAPIVersion splits "<group>/<version>" into the API group and the
// version. The group is a DNS-1123 subdomain of at least two labels, as a
// Kubernetes API group is ("proxmox.openctl.io", "files.example.com");
// the version is "v1", "v1beta1", "v2alpha3" and the like. Anything else
// is an Invalid error. (Hand-written rather than a regexp: it runs on
// every provider lookup.)
func SplitAPIVersion(apiVersion string) (group, version string, err error) {
	group, version, ok := splitAPIVersion(apiVersion)
	if !ok {
		return "", "", errcode.New(errcode.Invalid, "manifest: "+apiVersionProblem(apiVersion))
	}
	return group, version, nil
}

func splitAPIVersion(apiVersion string) (group, version string, ok bool) {
	group, version, ok = strings.Cut(apiVersion, "/")
	if !ok || groupProblem(group) != "" || !isVersion(version) {
		return "", "", false
	}
	return group, version, true
}

// ValidateGroup checks that group is an API group: a DNS-1123 subdomain
// of at least two labels ("files.example.com"). The error matches
// errcode.Invalid.
func ValidateGroup(group string) error {
	if msg := groupProblem(group); msg != "" {
		return errcode.New(errcode.Invalid, "manifest: "+msg)
	}
	return nil
}

// groupProblem describes what is wrong with an API group, or returns "".
func groupProblem(group string) string {
	switch {
	case group == "":
		return "API group is empty"
	case len(group) > maxGroupLen:
		return fmt.Sprintf("API group %q is longer than %d characters", group, maxGroupLen)
	case !strings.Contains(group, "."):
		return fmt.Sprintf("API group %q is not a DNS subdomain of at least two labels (for example %s%s or files.example.com)", group, group, APIGroupSuffix)
	}
	for l := range strings.SplitSeq(group, ".") {
		if len(l) > 63 || !isDNSLabel(l) {
			return fmt.Sprintf("API group %q is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', each part starting and ending with a letter or digit)", group)
		}
	}
	return ""
}

// apiVersionProblem describes what is wrong with apiVersion, or returns "".
func apiVersionProblem(apiVersion string) string {
	if _, _, ok := splitAPIVersion(apiVersion); ok {
		return ""
	}
	if apiVersion == "" {
		return "apiVersion is empty"
	}
	if group, version, ok := strings.Cut(apiVersion, "/"); ok && isVersion(version) {
		if msg := groupProblem(group); msg != "" {
			return fmt.Sprintf("apiVersion %q: %s", apiVersion, msg)
		}
	}
	return fmt.Sprintf("apiVersion %q is not of the form <group>/<version> (for example proxmox.openctl.io/v1)", apiVersion)
}

// isDNSLabel reports whether s is lower-case letters, digits and '-',
// starting and ending with a letter or digit (length is checked apart).
func isDNSLabel(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// isVersion reports whether s is v<N>, v<N>alpha<M> or v<N>beta<M>.
func isVersion(s string) bool {
	rest, ok := strings.CutPrefix(s, "v")
	if !ok {
		return false
	}
	n := leadingDigits(rest)
	if n == 0 {
		return false
	}
	rest = rest[n:]
	if rest == "" {
		return true
	}
	for _, stage := range []string{"alpha", "beta"} {
		if r, ok := strings.CutPrefix(rest, stage); ok {
			m := leadingDigits(r)
			return m > 0 && m == len(r)
		}
	}
	return false
}

func leadingDigits(s string) int {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

// isKind reports whether s is letters and digits starting with an
// upper-case letter.
func isKind(s string) bool {
	if s == "" || !('A' <= s[0] && s[0] <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// ValidateName checks that name is a DNS-1123 subdomain, as Kubernetes
// object names are: at most 253 characters of dot-separated DNS-1123 labels
// (lower-case letters, digits and '-', each starting and ending with a
// letter or digit, at most 63 characters) — "web-01", "web-01.lab",
// "ubuntu-24.04-cloud".
func ValidateName(name string) error {
	if msg := nameProblem(name); msg != "" {
		return errcode.New(errcode.Invalid, "manifest: "+msg)
	}
	return nil
}

// nameProblem describes why name is not a DNS-1123 subdomain, or returns
// "".
func nameProblem(name string) string {
	switch {
	case name == "":
		return "name is empty"
	case len(name) > 253:
		return fmt.Sprintf("name %q is longer than 253 characters", name)
	}
	for l := range strings.SplitSeq(name, ".") {
		if len(l) > 63 {
			return fmt.Sprintf("name %q has a part longer than 63 characters", name)
		}
		if !isDNSLabel(l) {
			return fmt.Sprintf("name %q is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', each part starting and ending with a letter or digit)", name)
		}
	}
	return ""
}

// labelProblem describes why s, the value of the field called what, is not
// a DNS-1123 label, or returns "".
func labelProblem(what, s string) string {
	switch {
	case s == "":
		return what + " is empty"
	case len(s) > 63:
		return fmt.Sprintf("%s %q is longer than 63 characters", what, s)
	case !isDNSLabel(s):
		return fmt.Sprintf("%s %q is not a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit)", what, s)
	}
	return ""
}

// DeepCopy returns a copy of r that shares no mutable state with it.
func (r *Resource) DeepCopy() *Resource {
	if r == nil {
		return nil
	}
	c := *r
	c.Metadata.Labels = copyStrings(r.Metadata.Labels)
	c.Metadata.Annotations = copyStrings(r.Metadata.Annotations)
	c.Spec = CopyMap(r.Spec)
	c.Status = CopyMap(r.Status)
	return &c
}

func copyStrings(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// Object returns the resource as a generic map with the keys apiVersion,
// kind, metadata, spec and status, the form field paths and whole-resource
// $ref values use. The map shares no state with r.
func (r *Resource) Object() map[string]any {
	o := r.ObjectView()
	if r.Spec != nil {
		o["spec"] = CopyMap(r.Spec)
	}
	if r.Status != nil {
		o["status"] = CopyMap(r.Status)
	}
	return o
}

// ObjectView is [Resource.Object] without the copy: the returned map's
// "spec" and "status" are r's own maps. It is for reading only; use it
// where the values read are copied or not kept (as $ref resolution does).
func (r *Resource) ObjectView() map[string]any {
	md := map[string]any{"name": r.Metadata.Name}
	if r.Metadata.Namespace != "" {
		md["namespace"] = r.Metadata.Namespace
	}
	if len(r.Metadata.Labels) > 0 {
		md["labels"] = stringsToAny(r.Metadata.Labels)
	}
	if len(r.Metadata.Annotations) > 0 {
		md["annotations"] = stringsToAny(r.Metadata.Annotations)
	}
	o := map[string]any{
		"apiVersion": r.APIVersion,
		"kind":       r.Kind,
		"metadata":   md,
	}
	if r.Spec != nil {
		o["spec"] = r.Spec
	}
	if r.Status != nil {
		o["status"] = r.Status
	}
	return o
}

func stringsToAny(m map[string]string) map[string]any {
	o := make(map[string]any, len(m))
	for k, v := range m {
		o[k] = v
	}
	return o
}

// Field returns the value at a dot path into the resource's object form
// (see [Resource.Object]), for example "status.ip" or "spec.disks[0].size".
// See [Field] for the semantics.
// The value returned is a copy.
func (r *Resource) Field(path string) (any, bool, error) {
	v, found, err := Field(r.ObjectView(), path)
	return CopyValue(v), found, err
}

// Owner returns the ID of the resource that owns r, from the owner labels a
// composite provider's children carry, and whether r has an owner. When the
// owner's apiVersion label is absent, r's own apiVersion is assumed.
func (r *Resource) Owner() (ID, bool) {
	kind, name := r.Metadata.Labels[LabelOwnerKind], r.Metadata.Labels[LabelOwnerName]
	if kind == "" || name == "" {
		return ID{}, false
	}
	av := r.Metadata.Labels[LabelOwnerAPIVersion]
	if av == "" {
		av = r.APIVersion
	}
	return ID{APIVersion: av, Kind: kind, Name: name}, true
}

// SetOwner labels r as owned by owner.
func (r *Resource) SetOwner(owner ID) {
	if r.Metadata.Labels == nil {
		r.Metadata.Labels = map[string]string{}
	}
	r.Metadata.Labels[LabelOwnerKind] = owner.Kind
	r.Metadata.Labels[LabelOwnerName] = owner.Name
	if owner.APIVersion != r.APIVersion {
		r.Metadata.Labels[LabelOwnerAPIVersion] = owner.APIVersion
	} else {
		delete(r.Metadata.Labels, LabelOwnerAPIVersion)
	}
}
