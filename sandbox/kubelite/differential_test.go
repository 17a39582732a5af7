package kubelite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openctl/openctl/internal/testenv"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// diffStep is one request of the differential test. refOnly steps set up
// on the real server what its missing controllers would have made (the
// stand-in runs no controller manager); kubelite makes it itself.
type diffStep struct {
	method, path, ct, accept, body string
	refOnly                        bool
}

const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

// diffSteps are requests whose answers are the real server's, once
// normalized (uids, timestamps, resourceVersions, ages, managedFields,
// random name suffixes).
var diffSteps = []diffStep{
	{method: "GET", path: "/api/v1/nodes/x"},
	{method: "POST", path: "/api/v1/nodes", ct: "application/json", body: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","labels":{"node-role.kubernetes.io/control-plane":"true"}}}`},
	{method: "POST", path: "/api/v1/nodes", ct: "application/json", body: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}`},
	{method: "PUT", path: "/api/v1/nodes/n1", ct: "application/json", body: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","resourceVersion":"2"}}`},
	{method: "PUT", path: "/api/v1/nodes/n2", ct: "application/json", body: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}`},
	{method: "POST", path: "/api/v1/nodes", ct: "application/json", body: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"Bad_Name"}}`},
	{method: "POST", path: "/api/v1/nodes", ct: "application/json", body: `{"apiVersion":"v1","kind":"Node","metadata":{}}`},
	{method: "PATCH", path: "/api/v1/nodes/n1", ct: "application/strategic-merge-patch+json", body: `{"spec":{"unschedulable":true}}`},
	{method: "PATCH", path: "/api/v1/nodes/n1/status", ct: "application/merge-patch+json", body: `{"status":{"conditions":[{"type":"Ready","status":"True"}],"nodeInfo":{"kubeletVersion":"v1.37.2+k3s1"}}}`},
	{method: "GET", path: "/api/v1/nodes/n1", accept: tableAccept},
	{method: "PATCH", path: "/api/v1/nodes/n1", ct: "text/plain", body: `{}`},
	{method: "PATCH", path: "/api/v1/nodes/n1", ct: "application/json-patch+json", body: `[{"op":"test","path":"/metadata/name","value":"zz"}]`},
	{method: "GET", path: "/api/v1/nodes?fieldSelector=spec.foo%3Dbar"},
	{method: "GET", path: "/api/v1/configmaps?fieldSelector=foo%3Dbar"},
	{method: "GET", path: "/api/v1/pods?fieldSelector=foo%3Dbar"},
	{method: "GET", path: "/api/v1/nodes?labelSelector=a%3D%3D%3Db"},
	{method: "DELETE", path: "/api/v1/namespaces/default"},
	{method: "POST", path: "/api/v1/namespaces", ct: "application/json", body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"t"}}`},
	{method: "POST", path: "/api/v1/namespaces/t/serviceaccounts", ct: "application/json", body: `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}`, refOnly: true},
	{method: "GET", path: "/api/v1/namespaces/nope/configmaps/x"},
	{method: "POST", path: "/apis/coordination.k8s.io/v1/namespaces/t/leases", ct: "application/json", body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l1"},"spec":{"holderIdentity":"a"}}`},
	{method: "POST", path: "/apis/coordination.k8s.io/v1/namespaces/t/leases", ct: "application/json", body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l1"}}`},
	{method: "POST", path: "/apis/coordination.k8s.io/v1/namespaces/nope/leases", ct: "application/json", body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l1"}}`},
	{method: "POST", path: "/apis/coordination.k8s.io/v1/namespaces/t/leases", ct: "application/json", body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l2","namespace":"other"}}`},
	{method: "PUT", path: "/apis/coordination.k8s.io/v1/namespaces/t/leases/l3", ct: "application/json", body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l3"}}`},
	{method: "PUT", path: "/apis/coordination.k8s.io/v1/namespaces/t/leases/l3", ct: "application/json", body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l3"}}`},
	{method: "PATCH", path: "/apis/coordination.k8s.io/v1/namespaces/t/leases/nope", ct: "application/merge-patch+json", body: `{}`},
	{method: "POST", path: "/api/v1/namespaces/t/configmaps", ct: "application/json", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"1"}},"data":{"k":"v"}}`},
	{method: "POST", path: "/api/v1/namespaces/t/configmaps", ct: "application/json", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","finalizers":["example.com/f"]}}`},
	{method: "POST", path: "/api/v1/namespaces/t/configmaps?dryRun=All", ct: "application/json", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`},
	{method: "GET", path: "/api/v1/namespaces/t/configmaps/c"},
	{method: "GET", path: "/api/v1/namespaces/t/configmaps", accept: tableAccept},
	{method: "GET", path: "/api/v1/namespaces/t/configmaps?includeObject=None", accept: tableAccept},
	{method: "GET", path: "/api/v1/namespaces/t/configmaps", accept: "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"},
	{method: "GET", path: "/api/v1/namespaces/t/configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"},
	{method: "GET", path: "/api/v1/namespaces/t/configmaps?watch=1&resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=1"},
	{method: "GET", path: "/api/v1/namespaces/t/configmaps?watch=1&sendInitialEvents=true&timeoutSeconds=1"},
	{method: "GET", path: "/api/v1/namespaces/t/configmaps?watch=1&timeoutSeconds=1&resourceVersion=abc"},
	{method: "GET", path: "/api/v1/namespaces/t/configmaps?continue=abc"},
	{method: "DELETE", path: "/api/v1/namespaces/t/configmaps/b"},
	{method: "DELETE", path: "/api/v1/namespaces/t/configmaps/b"},
	{method: "PATCH", path: "/api/v1/namespaces/t/configmaps/b", ct: "application/merge-patch+json", body: `{"metadata":{"finalizers":["example.com/g"]}}`},
	{method: "PATCH", path: "/api/v1/namespaces/t/configmaps/b", ct: "application/json-patch+json", body: `[{"op":"remove","path":"/metadata/finalizers"}]`},
	{method: "GET", path: "/api/v1/namespaces/t/configmaps/b"},
	{method: "DELETE", path: "/api/v1/namespaces/t/configmaps?labelSelector=x%3D1"},
	{method: "POST", path: "/api/v1/namespaces/t/configmaps", ct: "application/json", body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`},
	{method: "POST", path: "/api/v1/namespaces/t/configmaps", ct: "application/json", body: `{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"x"}}`},
	{method: "POST", path: "/api/v1/namespaces/t/configmaps", ct: "application/json", body: `{"metadata":{"name":"x"}`},
	{method: "POST", path: "/api/v1/namespaces/t/configmaps/x", ct: "application/json", body: `{"metadata":{"name":"x"}}`},
	{method: "POST", path: "/api/v1/namespaces/t/secrets", ct: "application/json", body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"a":"b"}}`},
	{method: "POST", path: "/api/v1/namespaces/t/pods", ct: "application/json", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1","labels":{"app":"g"}},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"nginx:1.27","ports":[{"containerPort":80}],"resources":{"limits":{"cpu":"1"}}},{"name":"d","image":"busybox"}]}}`},
	{method: "PATCH", path: "/api/v1/namespaces/t/pods/p1/status", ct: "application/strategic-merge-patch+json", body: `{"status":{"phase":"Running","podIP":"10.42.0.9","podIPs":[{"ip":"10.42.0.9"}],"conditions":[{"type":"Ready","status":"True"}],"containerStatuses":[{"name":"c","ready":true,"restartCount":2,"state":{"running":{}},"image":"nginx","imageID":"","lastState":{}},{"name":"d","ready":false,"restartCount":0,"state":{"waiting":{"reason":"CrashLoopBackOff"}},"image":"busybox","imageID":"","lastState":{}}]}}`},
	{method: "GET", path: "/api/v1/namespaces/t/pods", accept: tableAccept},
	{method: "GET", path: "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1"},
	{method: "PATCH", path: "/api/v1/namespaces/t/pods/p1", ct: "application/strategic-merge-patch+json", body: `{"spec":{"containers":[{"name":"c","image":"nginx:1.28"}]}}`},
	{method: "GET", path: "/api/v1/namespaces/t/pods/p1/eviction"},
	{method: "POST", path: "/api/v1/namespaces/t/pods/p1/eviction", ct: "application/json", body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p3"}}`},
	{method: "POST", path: "/api/v1/namespaces/t/pods/p2/eviction", ct: "application/json", body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p2"}}`},
	{method: "POST", path: "/api/v1/namespaces/t/pods/p1/eviction", ct: "application/json", body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p1"}}`},
	{method: "GET", path: "/api/v1/namespaces/t/pods/p1"},
	{method: "DELETE", path: "/api/v1/namespaces/t/pods/p1", ct: "application/json", body: `{"gracePeriodSeconds":10}`},
	{method: "DELETE", path: "/api/v1/namespaces/t/pods/p1", ct: "application/json", body: `{"gracePeriodSeconds":0}`},
	{method: "GET", path: "/api/v1/namespaces/t/pods/p1"},
	{method: "POST", path: "/apis/apps/v1/namespaces/t/deployments", ct: "application/json", body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":3,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"nginx"},{"name":"e","image":"busybox:1"}]}}}}`},
	{method: "POST", path: "/apis/apps/v1/namespaces/t/daemonsets", ct: "application/json", body: `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"nodeSelector":{"kubernetes.io/os":"linux"},"containers":[{"name":"c","image":"nginx"}]}}}}`},
	{method: "POST", path: "/apis/apps/v1/namespaces/t/statefulsets", ct: "application/json", body: `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"s"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`},
	{method: "PATCH", path: "/apis/apps/v1/namespaces/t/daemonsets/ds", ct: "application/merge-patch+json", body: `{"spec":{"minReadySeconds":3}}`},
	{method: "GET", path: "/apis/apps/v1/namespaces/t/deployments", accept: tableAccept},
	{method: "GET", path: "/apis/apps/v1/namespaces/t/daemonsets", accept: tableAccept},
	{method: "POST", path: "/api/v1/namespaces/t/services", ct: "application/json", body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s1"},"spec":{"clusterIP":"10.43.99.99","selector":{"a":"b"},"ports":[{"name":"http","port":80},{"name":"dns","port":53,"protocol":"UDP"}]}}`},
	{method: "POST", path: "/api/v1/namespaces/t/services", ct: "application/json", body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s2"},"spec":{"ports":[{"port":80},{"port":81}]}}`},
	{method: "GET", path: "/api/v1/namespaces/t/services", accept: tableAccept},
	{method: "POST", path: "/apis/policy/v1/namespaces/t/poddisruptionbudgets", ct: "application/json", body: `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"p"},"spec":{"maxUnavailable":"50%","selector":{}}}`},
	{method: "PUT", path: "/apis/policy/v1/namespaces/t/poddisruptionbudgets/p", ct: "application/json", body: `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"p"},"spec":{"maxUnavailable":1}}`},
	{method: "POST", path: "/api/v1/namespaces/t/events", ct: "application/json", body: `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e1"},"involvedObject":{"kind":"Pod","name":"p1","namespace":"t"},"reason":"Test","message":"m","type":"Normal"}`},
	{method: "GET", path: "/api/v1/namespaces/t/events?fieldSelector=involvedObject.name%3Dp1,reason%3DTest"},
	{method: "PUT", path: "/api/v1/namespaces/t/endpoints/ep", ct: "application/json", body: `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"ep"}}`},
	{method: "PUT", path: "/api/v1/nodes/n1/status", ct: "application/json", body: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","labels":{"s":"t"}},"spec":{"unschedulable":false},"status":{"phase":"Running"}}`},
	{method: "GET", path: "/api/v1/nodes/n1/status"},
	{method: "GET", path: "/apis/apps/v1/namespaces/t/deployments/nope/status"},
	{method: "PATCH", path: "/api/v1/nodes/n1", ct: "application/json-patch+json", body: `[{"op":"remove","path":"/metadata/labels/nope"}]`},
	{method: "PATCH", path: "/api/v1/nodes/n1", ct: "application/json-patch+json", body: `not json`},
	{method: "PATCH", path: "/api/v1/nodes/n1", ct: "application/merge-patch+json", body: `not json`},
	{method: "PATCH", path: "/api/v1/nodes/n1", ct: "application/strategic-merge-patch+json", body: `{"metadata":{"labels":{"$patch":"replace","a":"b"}}}`},
	{method: "POST", path: "/api/v1/namespaces/t/configmaps", ct: "application/json", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u"},"unknownField":1,"data":{"k":"v"}}`},
	{method: "POST", path: "/api/v1/namespaces/t/pods", ct: "application/json", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"f","finalizers":["example.com/f"]},"spec":{"nodeName":"n1","terminationGracePeriodSeconds":5,"containers":[{"name":"c","image":"nginx:1"}]}}`},
	{method: "DELETE", path: "/api/v1/namespaces/t/pods/f"},
	{method: "DELETE", path: "/api/v1/namespaces/t/pods/f", ct: "application/json", body: `{"gracePeriodSeconds":30}`},
	{method: "DELETE", path: "/api/v1/namespaces/t/pods/f", ct: "application/json", body: `{"gracePeriodSeconds":0}`},
	{method: "PATCH", path: "/api/v1/namespaces/t/pods/f", ct: "application/merge-patch+json", body: `{"metadata":{"finalizers":null}}`},
	{method: "GET", path: "/api/v1/namespaces/t/pods/f"},
	{method: "POST", path: "/api/v1/namespaces/t/pods", ct: "application/json", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"g-"},"spec":{"containers":[{"name":"c","image":"nginx:1"}]}}`},
	{method: "GET", path: "/api/v1/namespaces/t/pods?watch=1&labelSelector=app%3Dg&resourceVersion=0&timeoutSeconds=1"},
	{method: "GET", path: "/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dn1&timeoutSeconds=1", accept: tableAccept},
	{method: "DELETE", path: "/api/v1/namespaces/t"},
	{method: "DELETE", path: "/api/v1/nodes/n1"},
	{method: "GET", path: "/apis/nope/v1"},
	{method: "GET", path: "/api/v1/nopes"},
	{method: "GET", path: "/api/v1/nodes", accept: "text/html"},
	{method: "GET", path: "/version"},
	{method: "GET", path: "/readyz?verbose"},
	{method: "GET", path: "/livez?verbose"},
	{method: "GET", path: "/apis/coordination.k8s.io/v1"},
	{method: "GET", path: "/apis/policy"},
}

var (
	uidRE  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRE = regexp.MustCompile(`20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	rvRE   = regexp.MustCompile(`"resourceVersion":"\d+"`)
	ageRE  = regexp.MustCompile(`"\d+[smh]"`)
	tokRE  = regexp.MustCompile(`kube-api-access-[a-z0-9]{5}|"g-[a-z0-9]{5}"`)
)

// normalize makes two servers' answers comparable: JSON lines lose their
// managedFields and are re-encoded with sorted keys; uids, timestamps,
// resourceVersions, ages and generated names are masked.
func normalize(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		var v any
		if json.Unmarshal([]byte(l), &v) == nil {
			b, _ := json.Marshal(dropManagedFields(v))
			lines[i] = string(b)
		}
	}
	s = strings.Join(lines, "\n")
	for re, with := range map[*regexp.Regexp]string{uidRE: "UID", timeRE: "TIME", rvRE: `"resourceVersion":"RV"`, ageRE: `"AGE"`, tokRE: "kube-api-access-XXXXX"} {
		s = re.ReplaceAllString(s, with)
	}
	return s
}

func dropManagedFields(v any) any {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "managedFields")
		for _, e := range x {
			dropManagedFields(e)
		}
	case []any:
		for _, e := range x {
			dropManagedFields(e)
		}
	}
	return v
}

// startStandin runs the k3s stand-in (the real kube-apiserver v1.37.2 over
// etcd) as a fresh single server, answering its admin rest.Config.
func startStandin(t *testing.T) *rest.Config {
	bin := os.Getenv("K3S_STANDIN_BINARY")
	if bin == "" {
		testenv.Unavailable(t, "kubelite: K3S_STANDIN_BINARY is not set: run `make standin` and set K3S_STANDIN_BINARY=$PWD/bin/k3s-standin (make test does both)")
	}
	dir := t.TempDir()
	ports := make([]string, 3)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, ports[i], _ = net.SplitHostPort(l.Addr().String())
		l.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "server", "--cluster-init", "-d", filepath.Join(dir, "data"), "--bind-address", "127.0.0.1", "--https-listen-port", ports[0],
		"--standin-etcd-client-port", ports[1], "--standin-etcd-peer-port", ports[2], "--node-name", "ref", "--node-ip", "127.0.0.1",
		"-o", filepath.Join(dir, "k3s.yaml"), "--token", "t0k3n", "--standin-node-password-file", filepath.Join(dir, "node-passwd"))
	cmd.Env = append(os.Environ(), "K3S_CONFIG_FILE="+filepath.Join(dir, "none.yaml"))
	log, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait(); log.Close() })
	deadline := time.Now().Add(90 * time.Second)
	for {
		if cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "k3s.yaml")); err == nil {
			if code, _ := request(t, cfg, diffStep{method: "GET", path: "/readyz"}); code == 200 {
				return cfg
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("the stand-in is not ready after 90s:\n%s", b)
		}
		time.Sleep(200 * time.Millisecond) // polling a process we do not control
	}
}

func request(t *testing.T, cfg *rest.Config, st diffStep) (int, string) {
	tr, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(st.method, cfg.Host+st.path, strings.NewReader(st.body))
	if st.ct != "" {
		req.Header.Set("Content-Type", st.ct)
	}
	if st.accept != "" {
		req.Header.Set("Accept", st.accept)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, fmt.Sprintf("%d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), strings.TrimSpace(string(b)))
}

// TestDifferential sends the same requests to kubelite and to the real
// kube-apiserver (the k3s stand-in) and compares the answers.
func TestDifferential(t *testing.T) {
	ref := startStandin(t)
	c := newCluster(t)
	for i, st := range diffSteps {
		_, want := request(t, ref, st)
		if st.refOnly {
			continue
		}
		_, got := request(t, c.config, st)
		if want, got = normalize(want), normalize(got); want != got {
			t.Errorf("step %d: %s %s %s\nreal:     %s\nkubelite: %s", i, st.method, st.path, st.body, want, got)
		}
	}
}
