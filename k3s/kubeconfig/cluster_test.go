package kubeconfig_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/k3s/kubeconfig"
)

// fakeAPI is an HTTPS server answering /readyz with readyz (status and
// body) and /api/v1/nodes with nodes.
type fakeAPI struct {
	*httptest.Server
	readyz atomic.Value // func(http.ResponseWriter, *http.Request)
	nodes  []corev1.Node
	// evictions counts the eviction requests for pod default/bare, which
	// are refused as a disruption budget refuses them.
	evictions atomic.Int32
}

func newFakeAPI(t *testing.T, nodes ...corev1.Node) *fakeAPI {
	t.Helper()
	f := &fakeAPI{nodes: nodes}
	f.setReadyz(http.StatusOK, "ok")
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz":
			f.readyz.Load().(func(http.ResponseWriter, *http.Request))(w, r)
		case "/api/v1/namespaces/default/pods/bare/eviction":
			// As kube-apiserver refuses an eviction a PodDisruptionBudget
			// forbids.
			f.evictions.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "10")
			w.WriteHeader(http.StatusTooManyRequests)
			json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
				Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests,
				Message: "Cannot evict pod as it would violate the pod's disruption budget.",
				Details: &metav1.StatusDetails{RetryAfterSeconds: 10}})
		case "/api/v1/nodes":
			list := corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, Items: f.nodes}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(list)
		default:
			http.NotFound(w, r)
		}
	}))
	f.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	f.StartTLS()
	t.Cleanup(f.Close)
	return f
}

// otherCA returns a self-signed CA certificate (PEM) that signed nothing
// the tests serve.
func otherCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "other-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func (f *fakeAPI) setReadyz(code int, body string) {
	f.readyz.Store(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		w.Write([]byte(body))
	})
}

// kubeconfig returns a kubeconfig for the server at url trusting the fake
// server's certificate.
func (f *fakeAPI) kubeconfig(t *testing.T, url string) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["lab"] = &clientcmdapi.Cluster{
		Server:                   url,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.Certificate().Raw}),
	}
	cfg.AuthInfos["lab"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "lab"}
	cfg.CurrentContext = "lab"
	return encode(t, cfg)
}

func (f *fakeAPI) client(t *testing.T) *kubeconfig.Cluster {
	t.Helper()
	c, err := kubeconfig.Client(f.kubeconfig(t, f.URL))
	require.NoError(t, err)
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestReady(t *testing.T) {
	f := newFakeAPI(t)
	c := f.client(t)
	assert.Equal(t, f.URL, c.Server())
	assert.NotNil(t, c.Kubernetes())
	require.NoError(t, c.Ready(testContext(t)))

	t.Run("not ready", func(t *testing.T) {
		f.setReadyz(http.StatusInternalServerError, "[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed\n")
		defer f.setReadyz(http.StatusOK, "ok")
		err := c.Ready(testContext(t))
		requireCode(t, err, errcode.Transient)
		assert.Contains(t, err.Error(), "etcd failed")
		assert.Contains(t, err.Error(), f.URL)
	})
	t.Run("another answer", func(t *testing.T) {
		f.setReadyz(http.StatusOK, "maybe")
		defer f.setReadyz(http.StatusOK, "ok")
		err := c.Ready(testContext(t))
		requireCode(t, err, errcode.Transient)
		assert.Contains(t, err.Error(), `"maybe"`)
	})
	t.Run("unauthorized", func(t *testing.T) {
		f.setReadyz(http.StatusUnauthorized, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
		defer f.setReadyz(http.StatusOK, "ok")
		requireCode(t, c.Ready(testContext(t)), errcode.Unauthorized)
	})
	t.Run("forbidden", func(t *testing.T) {
		f.setReadyz(http.StatusForbidden, "forbidden")
		defer f.setReadyz(http.StatusOK, "ok")
		requireCode(t, c.Ready(testContext(t)), errcode.Unauthorized)
	})
	t.Run("not found", func(t *testing.T) {
		f.setReadyz(http.StatusNotFound, "404 page not found")
		defer f.setReadyz(http.StatusOK, "ok")
		requireCode(t, c.Ready(testContext(t)), errcode.Invalid)
	})
	t.Run("too many requests", func(t *testing.T) {
		f.setReadyz(http.StatusTooManyRequests, "slow down")
		defer f.setReadyz(http.StatusOK, "ok")
		requireCode(t, c.Ready(testContext(t)), errcode.Transient)
	})
	t.Run("deadline", func(t *testing.T) {
		// The server answers only after the client gave up, and then with
		// nothing: its request context alone is not a sure signal (under
		// load it has ended early, and the handler's return sent a 200).
		release := make(chan struct{})
		f.readyz.Store(func(w http.ResponseWriter, r *http.Request) {
			<-release
			panic(http.ErrAbortHandler)
		})
		defer f.setReadyz(http.StatusOK, "ok")
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		err := c.Ready(ctx)
		close(release)
		requireCode(t, err, errcode.Transient)
		assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	})
	t.Run("unknown CA", func(t *testing.T) {
		cfg := loadConfig(t, f.kubeconfig(t, f.URL))
		cfg.Clusters["lab"].CertificateAuthorityData = otherCA(t)
		c, err := kubeconfig.Client(encode(t, cfg))
		require.NoError(t, err)
		err = c.Ready(testContext(t))
		requireCode(t, err, errcode.Invalid)
		assert.Contains(t, err.Error(), "certificate")
	})
	t.Run("host not in the certificate", func(t *testing.T) {
		// httptest's certificate names 127.0.0.1 and example.com, not localhost.
		_, port, err := net.SplitHostPort(strings.TrimPrefix(f.URL, "https://"))
		require.NoError(t, err)
		c, err := kubeconfig.Client(f.kubeconfig(t, "https://localhost:"+port))
		require.NoError(t, err)
		err = c.Ready(testContext(t))
		requireCode(t, err, errcode.Invalid)
		assert.Contains(t, err.Error(), "certificate")
	})
	t.Run("nothing listening", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		l.Close()
		c, err := kubeconfig.Client(f.kubeconfig(t, "https://"+addr))
		require.NoError(t, err)
		requireCode(t, c.Ready(testContext(t)), errcode.Transient)
	})
}

func TestNodes(t *testing.T) {
	server := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "s1", Labels: map[string]string{
			"node-role.kubernetes.io/master":        "true",
			"node-role.kubernetes.io/control-plane": "true",
			"node-role.kubernetes.io/etcd":          "true",
			"node-role.kubernetes.io/":              "true", // no role name: ignored
			"kubernetes.io/hostname":                "s1",
		}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule},
			{Key: "CriticalAddonsOnly", Value: "true", Effect: corev1.TaintEffectNoExecute},
		}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeHostName, Address: "s1"},
				{Type: corev1.NodeInternalIP, Address: "10.0.0.11"},
				{Type: corev1.NodeInternalIP, Address: "fd00::11"},
			},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.2+k3s1"},
		},
	}
	agent := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "a1", Labels: map[string]string{"kubernetes.io/role": "worker"}},
		Spec:       corev1.NodeSpec{Unschedulable: true},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.36.1+k3s1"},
		},
	}
	bare := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b0"}}
	f := newFakeAPI(t, server, agent, bare)

	nodes, err := f.client(t).Nodes(testContext(t))
	require.NoError(t, err)
	assert.Equal(t, []kubeconfig.Node{
		{Name: "a1", Roles: []string{"worker"}, KubeletVersion: "v1.36.1+k3s1", Unschedulable: true},
		{Name: "b0"},
		{
			Name: "s1", Ready: true, Roles: []string{"control-plane", "etcd", "master"},
			KubeletVersion: "v1.37.2+k3s1", InternalIP: "10.0.0.11",
			Taints: []string{"node-role.kubernetes.io/control-plane:NoSchedule", "CriticalAddonsOnly=true:NoExecute"},
		},
	}, nodes)
}

// TestEvictionRefusalIsNotWaitedOut: an eviction a disruption budget
// refuses comes back after one request, for the drain to see and retry on
// its own schedule; client-go alone would wait the Retry-After (10 s) and
// ask again, ten times within the one call.
func TestEvictionRefusalIsNotWaitedOut(t *testing.T) {
	f := newFakeAPI(t)
	err := f.client(t).Kubernetes().PolicyV1().Evictions("default").Evict(testContext(t),
		&policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "default"}})
	require.Error(t, err)
	assert.True(t, apierrors.IsTooManyRequests(err), "%v", err)
	assert.Contains(t, err.Error(), "disruption budget")
	assert.Equal(t, int32(1), f.evictions.Load(), "one request, no retry inside the call")
}

func TestClientRefuses(t *testing.T) {
	for name, data := range map[string]string{
		"not YAML":           "{{{",
		"no current context": "kind: Config\napiVersion: v1\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := kubeconfig.Client([]byte(data))
			requireCode(t, err, errcode.Invalid)
		})
	}
}
