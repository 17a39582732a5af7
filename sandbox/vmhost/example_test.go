package vmhost_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/openctl/openctl/sandbox/vmhost"
)

// A host in a directory: a command line runs in it as sshd would run it.
func Example() {
	dir, err := os.MkdirTemp("", "vmhost-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	h, err := vmhost.New(dir, vmhost.Options{
		Hostname:  "cp-0",
		Init:      vmhost.InitSystemd,
		Addresses: []vmhost.Address{{Interface: "eth0", Prefix: netip.MustParsePrefix("10.0.0.11/24")}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	var out strings.Builder
	status, err := h.Run(context.Background(), `echo hello > /etc/motd
sha256sum /etc/motd | cut -d' ' -f1
uname -n -m
ip -o addr show to 10.0.0.11 | { read -r _ dev _ addr _ && echo "$dev $addr"; }
cat ../../etc/motd
k3s --version`, nil, &out, &out, nil, "root")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(out.String())
	fmt.Println("exit status", status)
	// Output:
	// 5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03
	// cp-0 x86_64
	// eth0 10.0.0.11/24
	// hello
	// sh: 6: k3s: not found
	// exit status 127
}

// A systemd host runs a unit's program as a service: systemctl start
// waits for a Type=notify program to report itself ready, and what the
// program prints goes to the journal next to systemd's own messages.
func Example_systemd() {
	dir, err := os.MkdirTemp("", "vmhost-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	demo := func(ctx context.Context, c *vmhost.Call) int {
		fmt.Fprintln(c.Stdout, "listening on", c.Args[1])
		c.NotifyReady()
		for {
			select {
			case <-ctx.Done():
				return 0
			case <-c.Reloads():
				fmt.Fprintln(c.Stdout, "reloaded")
			}
		}
	}
	h, err := vmhost.New(dir, vmhost.Options{
		Hostname: "cp-0",
		Init:     vmhost.InitSystemd,
		Programs: map[string]vmhost.Program{"/usr/local/bin/demo": demo},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	var out strings.Builder
	status, err := h.Run(context.Background(), `cat > /etc/systemd/system/demo.service <<'UNIT'
[Unit]
Description=Demo daemon

[Service]
Type=notify
ExecStart=/usr/local/bin/demo :8080
ExecReload=/bin/kill -HUP $MAINPID

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable --now demo 2>/dev/null
systemctl is-active demo
systemctl stop demo
systemctl is-active demo
journalctl -u demo -o cat`, nil, &out, &out, nil, "root")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(out.String())
	fmt.Println("exit status", status)
	// Output:
	// active
	// inactive
	// Starting demo.service - Demo daemon...
	// listening on :8080
	// Started demo.service - Demo daemon.
	// Stopping demo.service - Demo daemon...
	// demo.service: Deactivated successfully.
	// Stopped demo.service - Demo daemon.
	// exit status 0
}
