package k3stest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/internal/testenv"
	"github.com/openctl/openctl/k3s/k3stest"
)

// standinBinary is $K3S_STANDIN_BINARY, absolute; without it the test
// ends through testenv.Unavailable (a skip, or a failure under CI=true).
func standinBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("K3S_STANDIN_BINARY")
	if bin == "" {
		testenv.Unavailable(t, "k3stest: K3S_STANDIN_BINARY is not set: run `make standin` and set K3S_STANDIN_BINARY=$PWD/bin/k3s-standin (make test does both)")
	}
	bin, err := filepath.Abs(bin)
	require.NoError(t, err)
	_, err = os.Stat(bin)
	require.NoError(t, err, "K3S_STANDIN_BINARY")
	return bin
}

var k3sVersionLineRE = regexp.MustCompile(`^k3s version (v\S+) \(`)

// binaryVersion runs `bin --version` and returns the version it reports.
func binaryVersion(ctx context.Context, t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	require.NoError(t, err)
	m := k3sVersionLineRE.FindStringSubmatch(string(out))
	require.NotNil(t, m, "%s --version: %s", bin, out)
	return m[1]
}

// standinTrailer makes a copy of the stand-in report version (see the
// stand-in README, "Versions: a trailer, not a rebuild").
func standinTrailer(version string) []byte {
	return []byte("\n#openctl-k3s-standin version=" + version + " commit=abcdef12\n")
}

// releaseAsset is one k3s binary a standinRelease serves: the first size
// bytes of the stand-in followed by tail.
type releaseAsset struct {
	size int64
	tail []byte
	sum  string // what sha256sum-amd64.txt lists for it
}

// standinRelease is a k3s release site laid out as the agent expects,
// <URL>/<version>/sha256sum-amd64.txt and <URL>/<version>/k3s, served from
// the test process on the network's gateway address, which only the
// test hosts reach. Its binaries are copies of the stand-in made on the
// fly, so none is written to disk. Safe for concurrent use.
type standinRelease struct {
	url  string
	bin  string
	size int64
	base []byte // the SHA-256 state after the whole stand-in

	mu       sync.Mutex // guards assets and requests
	assets   map[string]releaseAsset
	requests map[string][]string // by client IP
}

func newStandinRelease(t *testing.T, n *k3stest.Network, bin string) *standinRelease {
	t.Helper()
	f, err := os.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	size, err := io.Copy(h, f)
	require.NoError(t, err)
	base, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	require.NoError(t, err)
	ln, err := net.Listen("tcp", net.JoinHostPort(n.Gateway().String(), "0"))
	require.NoError(t, err)
	r := &standinRelease{url: "http://" + ln.Addr().String(), bin: bin, size: size, base: base, assets: map[string]releaseAsset{}, requests: map[string][]string{}}
	srv := &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

// sumOf is the SHA-256 of the whole stand-in followed by tail, from the
// hash state saved after the stand-in.
func (r *standinRelease) sumOf(t *testing.T, tail []byte) string {
	t.Helper()
	h := sha256.New()
	require.NoError(t, h.(encoding.BinaryUnmarshaler).UnmarshalBinary(r.base))
	_, _ = h.Write(tail) // a hash.Hash never fails to write
	return hex.EncodeToString(h.Sum(nil))
}

// publish publishes version: a copy of the stand-in that reports reports,
// listed with its true checksum (or, if corrupt, with another one).
func (r *standinRelease) publish(t *testing.T, version, reports string, corrupt bool) {
	t.Helper()
	a := releaseAsset{size: r.size, tail: standinTrailer(reports)}
	a.sum = r.sumOf(t, a.tail)
	if corrupt {
		a.sum = r.sumOf(t, append(a.tail, '\n'))
	}
	r.mu.Lock()
	r.assets[version] = a
	r.mu.Unlock()
}

// publishTruncated publishes version as the first size bytes of the
// stand-in, listed with their checksum: a release whose binary dies as
// soon as it runs.
func (r *standinRelease) publishTruncated(t *testing.T, version string, size int64) {
	t.Helper()
	f, err := os.Open(r.bin)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, io.NewSectionReader(f, 0, size))
	require.NoError(t, err)
	r.mu.Lock()
	r.assets[version] = releaseAsset{size: size, sum: hex.EncodeToString(h.Sum(nil))}
	r.mu.Unlock()
}

// publishFile publishes version as the binary data, listed with its
// checksum.
func (r *standinRelease) publishFile(version string, data []byte) {
	r.mu.Lock()
	r.assets[version] = releaseAsset{tail: data, sum: fmt.Sprintf("%x", sha256.Sum256(data))}
	r.mu.Unlock()
}

// Requests returns the paths requested so far from the address ip.
func (r *standinRelease) Requests(ip netip.Addr) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests[ip.String()]...)
}

func (r *standinRelease) serve(w http.ResponseWriter, req *http.Request) {
	host, _, _ := net.SplitHostPort(req.RemoteAddr)
	r.mu.Lock()
	r.requests[host] = append(r.requests[host], req.URL.Path)
	version, file, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/"), "/")
	a, ok := r.assets[version]
	r.mu.Unlock()
	switch {
	case !ok || req.Method != http.MethodGet:
		http.NotFound(w, req)
	case file == "sha256sum-amd64.txt":
		fmt.Fprintf(w, "%x  k3s-airgap-images-amd64.tar.zst\n%s  k3s\n", sha256.Sum256([]byte(version)), a.sum)
	case file == "k3s":
		f, err := os.Open(r.bin)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(a.size+int64(len(a.tail)), 10))
		_, _ = io.Copy(w, io.MultiReader(io.NewSectionReader(f, 0, a.size), bytes.NewReader(a.tail)))
	default:
		http.NotFound(w, req)
	}
}

// crashingK3s is a k3s build that reports its version but dies at start,
// as k3s does on a host it cannot run on.
const crashingK3s = `#!/bin/sh
if [ "$1" = --version ]; then
	echo "k3s version v1.39.2+k3s1 (abcdef12)"
	echo "go version go1.25.5"
	exit 0
fi
echo 'time="2026-01-01T00:00:00Z" level=fatal msg="failed to find cpuset cgroup (v2)"' >&2
exit 1
`

// k3sNode is what the API says about a host's Node.
type k3sNode struct {
	ready, kubeletVersion string
}

// readNode asks the stand-in on h, as `k3s kubectl` with the admin
// kubeconfig it wrote, for h's Node.
func readNode(ctx context.Context, h *k3stest.Host) (k3sNode, error) {
	out, err := h.Run(ctx, "/usr/local/bin/k3s", "kubectl", "get", "node", h.Name(), "-o",
		`jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.nodeInfo.kubeletVersion}`)
	if err != nil {
		return k3sNode{}, fmt.Errorf("%w: %s", err, out)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return k3sNode{}, fmt.Errorf("unexpected answer %q", out)
	}
	return k3sNode{ready: f[0], kubeletVersion: f[1]}, nil
}

// waitServer waits until the k3s server on h answers /readyz with ok and
// its Node is Ready with kubeletVersion version.
func waitServer(ctx context.Context, t *testing.T, h *k3stest.Host, version string) {
	t.Helper()
	eventually(t, 90*time.Second, "k3s server on "+h.Name()+" ready at "+version, func() (bool, string) {
		out, err := h.Run(ctx, "/usr/local/bin/k3s", "kubectl", "get", "--raw", "/readyz")
		if err != nil || string(out) != "ok" {
			return false, fmt.Sprintf("/readyz: %v: %s", err, out)
		}
		n, err := readNode(ctx, h)
		if err != nil {
			return false, err.Error()
		}
		return n.ready == "True" && n.kubeletVersion == version, fmt.Sprintf("%+v", n)
	})
}

// hostSHA256 is the SHA-256 of a file on h.
func hostSHA256(ctx context.Context, t *testing.T, h *k3stest.Host, path string) string {
	t.Helper()
	out, err := h.Run(ctx, "sha256sum", path)
	require.NoError(t, err, "%s", out)
	return strings.Fields(string(out))[0]
}

// k3sPID is the pid of the k3s server process on h, or "" if none runs.
func k3sPID(ctx context.Context, h *k3stest.Host) string {
	out, _ := h.Run(ctx, "pgrep", "-x", "k3s")
	return strings.TrimSpace(string(out))
}

// TestAgentStandin runs the unmodified openctl-agent next to the k3s
// stand-in ($K3S_STANDIN_BINARY, the real kube-apiserver and etcd) as a
// `k3s server --cluster-init`, on a systemd host and on an OpenRC host in
// parallel, both installed as install.sh and the K3s provider leave
// them. Over mTLS, the agent reports the stand-in's version and state,
// streams its log, stops and restarts it, and upgrades it from a release
// served by the test: a good release is kept (the Node's kubeletVersion
// follows), a checksum mismatch installs nothing, and releases whose
// binary reports another version, dies when run, or reports the right
// version but dies at start are rolled back.
func TestAgentStandin(t *testing.T) {
	bin := standinBinary(t)
	ctx := testContext(t, 6*time.Minute)
	from := binaryVersion(ctx, t, bin)
	require.Equal(t, "v1.37.2+k3s1", from, "the stand-in without a trailer; the releases below are one and two minors newer")
	const (
		to         = "v1.38.0+k3s1" // a good release
		badSum     = "v1.38.1+k3s1" // its checksum file lists another hash
		mislabeled = "v1.39.0+k3s1" // its binary reports v1.38.2+k3s1
		truncated  = "v1.39.1+k3s1" // its binary is cut short: it dies when run
		crashing   = "v1.39.2+k3s1" // its binary reports v1.39.2+k3s1 but dies at start
	)
	// Long enough for a stand-in server to restart on a busy machine
	// (≈ 5-10 s here); the two OpenRC cases below wait all of it.
	const healthTimeout = 30 * time.Second
	binary := agentBinary(t)
	n := k3stest.NewNetwork(t)
	rel := newStandinRelease(t, n, bin)
	rel.publish(t, to, to, false)
	rel.publish(t, badSum, badSum, true)
	rel.publish(t, mislabeled, "v1.38.2+k3s1", false)
	rel.publishTruncated(t, truncated, 1<<20)
	rel.publishFile(crashing, []byte(crashingK3s))
	p := newAgentPKI(t)

	var hosts [2]*k3stest.Host
	var errs [2]error
	var wg sync.WaitGroup
	for i, f := range []k3stest.Flavour{k3stest.Systemd, k3stest.OpenRC} {
		wg.Go(func() { hosts[i], errs[i] = n.AddHost(ctx, "sa-"+string(f), k3stest.HostOptions{Flavour: f}) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs[:]...))

	for _, h := range hosts {
		t.Run(string(h.Flavour()), func(t *testing.T) {
			t.Parallel()
			began := time.Now()
			// k3s as install.sh leaves it, started as the provider does.
			require.NoError(t, h.CopyFile(ctx, bin, "/usr/local/bin/k3s", 0o755))
			args := []string{"--cluster-init", "--node-ip", h.Addr().String(), "--token", "s3cret"}
			var out []byte
			var err error
			if h.Flavour() == k3stest.Systemd {
				require.NoError(t, h.WriteFile(ctx, "/etc/systemd/system/k3s.service", []byte(k3sUnitFor("k3s", append([]string{"server"}, args...)...)), 0o644))
				require.NoError(t, h.WriteFile(ctx, "/etc/systemd/system/k3s.service.env", nil, 0o600))
				out, err = h.Run(ctx, "sh", "-c", "systemctl daemon-reload && systemctl enable /etc/systemd/system/k3s.service && systemctl restart k3s")
			} else {
				require.NoError(t, h.WriteFile(ctx, "/etc/init.d/k3s", []byte(k3sOpenRCFor("server", args...)), 0o755))
				require.NoError(t, h.WriteFile(ctx, "/etc/rancher/k3s/k3s.env", nil, 0o600))
				out, err = h.Run(ctx, "sh", "-c", "rc-update add k3s default && rc-service k3s start")
			}
			require.NoError(t, err, "%s", out)
			waitServer(ctx, t, h, from)
			t.Logf("k3s server on %s ready %s after install", h.Name(), time.Since(began).Round(time.Millisecond))

			c := installAgent(ctx, t, h, p, binary, agent.InstallOptions{ReleaseURL: rel.url, HealthTimeout: healthTimeout})
			info, err := c.Info(ctx)
			require.NoError(t, err)
			assert.Equal(t, h.Name(), info.Hostname)
			assert.Equal(t, agent.InitSystem(h.Flavour()), info.Init)
			assert.Equal(t, agent.RoleServer, info.Role)
			assert.Equal(t, from, info.K3sVersion)
			assert.Equal(t, agent.StateActive, info.ServiceState)
			assert.Empty(t, info.Problems)
			assert.True(t, info.Has(agent.CapUpgrade) && info.Has(agent.CapRollback), "%v", info.Capabilities)

			// The stand-in's own start-up lines, from the journal
			// stand-in or /var/log/k3s.log.
			var logs bytes.Buffer
			require.NoError(t, c.Logs(ctx, agent.MaxLogLines, &logs))
			for _, line := range []string{"Kube API server is now running", "k3s is up and running"} {
				assert.Contains(t, logs.String(), line)
			}

			// Stop and restart drive the real server.
			require.NoError(t, c.Stop(ctx))
			info, err = c.Info(ctx)
			require.NoError(t, err)
			assert.Equal(t, agent.StateInactive, info.ServiceState)
			assert.Empty(t, k3sPID(ctx, h), "no k3s process after stop")
			out, err = h.Run(ctx, "/usr/local/bin/k3s", "kubectl", "get", "--raw", "/readyz")
			assert.Error(t, err, "the API server is down: %s", out)
			require.NoError(t, c.Restart(ctx))
			info, err = c.Info(ctx)
			require.NoError(t, err)
			assert.Equal(t, agent.StateActive, info.ServiceState)
			waitServer(ctx, t, h, from)
			origSum := hostSHA256(ctx, t, h, "/usr/local/bin/k3s")

			// A good release: kept, and the Node follows.
			began = time.Now()
			res, err := c.Upgrade(ctx, to)
			require.NoError(t, err)
			t.Logf("upgrade %s -> %s on %s: %s", from, to, h.Name(), time.Since(began).Round(time.Millisecond))
			assert.Equal(t, &agent.UpgradeResult{Status: agent.UpgradeUpgraded, From: from, To: to, ServiceState: agent.StateActive}, res)
			waitServer(ctx, t, h, to)
			t.Logf("upgrade %s -> %s on %s: Node at %s after %s", from, to, h.Name(), to, time.Since(began).Round(time.Millisecond))
			info, err = c.Info(ctx)
			require.NoError(t, err)
			assert.Equal(t, to, info.K3sVersion)
			assert.Equal(t, agent.StateActive, info.ServiceState)
			assert.Equal(t, rel.sumOf(t, standinTrailer(to)), hostSHA256(ctx, t, h, "/usr/local/bin/k3s"))
			assert.Equal(t, origSum, hostSHA256(ctx, t, h, "/usr/local/bin/k3s.previous"), "the previous binary is kept")
			out, err = h.Run(ctx, "/usr/local/bin/k3s.previous", "--version")
			require.NoError(t, err, "%s", out)
			assert.Contains(t, string(out), "k3s version "+from+" (")
			upgradedSum := hostSHA256(ctx, t, h, "/usr/local/bin/k3s")

			// A checksum mismatch installs nothing and restarts nothing.
			pid := k3sPID(ctx, h)
			require.NotEmpty(t, pid)
			res, err = c.Upgrade(ctx, badSum)
			require.Error(t, err)
			assert.Nil(t, res)
			assert.True(t, errors.Is(err, errcode.Internal), "%v", err)
			assert.Contains(t, err.Error(), "nothing was installed")
			assert.Equal(t, upgradedSum, hostSHA256(ctx, t, h, "/usr/local/bin/k3s"))
			assert.Equal(t, origSum, hostSHA256(ctx, t, h, "/usr/local/bin/k3s.previous"))
			ls, err := h.Run(ctx, "ls", "-A", "/usr/local/bin")
			require.NoError(t, err)
			assert.NotContains(t, string(ls), ".k3s-upgrade-", "no temporary file left")
			assert.Equal(t, pid, k3sPID(ctx, h), "k3s was not restarted")

			// A binary reporting another version than its release: rolled
			// back at once.
			rollback := func(version string, wantReason *regexp.Regexp) {
				t.Helper()
				began := time.Now()
				res, err := c.Upgrade(ctx, version)
				elapsed := time.Since(began)
				require.ErrorIs(t, err, agent.ErrRolledBack)
				require.NotNil(t, res)
				t.Logf("upgrade %s -> %s on %s rolled back after %s: %s", to, version, h.Name(), elapsed.Round(time.Millisecond), res.Reason)
				assert.Equal(t, agent.UpgradeRolledBack, res.Status)
				assert.Equal(t, to, res.From)
				assert.Equal(t, version, res.To)
				assert.Regexp(t, wantReason, res.Reason)
				assert.NotContains(t, res.Reason, "after rollback", "the previous k3s restarted")
				assert.NotContains(t, res.Reason, "the previous k3s has not", "and came back up")
				assert.Equal(t, agent.StateActive, res.ServiceState)
				assert.Equal(t, upgradedSum, hostSHA256(ctx, t, h, "/usr/local/bin/k3s"), "the previous binary is back")
				info, err := c.Info(ctx)
				require.NoError(t, err)
				assert.Equal(t, to, info.K3sVersion)
				assert.Equal(t, agent.StateActive, info.ServiceState)
				waitServer(ctx, t, h, to)
				t.Logf("upgrade %s -> %s on %s: Node back at %s after %s", to, version, h.Name(), to, time.Since(began).Round(time.Millisecond))
			}
			rollback(mislabeled, regexp.MustCompile(`^the new binary reports v1\.38\.2\+k3s1, not v1\.39\.0\+k3s1$`))

			// Binaries that die when run. systemd's restart of a
			// Type=notify unit fails at once. OpenRC's supervise-daemon
			// reports the service started while it respawns the binary,
			// so the gate waits until the health timeout: for a version
			// from the cut-short binary, for "k3s is up and running" in
			// the log from the one that reports its version.
			if h.Flavour() == k3stest.Systemd {
				rollback(truncated, regexp.MustCompile(`^restart: .*Job for k3s.service failed`))
				rollback(crashing, regexp.MustCompile(`^restart: .*Job for k3s.service failed`))
			} else {
				within := regexp.QuoteMeta("not healthy within " + healthTimeout.String() + ": ")
				rollback(truncated, regexp.MustCompile(`^`+within+`k3s version: .*killed by signal: segmentation fault$`))
				rollback(crashing, regexp.MustCompile(`^`+within+`k3s has not reported that it is up and running since the restart$`))
			}
			var want []string
			for _, v := range []string{to, badSum, mislabeled, truncated, crashing} {
				want = append(want, "/"+v+"/sha256sum-amd64.txt", "/"+v+"/k3s")
			}
			assert.Equal(t, want, rel.Requests(h.Addr()), "each upgrade fetched the checksums, then the binary")
		})
	}
}
