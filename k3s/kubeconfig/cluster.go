package kubeconfig

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openctl/openctl/errcode"
)

// Cluster reads a cluster's state through its API server, as the
// kubeconfig it was made from allows. It is safe for concurrent use.
type Cluster struct {
	server string
	client kubernetes.Interface
}

// Client returns a Cluster for the kubeconfig data's current context.
// Nothing is contacted until a method is called; each call is bounded only
// by its ctx. A kubeconfig that cannot be used (no current context,
// unreadable credentials) is an error matching errcode.Invalid.
func Client(data []byte) (*Cluster, error) {
	cfg, err := load(data)
	if err != nil {
		return nil, err
	}
	if _, ok := cfg.Contexts[cfg.CurrentContext]; !ok {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("kubeconfig: client: the current context %q is not defined", cfg.CurrentContext))
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "kubeconfig: client", err)
	}
	rc.UserAgent = "openctl"
	// A library prints nothing: the server's deprecation warnings would
	// otherwise go to klog's stderr.
	rc.WarningHandler = rest.NoWarnings{}
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return evictionNoWait{rt} })
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "kubeconfig: client", err)
	}
	return &Cluster{server: rc.Host, client: cs}, nil
}

// evictionNoWait drops the Retry-After of an eviction refused with 429
// (a PodDisruptionBudget forbids it), so that the refusal reaches the
// caller at once. client-go would otherwise wait the server's Retry-After
// (10 s) and ask again, up to ten times inside the one call: far past a
// drain's timeout, and without the refusal ever being seen.
type evictionNoWait struct{ next http.RoundTripper }

func (e evictionNoWait) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := e.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests && req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/eviction") {
		resp.Header.Del("Retry-After")
	}
	return resp, err
}

// Server returns the API server's URL, as the kubeconfig gives it.
func (c *Cluster) Server() string { return c.server }

// Kubernetes returns the client-go clientset underneath, for what Cluster
// does not offer (cordon, drain, deleting a Node).
func (c *Cluster) Kubernetes() kubernetes.Interface { return c.client }

// Ready checks the API server's readiness: GET /readyz must answer "ok".
// An error matches errcode.Transient when the server cannot be reached,
// answers 5xx (not ready yet: the body, which lists the failing checks, is
// in the message) or 429, or ctx ends; errcode.Unauthorized when the
// credentials are refused; errcode.Invalid when the server's certificate
// does not verify against the kubeconfig's CA or does not name the host
// (a wrong CA, or an address missing from --tls-san), which retrying does
// not fix.
func (c *Cluster) Ready(ctx context.Context) error {
	body, err := c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return c.classify("GET "+c.server+"/readyz", err)
	}
	if s := strings.TrimSpace(string(body)); s != "ok" {
		return errcode.New(errcode.Transient, fmt.Sprintf("kubeconfig: %s/readyz answered %q, not \"ok\"", c.server, clip(s)))
	}
	return nil
}

// Node is what the K3s provider checks of a Kubernetes Node.
type Node struct {
	Name string
	// Ready: the Node's Ready condition is True.
	Ready bool
	// Roles from the node-role.kubernetes.io/<role> labels (and a
	// kubernetes.io/role=<role> label), sorted, as kubectl's ROLES column
	// shows them: a k3s server is control-plane, etcd, master; an agent
	// has none.
	Roles []string
	// KubeletVersion as the Node reports it, e.g. "v1.37.2+k3s1".
	KubeletVersion string
	// InternalIP is the Node's first InternalIP address, or "".
	InternalIP string
	// Taints as kubectl writes them: "key=value:Effect", or "key:Effect"
	// when the value is empty.
	Taints []string
	// Unschedulable: the Node is cordoned.
	Unschedulable bool
}

// Nodes lists the cluster's Nodes, sorted by name. Errors are classified
// as Ready's are.
func (c *Cluster) Nodes(ctx context.Context) ([]Node, error) {
	list, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, c.classify("listing the nodes of "+c.server, err)
	}
	out := make([]Node, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, nodeOf(&list.Items[i]))
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

const roleLabelPrefix = "node-role.kubernetes.io/"

func nodeOf(n *corev1.Node) Node {
	out := Node{
		Name:           n.Name,
		KubeletVersion: n.Status.NodeInfo.KubeletVersion,
		Unschedulable:  n.Spec.Unschedulable,
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			out.Ready = cond.Status == corev1.ConditionTrue
		}
	}
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, roleLabelPrefix) && len(k) > len(roleLabelPrefix):
			out.Roles = append(out.Roles, k[len(roleLabelPrefix):])
		case k == "kubernetes.io/role" && v != "":
			out.Roles = append(out.Roles, v)
		}
	}
	slices.Sort(out.Roles)
	out.Roles = slices.Compact(out.Roles)
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			out.InternalIP = a.Address
			break
		}
	}
	for _, t := range n.Spec.Taints {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		out.Taints = append(out.Taints, s+":"+string(t.Effect))
	}
	return out
}

// classify wraps a client-go error with the code that says what to do
// about it.
func (c *Cluster) classify(what string, err error) error {
	msg := "kubeconfig: " + what
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		status    apierrors.APIStatus
	)
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errcode.Wrap(errcode.Transient, msg, err)
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid):
		return errcode.Wrap(errcode.Invalid, msg+": the server's certificate does not verify", err)
	case apierrors.IsUnauthorized(err), apierrors.IsForbidden(err):
		return errcode.Wrap(errcode.Unauthorized, msg, err)
	case errors.As(err, &status):
		code := int(status.Status().Code)
		if code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests {
			return errcode.Wrap(errcode.Invalid, msg, err)
		}
	}
	return errcode.Wrap(errcode.Transient, msg, err)
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 200
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
