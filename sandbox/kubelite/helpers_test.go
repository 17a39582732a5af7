package kubelite_test

import (
	"net/http"
	"testing"

	"github.com/openctl/openctl/sandbox/kubelite"
	"github.com/openctl/openctl/sandbox/kubelite/kubelitetest"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// cluster is a test server of one store.
type cluster struct {
	store  *kubelite.Store
	server *kubelitetest.Server
	config *rest.Config
	client *kubernetes.Clientset
}

const testToken = kubelitetest.Token

func newCluster(t testing.TB) *cluster {
	s := kubelitetest.Start(t, nil)
	return &cluster{s.Store, s, s.Config, s.Client}
}

func newCA(t testing.TB) *kubelitetest.CA { return kubelitetest.NewCA(t) }

// httpClient is an HTTP client authenticating with the admin certificate.
func (c *cluster) httpClient(t testing.TB) *http.Client {
	tr, err := rest.TransportFor(c.config)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: tr}
}
