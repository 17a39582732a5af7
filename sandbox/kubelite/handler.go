package kubelite

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"runtime"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/yaml"
)

// Options configures a handler.
type Options struct {
	// ClientCAs: a client certificate signed by one of them authenticates
	// as user CN, groups O.
	ClientCAs *x509.CertPool
	// Token authenticates a bearer token (nil: none accepted).
	Token func(token string) (user string, groups []string, ok bool)
	// Version is what /version reports (GitVersion like "v1.37.2+k3s1";
	// Major/Minor derived; GoVersion, Platform etc. as k3s's apiserver
	// reports; GitCommit and BuildDate as the k3s stand-in's, the commit
	// derived from the version). Empty: DefaultVersion.
	Version string
}

// DefaultVersion is the version a handler reports when Options.Version is empty.
const DefaultVersion = "v1.37.2+k3s1"

// NewHandler serves the Kubernetes API of s. The caller serves it over
// TLS (its own serving certificate); a client certificate is checked
// against Options.ClientCAs here, whatever the TLS configuration verified.
func NewHandler(s *Store, opts Options) http.Handler {
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	return &handler{store: s, opts: opts, version: versionInfo(opts.Version)}
}

type handler struct {
	store   *Store
	opts    Options
	version version.Info
}

// user is an authenticated client.
type user struct {
	name   string
	groups []string
}

func (h *handler) authenticate(r *http.Request) (user, bool) {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && h.opts.ClientCAs != nil {
		cert := r.TLS.PeerCertificates[0]
		inter := x509.NewCertPool()
		for _, c := range r.TLS.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: h.opts.ClientCAs, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil && cert.Subject.CommonName != "" {
			return user{cert.Subject.CommonName, append(cert.Subject.Organization, "system:authenticated")}, true
		}
	}
	if auth := r.Header.Get("Authorization"); h.opts.Token != nil && strings.HasPrefix(auth, "Bearer ") {
		if name, groups, ok := h.opts.Token(strings.TrimSpace(auth[len("Bearer "):])); ok {
			return user{name, append(groups, "system:authenticated")}, true
		}
	}
	return user{}, false
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil && v != http.ErrAbortHandler {
			writeError(w, apierrors.NewInternalError(fmt.Errorf("%v", v)))
		}
	}()
	if _, ok := h.authenticate(r); !ok {
		writeError(w, apierrors.NewUnauthorized("Unauthorized"))
		return
	}
	// Every authenticated user may do everything: RBAC is not simulated.
	if ua := r.UserAgent(); r.URL.Query().Get("pretty") == "true" || strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget") || strings.HasPrefix(ua, "Mozilla/") {
		w = prettyWriter{w}
	}
	p := strings.Trim(r.URL.Path, "/")
	switch {
	case p == "version":
		writeJSON(prettyWriter{w}, http.StatusOK, h.version)
	case p == "healthz" || p == "livez" || p == "readyz" || strings.HasPrefix(p, "healthz/") || strings.HasPrefix(p, "livez/") || strings.HasPrefix(p, "readyz/"):
		health(w, r, p)
	case p == "api":
		writeJSON(w, http.StatusOK, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
	case p == "apis":
		writeJSON(w, http.StatusOK, apiGroupList())
	case strings.HasPrefix(p, "api/") || strings.HasPrefix(p, "apis/"):
		h.serveAPI(w, r, strings.Split(p, "/"))
	default:
		http.NotFound(w, r)
	}
}

// restfulError is the answer of the real server's router (go-restful)
// when no route takes a request: a Status with an empty details.
func restfulError(code int, reason metav1.StatusReason, msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Message: msg, Reason: reason, Details: &metav1.StatusDetails{}, Code: int32(code)}}
}

func methodNotAllowed() error {
	return restfulError(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "the server does not allow this method on the requested resource")
}

func unsupportedMediaType() error {
	return restfulError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType, "415: Unsupported Media Type")
}

// notFound is the real server's answer to an unknown path.
func notFound() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Message: "the server could not find the requested resource", Reason: metav1.StatusReasonNotFound, Details: &metav1.StatusDetails{}, Code: http.StatusNotFound}}
}

// serveAPI serves /api/v1/... and /apis/group/version/...: discovery, then
// resources.
func (h *handler) serveAPI(w http.ResponseWriter, r *http.Request, parts []string) {
	var gv schema.GroupVersion
	if parts[0] == "api" {
		gv, parts = schema.GroupVersion{Version: parts[1]}, parts[2:]
	} else {
		if len(parts) == 2 {
			if g := findGroup(parts[1]); g != nil {
				writeJSON(w, http.StatusOK, g)
			} else {
				http.NotFound(w, r)
			}
			return
		}
		gv, parts = schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	}
	l := resourceList(gv)
	if l == nil {
		http.NotFound(w, r) // the real server's mux: no group version there
		return
	}
	if len(parts) == 0 {
		writeJSON(w, http.StatusOK, l)
		return
	}
	req, err := parseRequest(r, gv, parts)
	if err != nil {
		writeError(w, err)
		return
	}
	h.serveResource(w, r, req)
}

// request is a parsed resource request.
type request struct {
	res                  *resource
	namespace, name, sub string
	verb                 string
}

// parseRequest finds the resource, namespace, name, subresource and verb
// of a resource request path (after the group version).
func parseRequest(r *http.Request, gv schema.GroupVersion, parts []string) (*request, error) {
	watchPath := false
	if parts[0] == "watch" {
		watchPath, parts = true, parts[1:]
	}
	req := &request{}
	// /namespaces/x/pods/... is in namespace x; /namespaces/x and
	// /namespaces/x/status name namespace x itself.
	if len(parts) >= 3 && parts[0] == "namespaces" && !(len(parts) == 3 && gv.Group == "" && parts[2] == "status") {
		req.namespace, parts = parts[1], parts[2:]
	}
	if len(parts) == 0 || len(parts) > 3 {
		return nil, notFound()
	}
	req.res = byGVR[gv.WithResource(parts[0])]
	if req.res == nil || !req.res.namespaced && req.namespace != "" {
		return nil, notFound()
	}
	if len(parts) > 1 {
		req.name = parts[1]
	}
	if len(parts) > 2 {
		req.sub = parts[2]
		ok := req.sub == "status" && req.res.status
		for _, s := range req.res.extraSubs {
			ok = ok || s == req.sub
		}
		if !ok {
			return nil, notFound()
		}
	}
	q := r.URL.Query()
	isWatch := watchPath || q.Get("watch") == "true" || q.Get("watch") == "1"
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case isWatch:
			req.verb = "watch"
		case req.name == "":
			req.verb = "list"
		default:
			req.verb = "get"
		}
	case http.MethodPost:
		if req.name != "" && req.sub == "" {
			return nil, methodNotAllowed()
		}
		req.verb = "create"
	case http.MethodPut:
		req.verb = "update"
	case http.MethodPatch:
		req.verb = "patch"
	case http.MethodDelete:
		req.verb = "delete"
		if req.name == "" {
			req.verb = "deletecollection"
			if req.res.noDelColl {
				return nil, methodNotAllowed()
			}
		}
	default:
		return nil, methodNotAllowed()
	}
	if (req.verb == "update" || req.verb == "patch") && req.name == "" {
		return nil, methodNotAllowed()
	}
	if req.sub == "eviction" && req.verb != "create" {
		return nil, methodNotAllowed()
	}
	if req.sub == "status" && req.verb != "get" && req.verb != "update" && req.verb != "patch" {
		return nil, methodNotAllowed()
	}
	return req, nil
}

// prettyWriter asks writeJSON for indented JSON, as the real server
// writes for ?pretty=true, curl and browsers, and always for /version.
type prettyWriter struct{ http.ResponseWriter }

// Flush flushes the underlying writer.
func (w prettyWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// writeJSON writes v with code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if _, pretty := w.(prettyWriter); pretty && err == nil {
		b, err = json.MarshalIndent(v, "", "  ")
	}
	if err != nil {
		writeError(w, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// writeYAML writes v as YAML.
func writeYAML(w http.ResponseWriter, code int, v any) {
	b, err := yaml.Marshal(v)
	if err != nil {
		writeError(w, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// writeError writes err as a metav1.Status, as the real server does.
func writeError(w http.ResponseWriter, err error) {
	st := apierrors.APIStatus(nil)
	if !asStatus(err, &st) {
		st = apierrors.NewInternalError(err)
	}
	status := st.Status()
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	if status.Code == 0 {
		status.Code = http.StatusInternalServerError
	}
	if status.Details != nil && status.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(status.Details.RetryAfterSeconds))
	}
	if status.Code == http.StatusNotAcceptable {
		w = prettyWriter{w} // as the real server, failing to negotiate, writes it
	}
	writeJSON(w, int(status.Code), &status)
}

func asStatus(err error, st *apierrors.APIStatus) bool {
	for e := err; e != nil; {
		if s, ok := e.(apierrors.APIStatus); ok {
			*st = s
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

var gitVersionRE = regexp.MustCompile(`^v(\d+)\.(\d+)`)

func versionInfo(v string) version.Info {
	// The commit and build date are the k3s stand-in's (and the sandbox
	// k3s binary's): a commit derived from the version, zero-padded.
	sum := sha256.Sum256([]byte(v))
	commit := hex.EncodeToString(sum[:4]) + strings.Repeat("0", 32)
	info := version.Info{GitVersion: v, GitCommit: commit, GitTreeState: "clean", BuildDate: "2026-01-01T00:00:00Z", GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if m := gitVersionRE.FindStringSubmatch(v); m != nil {
		info.Major, info.Minor = m[1], m[2]
		info.EmulationMajor, info.EmulationMinor = m[1], m[2]
		info.MinCompatibilityMajor = m[1]
		if n := atoi(m[2]); n > 0 {
			info.MinCompatibilityMinor = fmt.Sprint(n - 1)
		}
	}
	return info
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// healthChecks are the checks the real apiserver lists for ?verbose, in
// its order; /readyz adds readyOnly after etcd and shutdown at the end,
// /livez and /healthz livenessOnly after log.
var (
	healthChecks = []string{"ping", "log", "etcd", "poststarthook/start-apiserver-admission-initializer", "poststarthook/generic-apiserver-start-informers",
		"poststarthook/priority-and-fairness-config-consumer", "poststarthook/priority-and-fairness-filter", "poststarthook/storage-object-count-tracker-hook",
		"poststarthook/start-apiextensions-informers", "poststarthook/start-apiextensions-controllers", "poststarthook/crd-informer-synced",
		"poststarthook/start-system-namespaces-controller", "poststarthook/peer-endpoint-reconciler-controller", "poststarthook/start-cluster-authentication-info-controller",
		"poststarthook/start-kube-apiserver-identity-lease-controller", "poststarthook/start-kube-apiserver-identity-lease-garbage-collector",
		"poststarthook/storage-readiness", "poststarthook/start-legacy-token-tracking-controller", "poststarthook/start-service-ip-repair-controllers",
		"poststarthook/rbac/bootstrap-roles", "poststarthook/scheduling/bootstrap-system-priority-classes", "poststarthook/priority-and-fairness-config-producer",
		"poststarthook/bootstrap-controller", "poststarthook/start-kubernetes-service-cidr-controller", "poststarthook/start-kube-aggregator-informers",
		"poststarthook/apiservice-status-local-available-controller", "poststarthook/apiservice-status-remote-available-controller",
		"poststarthook/apiservice-registration-controller", "poststarthook/apiservice-discovery-controller", "poststarthook/kube-apiserver-autoregistration",
		"autoregister-completion", "poststarthook/apiservice-openapi-controller", "poststarthook/apiservice-openapiv3-controller"}
	readyOnly    = []string{"etcd-readiness", "informer-sync"}
	livenessOnly = []string{"loopback-serving-certificate"}
)

// health serves /healthz, /livez and /readyz, with ?verbose and ?exclude,
// and their single checks (/readyz/ping).
func health(w http.ResponseWriter, r *http.Request, p string) {
	endpoint, check, _ := strings.Cut(p, "/")
	var checks []string
	if endpoint == "readyz" {
		checks = append(append(append(append(checks, healthChecks[:3]...), readyOnly...), healthChecks[3:]...), "shutdown")
	} else {
		checks = append(append(append(checks, healthChecks[:2]...), livenessOnly...), healthChecks[2:]...)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if check != "" {
		if !contains(checks, check) {
			writeError(w, notFound())
			return
		}
		fmt.Fprint(w, "ok")
		return
	}
	q := r.URL.Query()
	if _, verbose := q["verbose"]; !verbose {
		fmt.Fprint(w, "ok")
		return
	}
	excluded := q["exclude"]
	for _, c := range checks {
		if contains(excluded, c) {
			fmt.Fprintf(w, "[+]%s excluded: ok\n", c)
		} else {
			fmt.Fprintf(w, "[+]%s ok\n", c)
		}
	}
	fmt.Fprintf(w, "%s check passed\n", endpoint)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// groupVersions lists the served API group versions, in discovery order.
func groupVersions() []schema.GroupVersion {
	var out []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, r := range resources {
		if gv := r.gvr.GroupVersion(); !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	return out
}

func apiGroupList() *metav1.APIGroupList {
	l := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}}
	for _, gv := range groupVersions() {
		if gv.Group != "" {
			l.Groups = append(l.Groups, *findGroup(gv.Group))
		}
	}
	return l
}

func findGroup(group string) *metav1.APIGroup {
	for _, gv := range groupVersions() {
		if gv.Group == group && group != "" {
			v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
			return &metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}
		}
	}
	return nil
}

var allVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// resourceList is the discovery document of gv (nil: not served).
func resourceList(gv schema.GroupVersion) *metav1.APIResourceList {
	var l *metav1.APIResourceList
	for _, r := range resources {
		if r.gvr.GroupVersion() != gv {
			continue
		}
		if l == nil {
			l = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
		}
		verbs := allVerbs
		if r.noDelColl {
			verbs = metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}
		}
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: r.gvr.Resource, SingularName: r.singular, Namespaced: r.namespaced, Kind: r.kind,
			Verbs: verbs, ShortNames: r.shortNames, Categories: r.categories, StorageVersionHash: r.storageVersionHash()})
		if r.status {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: r.gvr.Resource + "/status", Namespaced: r.namespaced, Kind: r.kind, Verbs: metav1.Verbs{"get", "patch", "update"}})
		}
		for _, sub := range r.extraSubs {
			if sub == "eviction" {
				l.APIResources = append(l.APIResources, metav1.APIResource{Name: r.gvr.Resource + "/eviction", Namespaced: true, Group: "policy", Version: "v1", Kind: "Eviction", Verbs: metav1.Verbs{"create"}})
			}
		}
	}
	if l != nil {
		sort.SliceStable(l.APIResources, func(i, j int) bool { return l.APIResources[i].Name < l.APIResources[j].Name })
	}
	return l
}

// setTypeMeta sets (gvk non-nil) or clears the object's apiVersion and kind.
func setTypeMeta(obj kruntime.Object, gvk *schema.GroupVersionKind) {
	if gvk == nil {
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	} else {
		obj.GetObjectKind().SetGroupVersionKind(*gvk)
	}
}
