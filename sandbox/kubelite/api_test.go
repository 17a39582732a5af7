package kubelite_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
		NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.37.2+k3s1", OSImage: "Debian GNU/Linux 13", KernelVersion: "6.12.0", Architecture: "amd64", ContainerRuntimeVersion: "containerd://2.1.0"},
	}}
}

// statusOf returns the metav1.Status of a client-go error.
func statusOf(t *testing.T, err error) metav1.Status {
	t.Helper()
	var se apierrors.APIStatus
	if err == nil {
		t.Fatal("no error")
	}
	se, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("%T %v is not a Status error", err, err)
	}
	return se.Status()
}

func TestNodesCRUD(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	nodes := c.client.CoreV1().Nodes()

	_, err := nodes.Get(ctx, "x", metav1.GetOptions{})
	st := statusOf(t, err)
	if st.Code != 404 || st.Reason != metav1.StatusReasonNotFound || st.Message != `nodes "x" not found` || st.Details.Name != "x" || st.Details.Kind != "nodes" {
		t.Fatalf("get missing: %+v", st)
	}

	n, err := nodes.Create(ctx, node("n1", map[string]string{"node-role.kubernetes.io/control-plane": "true"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.UID == "" || n.CreationTimestamp.IsZero() || n.ResourceVersion == "" || n.Status.NodeInfo.KubeletVersion == "" {
		t.Fatalf("create did not default or keep status: %+v", n)
	}
	rv1, _ := strconv.Atoi(n.ResourceVersion)

	_, err = nodes.Create(ctx, node("n1", nil), metav1.CreateOptions{})
	if st := statusOf(t, err); st.Code != 409 || st.Reason != metav1.StatusReasonAlreadyExists || st.Message != `nodes "n1" already exists` {
		t.Fatalf("create twice: %+v", st)
	}
	_, err = nodes.Create(ctx, node("Bad_Name", nil), metav1.CreateOptions{})
	if st := statusOf(t, err); st.Code != 422 || st.Reason != metav1.StatusReasonInvalid || !strings.HasPrefix(st.Message, `Node "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain`) {
		t.Fatalf("bad name: %+v", st)
	}

	// Update: the status is kept from the stored object, labels change.
	upd := n.DeepCopy()
	upd.Labels["a"] = "b"
	upd.Status = corev1.NodeStatus{}
	n2, err := nodes.Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv2, _ := strconv.Atoi(n2.ResourceVersion); rv2 <= rv1 || n2.Labels["a"] != "b" || len(n2.Status.Conditions) != 1 {
		t.Fatalf("update: %+v", n2)
	}
	// A stale resourceVersion conflicts.
	_, err = nodes.Update(ctx, upd, metav1.UpdateOptions{})
	st = statusOf(t, err)
	if st.Code != 409 || st.Reason != metav1.StatusReasonConflict ||
		st.Message != `Operation cannot be fulfilled on nodes "n1": the object has been modified; please apply your changes to the latest version and try again` {
		t.Fatalf("conflict: %+v", st)
	}
	// An update changing nothing writes nothing.
	n3, err := nodes.Update(ctx, n2, metav1.UpdateOptions{})
	if err != nil || n3.ResourceVersion != n2.ResourceVersion {
		t.Fatalf("no-op update: %v %s %s", err, n3.ResourceVersion, n2.ResourceVersion)
	}

	// Status subresource: the spec is kept, the status changes.
	s := n2.DeepCopy()
	s.Spec.Unschedulable = true
	s.Status.Conditions[0].Status = corev1.ConditionFalse
	n4, err := nodes.UpdateStatus(ctx, s, metav1.UpdateOptions{})
	if err != nil || n4.Spec.Unschedulable || n4.Status.Conditions[0].Status != corev1.ConditionFalse {
		t.Fatalf("update status: %v %+v", err, n4)
	}

	// Patches: strategic merge (cordon), merge, JSON patch.
	n5, err := nodes.Patch(ctx, "n1", types.StrategicMergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
	if err != nil || !n5.Spec.Unschedulable {
		t.Fatalf("strategic patch: %v", err)
	}
	n6, err := nodes.Patch(ctx, "n1", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":null,"c":"d"}}}`), metav1.PatchOptions{})
	if err != nil || n6.Labels["c"] != "d" || n6.Labels["a"] != "" {
		t.Fatalf("merge patch: %v %v", err, n6.Labels)
	}
	n7, err := nodes.Patch(ctx, "n1", types.JSONPatchType, []byte(`[{"op":"add","path":"/spec/taints","value":[{"key":"k","effect":"NoSchedule"}]}]`), metav1.PatchOptions{})
	if err != nil || len(n7.Spec.Taints) != 1 {
		t.Fatalf("json patch: %v", err)
	}
	_, err = nodes.Patch(ctx, "n1", types.MergePatchType, []byte(`{"metadata":{"resourceVersion":"1"}}`), metav1.PatchOptions{})
	if st := statusOf(t, err); st.Code != 409 {
		t.Fatalf("patch with a stale resourceVersion: %+v", st)
	}
	_, err = nodes.Patch(ctx, "nope", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	if st := statusOf(t, err); st.Code != 404 {
		t.Fatalf("patch missing: %+v", st)
	}
	// Status patch (as the kubelet's) leaves the spec.
	n8, err := nodes.PatchStatus(ctx, "n1", []byte(`{"spec":{"unschedulable":false},"status":{"conditions":[{"type":"Ready","status":"True"}]}}`))
	if err != nil || !n8.Spec.Unschedulable || n8.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Fatalf("status patch: %v %+v", err, n8)
	}

	// List with label and field selectors.
	if _, err := nodes.Create(ctx, node("n2", map[string]string{"zone": "b"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := nodes.List(ctx, metav1.ListOptions{LabelSelector: "zone=b"})
	if err != nil || len(l.Items) != 1 || l.Items[0].Name != "n2" || l.ResourceVersion == "" {
		t.Fatalf("list by label: %v %+v", err, l)
	}
	l, err = nodes.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=n1"})
	if err != nil || len(l.Items) != 1 || l.Items[0].Name != "n1" {
		t.Fatalf("list by field: %v %+v", err, l)
	}
	l, err = nodes.List(ctx, metav1.ListOptions{FieldSelector: "spec.unschedulable=true"})
	if err != nil || len(l.Items) != 1 || l.Items[0].Name != "n1" {
		t.Fatalf("list by spec.unschedulable: %v %+v", err, l)
	}
	_, err = nodes.List(ctx, metav1.ListOptions{FieldSelector: "spec.foo=bar"})
	if st := statusOf(t, err); st.Code != 400 || st.Message != "field label not supported: spec.foo" {
		t.Fatalf("unknown field: %+v", st)
	}
	// limit and continue.
	l, err = nodes.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || len(l.Items) != 1 || l.Continue == "" || *l.RemainingItemCount != 1 {
		t.Fatalf("limit: %v %+v", err, l.ListMeta)
	}
	l2, err := nodes.List(ctx, metav1.ListOptions{Limit: 1, Continue: l.Continue})
	if err != nil || len(l2.Items) != 1 || l2.Items[0].Name != "n2" || l2.Continue != "" {
		t.Fatalf("continue: %v %+v", err, l2)
	}

	// Delete: at once, answering a Status.
	if err := nodes.Delete(ctx, "n2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes.Get(ctx, "n2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("deleted node: %v", err)
	}
	err = nodes.Delete(ctx, "n1", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr("1")}})
	if st := statusOf(t, err); st.Code != 409 || !strings.Contains(st.Message, "the ResourceVersion in the precondition (1) does not match") {
		t.Fatalf("delete precondition: %+v", st)
	}
}

func ptr[T any](v T) *T { return &v }

func TestLeasesAndNamespaces(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		n, err := c.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil || n.Status.Phase != corev1.NamespaceActive || n.Labels["kubernetes.io/metadata.name"] != ns {
			t.Fatalf("namespace %s: %v %+v", ns, err, n)
		}
	}
	leases := c.client.CoordinationV1().Leases("kube-node-lease")
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("x")}}
	if _, err := leases.Create(ctx, l, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := leases.Create(ctx, l, metav1.CreateOptions{})
	if st := statusOf(t, err); st.Code != 409 || st.Reason != metav1.StatusReasonAlreadyExists || st.Message != `leases.coordination.k8s.io "x" already exists` ||
		st.Details.Group != "coordination.k8s.io" || st.Details.Kind != "leases" {
		t.Fatalf("lease exists: %+v", st)
	}
	_, err = c.client.CoordinationV1().Leases("nope").Create(ctx, l, metav1.CreateOptions{})
	if st := statusOf(t, err); st.Code != 404 || st.Message != `namespaces "nope" not found` {
		t.Fatalf("create in a missing namespace: %+v", st)
	}
	// generateName
	cm, err := c.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-"}}, metav1.CreateOptions{})
	if err != nil || !strings.HasPrefix(cm.Name, "cm-") || len(cm.Name) != 8 {
		t.Fatalf("generateName: %v %v", err, cm)
	}
	// Secrets default to Opaque; a namespace deletion takes them.
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tmp"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sec, err := c.client.CoreV1().Secrets("tmp").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{})
	if err != nil || sec.Type != corev1.SecretTypeOpaque || string(sec.Data["k"]) != "v" {
		t.Fatalf("secret: %v %+v", err, sec)
	}
	if err := c.client.CoreV1().Namespaces().Delete(ctx, "tmp", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.CoreV1().Secrets("tmp").Get(ctx, "s", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("secret of a deleted namespace: %v", err)
	}
	err = c.client.CoreV1().Namespaces().Delete(ctx, "default", metav1.DeleteOptions{})
	if st := statusOf(t, err); st.Code != 403 || st.Message != `namespaces "default" is forbidden: this namespace may not be deleted` {
		t.Fatalf("delete default: %+v", st)
	}
}

func TestPodsGracefulDeleteAndFinalizers(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	pods := c.client.CoreV1().Pods("default")
	p, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != corev1.PodPending || p.Generation != 1 || *p.Spec.TerminationGracePeriodSeconds != 30 || p.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways || p.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Fatalf("pod defaults: %+v", p)
	}
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err = pods.Get(ctx, "p", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp == nil || *p.DeletionGracePeriodSeconds != 30 || p.Generation != 2 {
		t.Fatalf("terminating pod: %v %+v", err, p)
	}
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod deleted with grace 0: %v", err)
	}

	// Finalizers hold an object until removed.
	cms := c.client.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "f", Finalizers: []string{"example.com/f"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "f", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err := cms.Get(ctx, "f", metav1.GetOptions{})
	if err != nil || cm.DeletionTimestamp == nil {
		t.Fatalf("finalized configmap: %v %+v", err, cm)
	}
	if _, err := cms.Patch(ctx, "f", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "f", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("configmap after its finalizer went: %v", err)
	}
}

func TestWatch(t *testing.T) {
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods := c.client.CoreV1().Pods("default")
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, LabelSelector: "app=a"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	mk := func(name, app string) {
		if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i:1"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("other", "b")
	mk("p", "a")
	if _, err := pods.Patch(ctx, "p", types.MergePatchType, []byte(`{"metadata":{"annotations":{"x":"y"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Leaving the selection is a DELETED event; entering it an ADDED one.
	if _, err := pods.Patch(ctx, "p", types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"z"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Patch(ctx, "other", types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"a"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "other", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"ADDED p", "MODIFIED p", "DELETED p", "ADDED other", "DELETED other"}
	var lastRV int
	for i, wnt := range want {
		e := <-w.ResultChan()
		pod := e.Object.(*corev1.Pod)
		if got := string(e.Type) + " " + pod.Name; got != wnt {
			t.Fatalf("event %d: %s, want %s", i, got, wnt)
		}
		rv, _ := strconv.Atoi(pod.ResourceVersion)
		if rv <= lastRV {
			t.Fatalf("resourceVersion %d after %d", rv, lastRV)
		}
		lastRV = rv
	}

	// Resuming from a resourceVersion replays what came after.
	w2, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	if e := <-w2.ResultChan(); e.Type != watch.Added || e.Object.(*corev1.Pod).Name != "other" {
		t.Fatalf("resumed watch: %v", e)
	}
	// A watch with timeoutSeconds ends cleanly.
	w3, err := pods.Watch(ctx, metav1.ListOptions{TimeoutSeconds: ptr(int64(1)), ResourceVersion: strconv.Itoa(lastRV)})
	if err != nil {
		t.Fatal(err)
	}
	for e := range w3.ResultChan() {
		t.Fatalf("event on an idle watch: %v", e)
	}
	// sendInitialEvents: the current state, then the initial-events-end bookmark.
	w4, err := pods.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr(true), AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	defer w4.Stop()
	if e := <-w4.ResultChan(); e.Type != watch.Added || e.Object.(*corev1.Pod).Name != "p" {
		t.Fatalf("initial event: %v", e)
	}
	if e := <-w4.ResultChan(); e.Type != watch.Bookmark || e.Object.(*corev1.Pod).Annotations[metav1.InitialEventsAnnotationKey] != "true" || e.Object.(*corev1.Pod).ResourceVersion != strconv.Itoa(lastRV) {
		t.Fatalf("initial-events-end bookmark: %v", e)
	}
}

func TestAuthentication(t *testing.T) {
	c := newCluster(t)
	anon := &rest.Config{Host: c.config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: c.config.CAData}}
	cl := kubernetes.NewForConfigOrDie(anon)
	_, err := cl.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if st := statusOf(t, err); st.Code != 401 || st.Reason != metav1.StatusReasonUnauthorized || st.Message != "Unauthorized" {
		t.Fatalf("anonymous: %+v", st)
	}
	// A certificate of another CA is anonymous too.
	other := newCA(t)
	certPEM, keyPEM := other.Issue(t, "mallory", "system:masters")
	bad := kubernetes.NewForConfigOrDie(&rest.Config{Host: c.config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: c.config.CAData, CertData: certPEM, KeyData: keyPEM}})
	if _, err := bad.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Fatalf("foreign certificate: %v", err)
	}
	tok := kubernetes.NewForConfigOrDie(&rest.Config{Host: c.config.Host, BearerToken: testToken, TLSClientConfig: rest.TLSClientConfig{CAData: c.config.CAData}})
	if _, err := tok.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatalf("token: %v", err)
	}
	// The raw 401 body.
	tr, _ := rest.TransportFor(anon)
	resp, err := (&http.Client{Transport: tr}).Get(c.server.Server.URL + "/api/v1/nodes")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || strings.TrimSpace(string(body)) != `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}` {
		t.Fatalf("401 body: %d %s", resp.StatusCode, body)
	}
}

func get(t *testing.T, c *cluster, path, accept string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("GET", c.server.Server.URL+path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.httpClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestHealthVersionDiscovery(t *testing.T) {
	c := newCluster(t)
	if code, body, _ := get(t, c, "/readyz", ""); code != 200 || body != "ok" {
		t.Fatalf("readyz: %d %q", code, body)
	}
	if code, body, _ := get(t, c, "/readyz?verbose", ""); code != 200 || !strings.HasPrefix(body, "[+]ping ok\n") || !strings.HasSuffix(body, "readyz check passed\n") {
		t.Fatalf("readyz?verbose: %d %q", code, body)
	}
	if code, body, _ := get(t, c, "/livez?verbose", ""); code != 200 || !strings.HasSuffix(body, "\nlivez check passed\n") {
		t.Fatalf("livez?verbose: %d %q", code, body)
	}
	v, err := c.client.Discovery().ServerVersion()
	if err != nil || v.GitVersion != "v1.37.2+k3s1" || v.Major != "1" || v.Minor != "37" || v.Platform == "" {
		t.Fatalf("version: %v %+v", err, v)
	}
	groups, lists, err := c.client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, g := range groups {
		names[g.Name] = true
	}
	for _, g := range []string{"", "apps", "policy", "coordination.k8s.io"} {
		if !names[g] {
			t.Errorf("group %q not discovered", g)
		}
	}
	found := map[string]metav1.APIResource{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			found[l.GroupVersion+" "+r.Name] = r
		}
	}
	if r := found["v1 pods"]; !r.Namespaced || r.Kind != "Pod" || r.SingularName != "pod" || len(r.ShortNames) != 1 || r.ShortNames[0] != "po" || len(r.Verbs) != 8 {
		t.Errorf("pods: %+v", r)
	}
	if r := found["v1 pods/eviction"]; r.Group != "policy" || r.Version != "v1" || r.Kind != "Eviction" {
		t.Errorf("pods/eviction: %+v", r)
	}
	if r := found["v1 nodes"]; r.Namespaced || r.Kind != "Node" {
		t.Errorf("nodes: %+v", r)
	}
	if _, ok := found["coordination.k8s.io/v1 leases"]; !ok {
		t.Errorf("leases not discovered")
	}
	if code, body, _ := get(t, c, "/api/v1/nope", ""); code != 404 || !strings.Contains(body, `"reason":"NotFound"`) {
		t.Fatalf("unknown resource: %d %s", code, body)
	}
}

func TestTables(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	n := node("cp1", map[string]string{"node-role.kubernetes.io/control-plane": "true", "node-role.kubernetes.io/etcd": "true"})
	n.Spec.Unschedulable = true
	if _, err := c.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.CoreV1().Nodes().Create(ctx, node("w1", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, body, hdr := get(t, c, "/api/v1/nodes?limit=500", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
	if code != 200 || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("table: %d %s %v", code, body, hdr)
	}
	var tbl metav1.Table
	if err := json.Unmarshal([]byte(body), &tbl); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if strings.Join(cols, " ") != "Name Status Roles Age Version Internal-IP External-IP OS-Image Kernel-Version Container-Runtime" {
		t.Fatalf("columns: %v", cols)
	}
	if len(tbl.Rows) != 2 {
		t.Fatalf("rows: %v", tbl.Rows)
	}
	row := tbl.Rows[0].Cells
	if row[0] != "cp1" || row[1] != "Ready,SchedulingDisabled" || row[2] != "control-plane,etcd" || row[4] != "v1.37.2+k3s1" ||
		row[5] != "10.0.0.1" || row[6] != "<none>" || row[8] != "6.12.0 (amd64)" {
		t.Fatalf("row: %v", row)
	}
	if tbl.Rows[1].Cells[2] != "<none>" {
		t.Fatalf("roles of a worker: %v", tbl.Rows[1].Cells)
	}
	if !strings.Contains(body, `"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"cp1"`) {
		t.Fatalf("row object: %s", body)
	}

	// Services, as the real printer (checked against it) prints them.
	if _, err := c.client.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s1"}, Spec: corev1.ServiceSpec{ClusterIP: "10.43.99.99",
		Selector: map[string]string{"a": "b"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, body, _ = get(t, c, "/api/v1/namespaces/default/services?includeObject=None", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	if !regexp.MustCompile(`"rows":\[\{"cells":\["s1","ClusterIP","10.43.99.99","\\u003cnone\\u003e","80/TCP,53/UDP","\d+s","a=b"\],"object":null\}\]`).MatchString(body) {
		t.Fatalf("services table: %s", body)
	}
}

// do sends a raw request with the admin certificate.
func do(t *testing.T, c *cluster, method, path, ct, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, c.server.Server.URL+path, strings.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := c.httpClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// TestRawErrors checks answers byte for byte against those of the real
// kube-apiserver v1.37.2 to the same requests.
func TestRawErrors(t *testing.T) {
	c := newCluster(t)
	const status = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",`
	for _, tc := range []struct{ method, path, ct, body, want string }{
		{"PUT", "/api/v1/nodes/n2", "application/json", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}`,
			status + `"message":"the name of the object (n1) does not match the name on the URL (n2)","reason":"BadRequest","code":400}`},
		{"POST", "/api/v1/nodes", "application/json", `{"apiVersion":"v1","kind":"Node","metadata":{}}`,
			status + `"message":"Node \"\" is invalid: metadata.name: Required value: name or generateName is required","reason":"Invalid","details":{"kind":"Node","causes":[{"reason":"FieldValueRequired","message":"Required value: name or generateName is required","field":"metadata.name"}]},"code":422}`},
		{"GET", "/api/v1/namespaces/default/pods/p1/eviction", "", "",
			status + `"message":"the server does not allow this method on the requested resource","reason":"MethodNotAllowed","details":{},"code":405}`},
		{"POST", "/api/v1/namespaces/default/configmaps/x", "application/json", `{"metadata":{"name":"x"}}`,
			status + `"message":"the server does not allow this method on the requested resource","reason":"MethodNotAllowed","details":{},"code":405}`},
		{"PATCH", "/api/v1/namespaces/default", "text/plain", `{}`,
			status + `"message":"415: Unsupported Media Type","reason":"UnsupportedMediaType","details":{},"code":415}`},
		{"POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`,
			status + `"message":"Secret in version \"v1\" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion","reason":"BadRequest","code":400}`},
		{"POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"x"}}`,
			status + `"message":"ConfigMap in version \"v2\" cannot be handled as a ConfigMap: no kind \"ConfigMap\" is registered for version \"v2\" in scheme \"pkg/runtime/scheme.go:111\"","reason":"BadRequest","code":400}`},
		{"POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"x"}`,
			status + `"message":"the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({\"metadata\":{\"name\":\"x\"})","reason":"BadRequest","code":400}`},
		{"GET", "/api/v1/configmaps?fieldSelector=foo%3Dbar", "", "",
			status + `"message":"\"foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"","reason":"BadRequest","code":400}`},
		{"GET", "/apis/nope/v1", "", "", "404 page not found"},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/l", "application/json", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"}}`,
			`{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"l","namespace":"default","uid":"`},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/l", "application/json", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"}}`,
			status + `"message":"leases.coordination.k8s.io \"l\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update","reason":"Invalid","details":{"name":"l","group":"coordination.k8s.io","kind":"leases","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: 0: must be specified for an update","field":"metadata.resourceVersion"}]},"code":422}`},
		{"PATCH", "/apis/coordination.k8s.io/v1/namespaces/default/leases/nope", "application/merge-patch+json", `{}`,
			status + `"message":"leases.coordination.k8s.io \"nope\" not found","reason":"NotFound","details":{"name":"nope","group":"coordination.k8s.io","kind":"leases"},"code":404}`},
		{"PUT", "/api/v1/namespaces/default/configmaps/nope", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"nope"}}`,
			status + `"message":"configmaps \"nope\" not found","reason":"NotFound","details":{"name":"nope","kind":"configmaps"},"code":404}`},
	} {
		if code, body := do(t, c, tc.method, tc.path, tc.ct, tc.body); body != tc.want && !(strings.HasSuffix(tc.want, `"uid":"`) && strings.HasPrefix(body, tc.want)) {
			t.Errorf("%s %s: %d\n%s\nwant\n%s", tc.method, tc.path, code, body, tc.want)
		}
	}
}

// TestWireFormats runs the same calls with client-go preferring protobuf
// (its default for built-in types) and with a JSON-only client.
func TestWireFormats(t *testing.T) {
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	jsonCfg := rest.CopyConfig(c.config)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = "application/json", "application/json"
	for name, cl := range map[string]kubernetes.Interface{"protobuf": c.client, "json": kubernetes.NewForConfigOrDie(jsonCfg)} {
		t.Run(name, func(t *testing.T) {
			cms := cl.CoreV1().ConfigMaps("default")
			w, err := cms.Watch(ctx, metav1.ListOptions{LabelSelector: "client=" + name})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"client": name}}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			if err != nil || cm.Data["k"] != "v" {
				t.Fatalf("create: %v %+v", err, cm)
			}
			l, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "client=" + name})
			if err != nil || len(l.Items) != 1 || l.Items[0].UID != cm.UID || l.ResourceVersion == "" {
				t.Fatalf("list: %v %+v", err, l)
			}
			if e := <-w.ResultChan(); e.Type != watch.Added || e.Object.(*corev1.ConfigMap).UID != cm.UID {
				t.Fatalf("watch: %+v", e)
			}
			err = cms.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}})
			if err != nil {
				t.Fatal(err)
			}
			if e := <-w.ResultChan(); e.Type != watch.Deleted {
				t.Fatalf("watch: %+v", e)
			}
			_, err = cms.Get(ctx, name, metav1.GetOptions{})
			if st := statusOf(t, err); st.Code != 404 || st.Message != `configmaps "`+name+`" not found` {
				t.Fatalf("get deleted: %+v", st)
			}
		})
	}
	code, body, hdr := get(t, c, "/api/v1/namespaces", "application/vnd.kubernetes.protobuf")
	if code != 200 || hdr.Get("Content-Type") != "application/vnd.kubernetes.protobuf" || !strings.HasPrefix(body, "k8s\x00") {
		t.Fatalf("protobuf list: %d %v %q", code, hdr, body)
	}
}

func TestStoreHelpers(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	n := node("direct", map[string]string{"a": "b"})
	if err := c.store.Put(n); err != nil {
		t.Fatal(err)
	}
	if n.UID == "" || n.ResourceVersion == "" || len(n.Spec.Taints) != 1 {
		t.Fatalf("Put did not fill the object: %+v", n)
	}
	got, err := c.client.CoreV1().Nodes().Get(ctx, "direct", metav1.GetOptions{})
	if err != nil || got.UID != n.UID || got.Status.NodeInfo.KubeletVersion != "v1.37.2+k3s1" {
		t.Fatalf("node put in the store, read through the API: %v %+v", err, got)
	}
	// Put replaces whatever the resourceVersion, status included.
	n.ResourceVersion = "1"
	n.Status.Conditions[0].Status = corev1.ConditionFalse
	n.Labels["a"] = "c"
	if err := c.store.Put(n); err != nil {
		t.Fatal(err)
	}
	var back corev1.Node
	if err := c.store.Get("", "direct", &back); err != nil || back.Labels["a"] != "c" || back.Status.Conditions[0].Status != corev1.ConditionFalse || back.UID != got.UID {
		t.Fatalf("Get after the second Put: %v %+v", err, back)
	}
	// A pod put with its status keeps it (create resets it, Put sets it again).
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "kube-system"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if err := c.store.Put(p); err != nil || p.Status.Phase != corev1.PodRunning {
		t.Fatalf("Put pod: %v %+v", err, p.Status)
	}
	if err := c.store.Delete("", "direct", &corev1.Node{}); err != nil {
		t.Fatal(err)
	}
	if err := c.store.Get("", "direct", &back); !apierrors.IsNotFound(err) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if err := c.store.Put(&metav1.Status{}); err == nil {
		t.Fatal("Put of a kind that is not served")
	}
}

// TestDefaultsAndValidation checks what the real server was seen to do
// to the same requests.
func TestDefaultsAndValidation(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	sec, err := c.client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"a": "b"}}, metav1.CreateOptions{})
	if err != nil || string(sec.Data["a"]) != "b" || sec.StringData != nil {
		t.Fatalf("stringData: %v %+v", err, sec)
	}
	svc, err := c.client.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil || !strings.HasPrefix(svc.Spec.ClusterIP, "10.43.") || svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.Ports[0].TargetPort.IntVal != 80 || svc.Spec.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Fatalf("service: %v %+v", err, svc)
	}
	pods := c.client.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := pods.Patch(ctx, "p", types.StrategicMergePatchType, []byte(`{"spec":{"containers":[{"name":"c","image":"nginx:1.28"}]}}`), metav1.PatchOptions{})
	if err != nil || p.Spec.Containers[0].Image != "nginx:1.28" || p.Generation != 2 {
		t.Fatalf("image update: %v %+v", err, p)
	}
	_, err = pods.Patch(ctx, "p", types.StrategicMergePatchType, []byte(`{"spec":{"containers":[{"name":"c","command":["x"]}]}}`), metav1.PatchOptions{})
	if st := statusOf(t, err); st.Code != 422 || !strings.HasPrefix(st.Message, "Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`") {
		t.Fatalf("pod spec update: %+v", st)
	}
	if _, err := pods.Patch(ctx, "p", types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/x"]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	_, err = pods.Patch(ctx, "p", types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/y"]}}`), metav1.PatchOptions{})
	if st := statusOf(t, err); st.Code != 422 || st.Message != `Pod "p" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/y"}` {
		t.Fatalf("finalizer on a deleted pod: %+v", st)
	}
	_, err = pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.PodSpec{ServiceAccountName: "nope", Containers: []corev1.Container{{Name: "c", Image: "i:1"}}}}, metav1.CreateOptions{})
	if st := statusOf(t, err); st.Code != 403 || st.Message != `pods "q" is forbidden: error looking up service account default/nope: serviceaccount "nope" not found` {
		t.Fatalf("pod of a missing service account: %+v", st)
	}
	ds, err := c.client.AppsV1().DaemonSets("default").Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}}}, metav1.CreateOptions{})
	if err != nil || ds.Annotations[appsv1.DeprecatedTemplateGeneration] != "1" || *ds.Spec.RevisionHistoryLimit != 10 || ds.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Fatalf("daemonset: %v %+v", err, ds)
	}
}
