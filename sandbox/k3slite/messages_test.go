package k3slite_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The messages the provider, its tests and operators see are the
// stand-in's, word for word: each of these is in both sources, or in the
// core they share (internal/k3semu).
func TestMessagesMatchStandin(t *testing.T) {
	read := func(dir string) string {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %v", dir, err)
		}
		var b strings.Builder
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(data)
		}
		return b.String()
	}
	core := read("../../internal/k3semu")
	mine, standin := read(".")+core, read("../../k3s/k3stest/standin")+core
	for _, msg := range []string{
		`"Starting k3s %s (%s)"`,
		`"Starting k3s agent %s (%s)"`,
		`"Kube API server is now running"`,
		`"ETCD server is now running"`,
		`"k3s is up and running"`,
		`"k3s agent is up and running"`,
		`"Shutting down k3s"`,
		`"Managed etcd cluster bootstrap already complete and initialized"`,
		`"Cluster bootstrap data written from "`,
		`"Waiting for the etcd learner to be promoted to a voting member"`,
		`"Wrote kubeconfig "`,
		`"starting kubernetes: preparing server: failed to validate token: %w"`,
		`"starting kubernetes: preparing server: %w"`,
		`"token CA hash does not match the Cluster CA certificate hash: %s != %s"`,
		`"token is not valid: %w"`,
		`"Waiting to retrieve agent configuration; server is not ready: "`,
		`"Failed to authenticate request from %s: invalid username/password combination"`,
		`"Node password rejected, duplicate hostname or contents of '/etc/rancher/node/password' may not match server node-passwd entry, try enabling a unique node name with the --with-node-id flag"`,
		`"Node password validation failed for '%s'"`,
		`"Failed to join etcd cluster due to duplicate node names, please use unique node name for the server"`,
		`"etcd member stopped: it was removed from the etcd cluster; delete "`,
		`"failed to bootstrap cluster data: failed to validate server configuration: critical configuration value mismatch between servers"`,
		`"critical configuration mismatched: "`,
		`"bootstrap data already found and encrypted with different token"`,
		`"failed to bootstrap cluster data: failed to reconcile with local datastore: %w"`,
		`"failed to normalize server token; must be in format K10<CA-HASH>::<USERNAME>:<PASSWORD> or <PASSWORD>"`,
		`"Cluster CA certificate is not trusted by the host CA bundle, but the token does not include a CA hash. Use the full token from the server's node-token file to enable Cluster CA validation."`,
		`"Adding member "`,
		`"Promoted etcd learner "`,
		`"Removed etcd member "`,
		`"Deleted node password secret of removed node "`,
		`"Updated load balancer k3s-agent-load-balancer server addresses -> %v"`,
		`"Load balancer k3s-agent-load-balancer now uses server "`,
		`"kube-vip: this node is the leader, adding %s to %s"`,
		`"kube-vip: added %s to %s"`,
		`"kube-vip: removing %s from %s: %s"`,
		`"kube-vip: node "`,
		`"Recorded manifest "`,
		`"Token rotated, restart k3s nodes with new token"`,
		`"a token with id %q already exists"`,
		`"bootstrap token %q deleted\n"`,
		`"Successfully backed up certificates for all services to path %s, please restart k3s server or agent to rotate certificates"`,
		`"Unknown flag --%s found in config.yaml, skipping"`,
		`"standin: agent: config file %s: flag provided but not defined: -%s"`,
		`"--token is required when joining a cluster with --server"`,
		`"standin: --server %q: only https:// URLs are supported"`,
		`"flag not implemented by the k3s stand-in; ignored"`,
	} {
		if !strings.Contains(standin, msg) {
			t.Errorf("the stand-in no longer says %s", msg)
		}
		if !strings.Contains(mine, msg) {
			t.Errorf("k3slite does not say %s", msg)
		}
	}
}
