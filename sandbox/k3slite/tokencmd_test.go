package k3slite_test

import (
	"regexp"
	"strings"
	"testing"
)

// k3s token create/list/delete/rotate and k3s certificate rotate, as the
// stand-in does them.
func TestTokenAndCertificateCommands(t *testing.T) {
	n := newNetwork(t)
	s0 := newHost(t, n, "t0", "127.80.206.10", "v1.37.2+k3s1")
	p0 := start(t, n, s0, []string{"K3S_TOKEN=pw"}, "server", "--cluster-init")
	p0.waitReady(t)
	token := strings.TrimSpace(run(t, s0, "cat /var/lib/rancher/k3s/server/token", nil))
	hash := strings.Split(token, "::")[0]

	out := run(t, s0, "k3s token create abcdef.0123456789abcdef --ttl 1h --description test", nil)
	if out != hash+"::abcdef.0123456789abcdef\n" {
		t.Fatalf("token create: %q", out)
	}
	if _, errOut, st := sh(s0, "k3s token create abcdef.0123456789abcdef", nil); st != 1 || !strings.Contains(errOut, `level=fatal msg="a token with id \"abcdef\" already exists"`) {
		t.Fatalf("duplicate: %d %q", st, errOut)
	}
	if out := run(t, s0, "k3s token list", nil); !regexp.MustCompile(`(?m)^TOKEN\s+TTL\s+EXPIRES\s+USAGES\s+DESCRIPTION\s+EXTRA GROUPS\nabcdef\s+\S+\s+\S+\s+authentication,signing\s+test\s+system:bootstrappers:k3s:default-node-token\n$`).MatchString(out) {
		t.Fatalf("token list:\n%s", out)
	}
	// An agent joins with the bootstrap token.
	a0 := newHost(t, n, "ta", "127.80.206.20", "v1.37.2+k3s1")
	pa := start(t, n, a0, []string{"K3S_TOKEN=" + hash + "::abcdef.0123456789abcdef", "K3S_URL=https://127.80.206.10:6443"}, "agent")
	pa.waitReady(t)
	if out := run(t, s0, "k3s token delete abcdef", nil); out != "bootstrap token \"abcdef\" deleted\n" {
		t.Fatalf("token delete: %q", out)
	}
	if out := run(t, s0, "k3s token generate", nil); !regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}\n$`).MatchString(out) {
		t.Fatalf("token generate: %q", out)
	}
	// Rotation: the new token is the cluster's; the old one is refused.
	out = run(t, s0, "k3s token rotate --new-token newpw", nil)
	if !strings.HasSuffix(out, "Token rotated, restart k3s nodes with new token\n") {
		t.Fatalf("token rotate: %q", out)
	}
	if got := strings.TrimSpace(run(t, s0, "cat /var/lib/rancher/k3s/server/token", nil)); got != hash+"::server:newpw" {
		t.Fatalf("token after rotate: %q", got)
	}
	s1 := newHost(t, n, "t1", "127.80.206.11", "v1.37.2+k3s1")
	p1 := start(t, n, s1, []string{"K3S_TOKEN=" + token}, "server", "--server", "https://127.80.206.10:6443")
	if st := p1.wait(t); st != 1 || !strings.Contains(p1.log.String(), "server-bootstrap: 401 Unauthorized") {
		t.Fatalf("old token: %d\n%s", st, p1.log.String())
	}
	p1 = start(t, n, s1, []string{"K3S_TOKEN=" + hash + "::server:newpw"}, "server", "--server", "https://127.80.206.10:6443")
	p1.waitReady(t)

	// A bootstrap token is no server token.
	s2 := newHost(t, n, "t2", "127.80.206.12", "v1.37.2+k3s1")
	p2 := start(t, n, s2, nil, "server", "--token", "abcdef.0123456789abcdef")
	if st := p2.wait(t); st != 1 || !strings.Contains(p2.log.String(), `level=fatal msg="starting kubernetes: preparing server: failed to normalize server token; must be in format K10<CA-HASH>::<USERNAME>:<PASSWORD> or <PASSWORD>"`) {
		t.Fatalf("bootstrap token as server token: %d\n%s", st, p2.log.String())
	}

	// certificate rotate while stopped: a backup and a new admin certificate.
	before := run(t, s0, "cat /var/lib/rancher/k3s/server/tls/client-admin.crt", nil)
	p0.stop()
	_, errOut, st := sh(s0, "k3s certificate rotate --service admin", nil)
	if st != 0 || !strings.Contains(errOut, "Rotating certificates for admin service") || !strings.Contains(errOut, "Successfully backed up certificates for all services to path /var/lib/rancher/k3s/server/tls-") {
		t.Fatalf("certificate rotate: %d\n%s", st, errOut)
	}
	if _, _, st := sh(s0, "test -e /var/lib/rancher/k3s/server/tls/client-admin.crt", nil); st == 0 {
		t.Fatal("client-admin.crt kept")
	}
	p0 = start(t, n, s0, []string{"K3S_TOKEN=" + hash + "::server:newpw"}, "server")
	p0.waitReady(t)
	if after := run(t, s0, "cat /var/lib/rancher/k3s/server/tls/client-admin.crt", nil); after == before {
		t.Fatal("admin certificate not reissued")
	}
	if _, errOut, st := sh(s0, "k3s certificate rotate --service nope", nil); st != 1 || !strings.Contains(errOut, "Service nope is not recognized") {
		t.Fatalf("unknown service: %d %q", st, errOut)
	}
}
