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
