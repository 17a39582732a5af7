package vmhost_test

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/openctl/openctl/sandbox/vmhost"
)

// A VIP taken and let go at run time: `ip -o addr show` lists it while
// the host has it, on its interface after the interface's own address.
func TestAddRemoveAddress(t *testing.T) {
	h, err := vmhost.New(t.TempDir(), vmhost.Options{Addresses: []vmhost.Address{
		{Interface: "eth0", Prefix: netip.MustParsePrefix("127.80.9.11/24")},
		{Interface: "eth1", Prefix: netip.MustParsePrefix("10.1.0.5/16")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	show := func(args string) string {
		var out, errOut strings.Builder
		st, err := h.Run(context.Background(), "ip -o addr show "+args, nil, &out, &errOut, nil, "")
		if err != nil || st != 0 {
			t.Fatalf("ip -o addr show %s: %d %v %s", args, st, err, errOut.String())
		}
		return out.String()
	}
	const tail = "\\       valid_lft forever preferred_lft forever\n"
	vip := netip.MustParsePrefix("127.80.9.254/32")
	if err := h.AddAddress(vmhost.Address{Interface: "eth0", Prefix: vip}); err != nil {
		t.Fatal(err)
	}
	if err := h.AddAddress(vmhost.Address{Interface: "eth0", Prefix: vip}); err == nil || !strings.Contains(err.Error(), "File exists") {
		t.Fatalf("second add: %v", err)
	}
	want := "1: lo    inet 127.0.0.1/8 scope host lo" + tail +
		"2: eth0    inet 127.80.9.11/24 scope host eth0" + tail +
		"2: eth0    inet 127.80.9.254/32 scope host eth0" + tail +
		"3: eth1    inet 10.1.0.5/16 brd 10.1.255.255 scope global eth1" + tail
	if got := show(""); got != want {
		t.Fatalf("after add:\n%s\nwant:\n%s", got, want)
	}
	if got := show("to 127.80.9.254"); got != "2: eth0    inet 127.80.9.254/32 scope host eth0"+tail {
		t.Fatalf("to VIP: %q", got)
	}
	if got := h.Addresses(); len(got) != 4 || got[2].Prefix != vip || got[2].Index != 2 {
		t.Fatalf("Addresses: %v", got)
	}
	if err := h.RemoveAddress("eth0", vip.Addr()); err != nil {
		t.Fatal(err)
	}
	if err := h.RemoveAddress("eth0", vip.Addr()); err == nil || !strings.Contains(err.Error(), "Cannot assign requested address") {
		t.Fatalf("second remove: %v", err)
	}
	if got := show("to 127.80.9.254"); got != "" {
		t.Fatalf("VIP still listed: %q", got)
	}
	// A new interface gets the next index.
	if err := h.AddAddress(vmhost.Address{Interface: "vip0", Prefix: vip}); err != nil {
		t.Fatal(err)
	}
	if got := show("dev vip0"); got != "4: vip0    inet 127.80.9.254/32 scope host vip0"+tail {
		t.Fatalf("dev vip0: %q", got)
	}
	if err := h.AddAddress(vmhost.Address{Prefix: vip}); err == nil {
		t.Fatal("an address without an interface was added")
	}
}

// Concurrent changes and listings are safe (run with -race).
func TestAddressesConcurrent(t *testing.T) {
	h, err := vmhost.New(t.TempDir(), vmhost.Options{Addresses: []vmhost.Address{{Interface: "eth0", Prefix: netip.MustParsePrefix("127.80.9.12/24")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			p := netip.PrefixFrom(netip.AddrFrom4([4]byte{127, 80, 9, byte(100 + i)}), 32)
			for range 20 {
				if err := h.AddAddress(vmhost.Address{Interface: "eth0", Prefix: p}); err != nil {
					t.Error(err)
				}
				if err := h.RemoveAddress("eth0", p.Addr()); err != nil {
					t.Error(err)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 20 {
				h.Run(context.Background(), "ip -o addr show", nil, nil, nil, nil, "")
			}
		}()
	}
	wg.Wait()
	if got := len(h.Addresses()); got != 2 {
		t.Fatalf("%d addresses left, want 2", got)
	}
}
