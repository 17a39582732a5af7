package k3slite_test

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/openctl/openctl/sandbox/k3slite"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// A sandbox host with the k3s program, a binary of one version, and a
// server run as an init system would run its unit (here: until ready,
// then stopped).
func Example() {
	n := k3slite.NewNetwork(k3slite.NetworkOptions{})
	defer n.Close()
	dir, _ := os.MkdirTemp("", "k3slite-example")
	defer os.RemoveAll(dir)
	h, err := vmhost.New(dir, vmhost.Options{
		Hostname:  "cp-0",
		Init:      vmhost.InitSystemd,
		Addresses: []vmhost.Address{{Interface: "eth0", Prefix: netip.MustParsePrefix("127.80.250.10/16")}},
		Programs:  map[string]vmhost.Program{k3slite.ProgramPath: n.Program()},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	ctx := context.Background()
	// What the provider uploads.
	h.Run(ctx, "cat > /usr/local/bin/k3s && chmod 755 /usr/local/bin/k3s", bytes.NewReader(k3slite.Binary("v1.37.2+k3s1")), nil, nil, nil, "root")
	var out bytes.Buffer
	h.Run(ctx, "k3s --version | head -n1 | cut -d' ' -f1-3", nil, &out, nil, nil, "root")
	fmt.Print(out.String())

	// The service's main process: `k3s server` until its context ends.
	sctx, stop := context.WithCancel(ctx)
	ready := make(chan struct{})
	done := make(chan int)
	call := (&vmhost.Call{
		Args:   []string{"/usr/local/bin/k3s", "server", "--cluster-init"},
		Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{},
		Env:  []string{"PATH=/usr/local/bin:/usr/bin:/bin", "K3S_TOKEN=secret"},
		Host: h, User: "root", Dir: "/",
	}).WithService(&vmhost.ServiceHooks{Ready: func() { close(ready) }})
	go func() { done <- n.Program()(sctx, call) }()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		fmt.Println("not ready")
	}
	out.Reset()
	h.Run(ctx, "k3s kubectl get node cp-0 -o jsonpath='{.status.nodeInfo.kubeletVersion}'; echo; cut -d: -f3- /var/lib/rancher/k3s/server/token", nil, &out, &out, nil, "root")
	fmt.Print(strings.TrimSpace(out.String()) + "\n")
	stop()
	fmt.Println("exit status", <-done)
	// Output:
	// k3s version v1.37.2+k3s1
	// v1.37.2+k3s1
	// server:secret
	// exit status 0
}
