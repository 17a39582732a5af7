package agenttest

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Architectures a ReleaseServer publishes, with their asset names.
var releaseArches = []struct{ arch, binary, sums string }{
	{"amd64", "k3s", "sha256sum-amd64.txt"},
	{"arm64", "k3s-arm64", "sha256sum-arm64.txt"},
	{"arm", "k3s-armhf", "sha256sum-arm.txt"},
}

// ReleaseServer is a fake k3s release site laid out like the GitHub
// releases: <URL>/<version>/<asset>. It counts the requests it gets, can
// publish corrupt checksums, and can hang or hold requests.
//
// A ReleaseServer is safe for concurrent use.
type ReleaseServer struct {
	srv *httptest.Server
	tb  testing.TB

	mu       sync.Mutex // guards the fields below
	files    map[string][]byte
	requests []string
	hang     bool
	hold     chan struct{} // non-nil: requests wait until it is closed
	held     chan struct{} // receives once per held request
}

// NewReleaseServer starts a release server, closed when tb ends.
func NewReleaseServer(tb testing.TB) *ReleaseServer {
	tb.Helper()
	rs := &ReleaseServer{files: map[string][]byte{}, tb: tb}
	rs.srv = httptest.NewServer(http.HandlerFunc(rs.serve))
	tb.Cleanup(rs.srv.Close)
	return rs
}

// URL is the base URL to give the agent (ServerConfig.ReleaseURL).
func (rs *ReleaseServer) URL() string { return rs.srv.URL }

// Publish publishes version for every architecture: fake binaries
// ([FakeBinary]) and sha256sum-<arch>.txt files listing them.
func (rs *ReleaseServer) Publish(version string) { rs.publish(version, version, false) }

// PublishCorrupt publishes version with binaries that do not match their
// published checksums.
func (rs *ReleaseServer) PublishCorrupt(version string) { rs.publish(version, version, true) }

// PublishMislabelled publishes, under version, binaries that report
// reports instead (with matching checksums): a release built from the
// wrong tag.
func (rs *ReleaseServer) PublishMislabelled(version, reports string) {
	rs.publish(version, reports, false)
}

func (rs *ReleaseServer) publish(version, reports string, corrupt bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	bin := FakeBinary(reports)
	sum := sha256.Sum256(bin)
	for _, a := range releaseArches {
		served := bin
		if corrupt {
			served = append([]byte("#tampered\n"), bin...)
		}
		rs.files["/"+version+"/"+a.binary] = served
		var sb strings.Builder
		fmt.Fprintf(&sb, "%x  k3s-airgap-images-%s.tar.zst\n", sha256.Sum256([]byte(a.arch)), a.arch)
		fmt.Fprintf(&sb, "%x  %s\n", sum, a.binary)
		rs.files["/"+version+"/"+a.sums] = []byte(sb.String())
	}
}

// SetHang makes every request hang until the client gives up (true) or
// be answered again (false).
func (rs *ReleaseServer) SetHang(hang bool) { rs.mu.Lock(); rs.hang = hang; rs.mu.Unlock() }

// Hold makes requests wait until release is called. Each request that
// starts waiting sends on the returned channel, so a test knows an agent
// is mid-download. Requests still held when the test ends are released.
func (rs *ReleaseServer) Hold() (waiting <-chan struct{}, release func()) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	hold, held := make(chan struct{}), make(chan struct{}, 16)
	rs.hold, rs.held = hold, held
	var once sync.Once
	release = func() {
		once.Do(func() {
			rs.mu.Lock()
			if rs.hold == hold {
				rs.hold = nil
			}
			rs.mu.Unlock()
			close(hold)
		})
	}
	rs.tb.Cleanup(release)
	return held, release
}

// Requests returns the paths requested so far, in order.
func (rs *ReleaseServer) Requests() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]string(nil), rs.requests...)
}

func (rs *ReleaseServer) serve(w http.ResponseWriter, r *http.Request) {
	rs.mu.Lock()
	rs.requests = append(rs.requests, r.URL.Path)
	hang, hold, held := rs.hang, rs.hold, rs.held
	data, ok := rs.files[r.URL.Path]
	rs.mu.Unlock()
	if hang {
		<-r.Context().Done()
		return
	}
	if hold != nil {
		select {
		case held <- struct{}{}:
		default:
		}
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	if r.Method != http.MethodGet || !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(data)
}
